"""Cells run as IPython runs them: the grader's transform (magics.py) and the sandbox's shell (shell.py) compared
with IPython's own shell on the same cells; shell commands and input() are noted, never run."""

from __future__ import annotations

import builtins

import pytest
from IPython.core.interactiveshell import InteractiveShell

from qkv.grading.analysis import analyse
from qkv.grading.events import Note
from qkv.grading.magics import python_source
from qkv.grading.shell import NoInput, Shell

# Each: cells run in order; the names they leave behind must equal IPython's.
NOTEBOOKS = {
    "%%time around a definition": ["%%time\ndef f(x):\n    return 2 * x\n", "y = f(21)\n"],
    "%%time after blank lines, with a line magic inside": ["\n\n%%time\n%precision 3\nz = [1, 2]\n"],
    "%time with a value": ["def g():\n    return 5\n", "a = %time g()\n", "%time b = g() + 1\n"],
    "%timeit leaves no names": ["%timeit c = 3\n", "%%timeit -n 2 -r 1 d = 1\ne = d + 1\n", "f = 0\n"],
    "%%capture": ["%%capture out\nh = 7\nprint(h)\n"],
    "nested cell magics": ["%%time\n%%capture\ndef k():\n    return 1\n"],
    "set-up magics": ["%load_ext autoreload\n%autoreload 2\n%config InlineBackend.figure_format = 'svg'\nm = 1\n"],
}


def _ipython(cells: list[str]) -> dict:
    shell = InteractiveShell.instance()
    shell.reset()
    for cell in cells:
        result = shell.run_cell(cell, silent=True)
        assert result.success, result.error_in_exec or result.error_before_exec
    return {k: v for k, v in shell.user_ns.items() if not k.startswith("_") and k not in shell.user_ns_hidden}


def _ours(cells: list[str], notes: list | None = None) -> dict:
    ns: dict = {"__name__": "__main__", "__builtins__": builtins}
    shell = ns["get_ipython"] = Shell(ns, (notes if notes is not None else []).append)
    ns["input"] = shell.input
    for i, cell in enumerate(cells):
        shell.cell = i
        exec(compile(python_source(cell), f"<cell {i + 1}>", "exec"), ns)
    return {k: v for k, v in ns.items() if not k.startswith("_") and k not in ("get_ipython", "input")}


def _comparable(ns: dict) -> dict:
    return {k: (v if isinstance(v, (int, float, str, list)) else callable(v)) for k, v in ns.items()}


@pytest.mark.parametrize("name", sorted(NOTEBOOKS))
def test_cells_leave_the_names_ipython_leaves(name):
    cells = NOTEBOOKS[name]
    want, got = _comparable(_ipython(cells)), _comparable(_ours(cells))
    want.pop("out", None), got.pop("out", None)  # %%capture's result object: compared below
    assert got == want


def test_capture_binds_its_variable_and_functions_under_magics_are_defined():
    ns = _ours(["%%capture out\nprint(1)\n", "text = out.stdout\n", "%%time\ndef scaling_experiment():\n    pass\n"])
    assert ns["text"] == "" and callable(ns["scaling_experiment"])
    found = analyse(["%%time\ndef scaling_experiment(d):\n    return d\n"], "scaling_experiment", (), set())
    assert not found.missing


def test_shell_commands_and_input_are_noted_not_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    notes: list[Note] = []
    cells = [
        "!pip install torch\nlisting = !ls\n%pip install numpy\n",
        "%%bash\ntouch made_by_bash\n",
        "%%writefile helper.py\nVALUE = 3\n",
    ]
    ns = _ours(cells, notes)
    assert ns["listing"] == []
    assert not (tmp_path / "made_by_bash").exists() and (tmp_path / "helper.py").read_text() == "VALUE = 3\n"
    assert [(n.i, n.kind, n.text) for n in notes] == [
        (0, "shell", "!pip install torch"),
        (0, "shell", "!ls"),
        (0, "shell", "%pip install numpy"),
        (1, "shell", "%%bash"),
    ]
    with pytest.raises(NoInput):
        _ours(["name = input('Your name: ')\n"], notes)
    assert notes[-1] == Note(i=0, kind="input", text="Your name: ")
    assert issubclass(NoInput, EOFError)  # what input() raises at the end of a file
