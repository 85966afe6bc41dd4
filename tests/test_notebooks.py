"""Notebook hygiene: committed stripped, labs regenerated identically, tagged cells raise exactly where they should.

nbval (run by `make test` with --nbval-lax) executes the blank labs, tests/ways_in/ the chapters and solutions (in a
Colab-like venv); these tests check what running them cannot.
"""

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from qkv import labs

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(
    map(
        Path,
        subprocess.run(
            ["git", "ls-files", "*.ipynb"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.split(),
    )
)
LABS = labs.lab_ids(ROOT)


def test_there_are_chapters_labs_and_solutions():
    tops = {p.parts[0] for p in NOTEBOOKS}
    assert {"chapters", "labs", "solutions"} <= tops, f"notebooks found only under {sorted(tops)}"
    assert LABS, "no lab under solutions/"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=str)
def test_committed_without_outputs_and_with_stable_ids(path):
    nb = nbformat.read(ROOT / path, as_version=4)
    nbformat.validate(nb)
    ids = [c.get("id") for c in nb.cells]
    assert all(ids), f"{path}: cells without an id"
    assert len(set(ids)) == len(ids), f"{path}: duplicated cell ids"
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert not dirty, f"{path}: cells {dirty} have outputs; run `make strip`"
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3", f"{path}: kernelspec must be python3"


def test_labs_are_exactly_what_nbgrader_generates():
    done = subprocess.run(
        [sys.executable, "-m", "qkv.cli", "labs", "--check", "--course", str(ROOT)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr + done.stdout


def _tagged(path: Path) -> list[str]:
    """The ids of the code cells tagged ``raises-exception``, in order."""
    nb = nbformat.read(path, as_version=4)
    return [c.id for c in nb.cells if c.cell_type == "code" and "raises-exception" in c.metadata.get("tags", [])]


@pytest.mark.parametrize("lab", LABS)
def test_the_blank_lab_and_the_solution_tag_the_same_cells_to_raise(lab):
    """Where they run, the tagged cells must raise in the blank lab (nbval, the root conftest.py) and must not in
    the solution (tests/ways_in/test_colab_labs.py); here: there are some, and the same in both."""
    blank = _tagged(ROOT / "labs" / lab / f"{lab}.ipynb")
    assert blank, f"{lab}: no cell carries the raises-exception tag"
    assert blank == _tagged(ROOT / "solutions" / lab / f"{lab}.ipynb")


def test_nbval_fails_a_blank_lab_cell_tagged_to_raise_that_raises_nothing(pytester):
    pytester.makeconftest((ROOT / "conftest.py").read_text())
    nb = nbformat.v4.new_notebook()
    for source in ("raise NotImplementedError()", "checked = 'nothing'"):
        nb.cells.append(nbformat.v4.new_code_cell(source, metadata={"tags": ["raises-exception"]}))
    (pytester.path / "labs" / "lab").mkdir(parents=True)
    nbformat.write(nb, pytester.path / "labs" / "lab" / "lab.ipynb")
    nbformat.write(nb, pytester.path / "elsewhere.ipynb")  # outside labs/: a tagged cell may raise or not
    result = pytester.runpytest("--nbval-lax", "--nbval-current-env", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*tagged raises-exception, yet it raised nothing in the blank lab*"])


def test_workspace_copy_never_overwrites(tmp_path):
    first = labs.copy_workspace(ROOT, tmp_path).copied
    assert first and all(p.exists() for p in first)
    mine = first[0]
    mine.write_text("my work")
    assert labs.copy_workspace(ROOT, tmp_path).copied == []
    assert mine.read_text() == "my work"
