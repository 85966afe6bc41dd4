"""The labs as a student meets them: JupyterLab 4 in Chromium, offline.

One JupyterLab server for the module, on 127.0.0.1 with a token (``--allow-root`` when the tests run as root),
started the way ``make lab`` starts it (the student configuration in ``student/jupyter``, the labs copied into a
fresh workspace with ``qkv workspace``) but with its own empty settings and runtime folders. It opens a blank
lab (``labs/<id>/<id>.ipynb``; by default the book's first lab with a slider, ``QKV_JUPYTERLAB_LABS=all`` for
every lab), waits for the kernel to be idle, runs all cells from the Run menu, and checks what the student sees:

- every cell tagged ``raises-exception`` shows a ``NotImplementedError``, and each unfinished function's name is
  in one of those tracebacks, so the student knows which exercise to do;
- no other cell shows an error or anything on stderr, and every code cell ran;
- where the lab has an ipywidgets slider: moving it with the keyboard changes the output.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from browser_support import REPO, SCREENSHOTS, watch
from lab_server import running_jupyterlab

pytestmark = pytest.mark.browser

SLIDER_SOURCE = re.compile(r"\b(?:Int|Float|FloatLog|IntRange|FloatRange|Selection)?Slider\(|\binteract(?:_manual)?\(")
RUN_TIMEOUT_S = 180  # all cells of one lab; each lab runs in at most 20 s on two cores


def lab_notebooks() -> list[Path]:
    """Every blank lab, in the order of _toc.yml (labs not in it last, sorted)."""
    labs = sorted(p for p in REPO.glob("labs/*/*.ipynb") if p.stem == p.parent.name)
    toc = (REPO / "_toc.yml").read_text(encoding="utf-8")
    position = {p: toc.find(f"labs/{p.stem}/{p.stem}") for p in labs}
    return sorted(labs, key=lambda p: (position[p] < 0, position[p], p.stem))


def labs_to_open(labs: list[Path]) -> list[Path]:
    """The labs opened in JupyterLab. Each costs a kernel start and a full run (20 to 50 s on two busy cores),
    so by default one: the first lab of the book that has a slider (every lab's stubs are also checked without
    a browser by the labs' own tests). QKV_JUPYTERLAB_LABS=all opens every lab; a comma-separated list of ids
    opens those."""
    choice = os.environ.get("QKV_JUPYTERLAB_LABS", "").strip()
    if choice == "all":
        return labs
    if choice:
        wanted = [c.strip() for c in choice.split(",") if c.strip()]
        unknown = sorted(set(wanted) - {p.stem for p in labs})
        if unknown:
            raise ValueError(f"QKV_JUPYTERLAB_LABS names labs that do not exist: {unknown}")
        return [p for p in labs if p.stem in wanted]
    with_slider = [p for p in labs if has_slider(p)]
    return (with_slider or labs)[:1]


def load_cells(path: Path) -> list[dict]:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    cells = []
    for cell in notebook["cells"]:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        cells.append(
            {
                "type": cell["cell_type"],
                "source": source,
                "tags": list(cell.get("metadata", {}).get("tags", [])),
                "solution": bool(cell.get("metadata", {}).get("nbgrader", {}).get("solution", False)),
            }
        )
    return cells


def has_slider(path: Path) -> bool:
    return any(c["type"] == "code" and SLIDER_SOURCE.search(c["source"]) for c in load_cells(path))


ALL_LABS = lab_notebooks()
LABS = labs_to_open(ALL_LABS)


def _write_settings(settings: Path) -> None:
    """Student-neutral JupyterLab settings: every cell kept in the page, no news pop-up, no update check."""
    files = {
        "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
        "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
            "fetchNews": "false",
            "checkForUpdates": False,
        },
    }
    for name, content in files.items():
        path = settings / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(content), encoding="utf-8")


@pytest.fixture(scope="module")
def jupyterlab(tmp_path_factory):
    """A JupyterLab 4 server on 127.0.0.1 over a fresh copy of the labs; yields (base URL, token)."""
    if not ALL_LABS:
        pytest.fail("no lab in labs/<id>/<id>.ipynb: generate them with `qkv labs`", pytrace=False)
    tmp = tmp_path_factory.mktemp("jupyterlab")
    work = tmp / "work"
    subprocess.run(
        [sys.executable, "-m", "qkv.cli", "workspace", str(work)], cwd=REPO, check=True, capture_output=True, text=True
    )
    settings = tmp / "settings"
    _write_settings(settings)
    env = dict(os.environ)
    env.update(
        {
            "JUPYTER_CONFIG_DIR": str(tmp / "config"),
            "JUPYTER_CONFIG_PATH": str(REPO / "student" / "jupyter"),
            "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
            "JUPYTERLAB_SETTINGS_DIR": str(settings),
            "JUPYTERLAB_WORKSPACES_DIR": str(tmp / "workspaces"),
            "IPYTHONDIR": str(tmp / "ipython"),
            "PYTHONUNBUFFERED": "1",
        }
    )
    try:
        with running_jupyterlab(work, env, tmp / "jupyterlab.log") as (base, token):
            yield base, token, work
    finally:
        shutil.rmtree(tmp / "runtime", ignore_errors=True)


# The state of every cell in the open notebook, in order.
CELLS_JS = r"""
() => Array.from(document.querySelectorAll(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell")).map((cell) => {
  const prompt = cell.querySelector(".jp-InputPrompt");
  const errors = Array.from(cell.querySelectorAll('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'));
  return {
    code: cell.classList.contains("jp-CodeCell"),
    prompt: prompt ? prompt.textContent.trim() : "",
    stderr: errors.map((e) => e.innerText),
    sliders: cell.querySelectorAll(".widget-slider").length,
  };
})
"""

# What the first interactive output shows: its text and its images.
OUTPUT_JS = r"""
(index) => {
  const cell = document.querySelectorAll(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell")[index];
  const out = cell.querySelector(".widget-output") || cell.querySelector(".jp-OutputArea");
  const readouts = Array.from(cell.querySelectorAll(".widget-readout")).map((r) => r.textContent || r.value);
  return {
    text: out ? out.innerText : "",
    images: out ? Array.from(out.querySelectorAll("img")).map((i) => i.src.slice(-200)) : [],
    readouts: readouts,
  };
}
"""


def kernel_state(base: str, token: str, path: str) -> tuple[str | None, int]:
    """(execution_state, connections) of the kernel of the session that has `path` open, from the server."""
    with urllib.request.urlopen(f"{base}api/sessions?token={token}", timeout=10) as response:
        sessions = json.loads(response.read())
    for session in sessions:
        if session.get("path") == path and session.get("kernel"):
            kernel = session["kernel"]
            return kernel.get("execution_state"), int(kernel.get("connections", 0))
    return None, 0


def shut_down_sessions(base: str, token: str) -> None:
    """Stop every kernel the lab started, so the next lab has the CPU to itself."""
    with urllib.request.urlopen(f"{base}api/sessions?token={token}", timeout=10) as response:
        sessions = json.loads(response.read())
    for session in sessions:
        request = urllib.request.Request(f"{base}api/sessions/{session['id']}?token={token}", method="DELETE")
        urllib.request.urlopen(request, timeout=30).close()


def wait_for_kernel_idle(page, base: str, token: str, path: str, timeout_s: float = 120) -> None:
    """Both sides agree the kernel is ready: the server's session is idle with a live connection, and the
    notebook's execution indicator says idle (the page's own view, which is what Run All waits on)."""
    deadline = time.monotonic() + timeout_s
    state = None
    while time.monotonic() < deadline:
        state, connections = kernel_state(base, token, path)
        if state == "idle" and connections > 0:
            break
        page.wait_for_timeout(250)  # not time.sleep: Playwright's router only runs inside its calls
    else:
        raise AssertionError(f"the kernel of {path} never became idle (last state {state!r})")
    page.wait_for_function(
        """() => {
             const indicator = document.querySelector(
               ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator");
             return indicator && indicator.getAttribute("data-status") === "idle";
           }""",
        timeout=max(1.0, deadline - time.monotonic()) * 1000,
    )


def run_all(page) -> None:
    page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Run$")).click()
    page.locator('.lm-Menu-item[data-command="runmenu:run-all"]').click()


def wait_until_all_ran(page, n_code: int, timeout_s: float, idle) -> list[dict]:
    deadline = time.monotonic() + timeout_s
    cells = page.evaluate(CELLS_JS)
    while time.monotonic() < deadline:
        cells = page.evaluate(CELLS_JS)
        prompts = [c["prompt"] for c in cells if c["code"]]
        if len(prompts) == n_code and all(re.fullmatch(r"\[\d+\]:", p) for p in prompts):
            idle()
            return page.evaluate(CELLS_JS)
        page.wait_for_timeout(500)  # not time.sleep: Playwright's router only runs inside its calls
    return cells


def final_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def test_some_lab_has_a_slider():
    """The slider check below needs at least one lab with an ipywidgets slider."""
    assert any(has_slider(p) for p in ALL_LABS), f"no lab has an ipywidgets slider: {[p.name for p in ALL_LABS]}"


@pytest.mark.parametrize("notebook", LABS, ids=[p.stem for p in LABS])
def test_blank_lab_in_jupyterlab(notebook, jupyterlab, browser_context):
    base, token, work = jupyterlab
    lab = notebook.stem
    cells = load_cells(work / "labs" / lab / f"{lab}.ipynb")  # the course's shape
    code_cells = [c for c in cells if c["type"] == "code"]
    page = browser_context.new_page()
    traffic = watch(page)
    problems: list[str] = []
    try:
        # ?reset: a fresh workspace, so the labs opened by earlier tests are not opened again
        page.goto(f"{base}lab/tree/labs/{lab}/{lab}.ipynb?reset&token={token}", wait_until="load", timeout=120_000)
        page.wait_for_selector(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell", timeout=90_000)
        path = f"labs/{lab}/{lab}.ipynb"

        def idle():
            wait_for_kernel_idle(page, base, token, path)

        idle()
        run_all(page)
        shown = wait_until_all_ran(page, len(code_cells), RUN_TIMEOUT_S, idle)
        assert len(shown) == len(cells), f"JupyterLab shows {len(shown)} cells, the notebook has {len(cells)}"

        tracebacks = []
        for index, (cell, view) in enumerate(zip(cells, shown)):
            if cell["type"] != "code":
                continue
            where = (
                f"cell {index} ({cell['source'].strip().splitlines()[0][:60] if cell['source'].strip() else 'empty'})"
            )
            if not re.fullmatch(r"\[\d+\]:", view["prompt"]):
                problems.append(f"{where} never ran (prompt {view['prompt']!r})")
            if "raises-exception" in cell["tags"]:
                last = final_line("\n".join(view["stderr"]))
                if not last.startswith("NotImplementedError"):
                    problems.append(
                        f"{where} is tagged raises-exception but shows {last or 'no error'!r}, "
                        "not a NotImplementedError"
                    )
                tracebacks.append("\n".join(view["stderr"]))
            elif view["stderr"]:
                problems.append(f"{where} shows an error or stderr: {final_line(view['stderr'][-1])!r}")
        for index, cell in enumerate(cells):
            if cell["type"] == "code" and cell["solution"] and "NotImplementedError" in cell["source"]:
                names = re.findall(r"^\s*def\s+(\w+)", cell["source"], flags=re.M)
                if names and not any(name in tb for name in names for tb in tracebacks):
                    problems.append(
                        f"unfinished exercise in cell {index} ({', '.join(names)}) is in no "
                        "NotImplementedError traceback: the student cannot see which exercise to do"
                    )

        if has_slider(notebook):
            slider_cells = [i for i, view in enumerate(shown) if view["sliders"]]
            if not slider_cells:
                problems.append("the lab creates a slider but JupyterLab shows no rendered slider")
            else:
                index = slider_cells[0]
                before = page.evaluate(OUTPUT_JS, index)
                handle = (
                    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell")
                    .nth(index)
                    .locator(".widget-slider .noUi-handle")
                    .first
                )
                handle.scroll_into_view_if_needed()
                handle.focus()
                # Move away from the end the slider starts at (a slider may start at its maximum).
                now, top = (float(handle.get_attribute(a) or 0) for a in ("aria-valuenow", "aria-valuemax"))
                key = "ArrowLeft" if now >= top else "ArrowRight"
                for _ in range(3):
                    page.keyboard.press(key)
                    page.wait_for_timeout(100)
                after = before
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    after = page.evaluate(OUTPUT_JS, index)
                    if after["text"] != before["text"] or after["images"] != before["images"]:
                        break
                    page.wait_for_timeout(250)  # not time.sleep: Playwright's router only runs inside its calls
                if after["readouts"] == before["readouts"]:
                    problems.append(f"the slider in cell {index} did not move with the keyboard ({before['readouts']})")
                if after["text"] == before["text"] and after["images"] == before["images"]:
                    problems.append(f"moving the slider in cell {index} did not change its output")
                else:
                    idle()
                    for view in page.evaluate(CELLS_JS)[index : index + 1]:
                        if view["stderr"]:
                            problems.append(f"moving the slider made an error: {final_line(view['stderr'][-1])!r}")
        shot = SCREENSHOTS / "jupyterlab" / f"{lab}.png"
        shot.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shot))
    finally:
        page.close()
        shut_down_sessions(base, token)
    problems += [p for p in traffic.problems() if not p.startswith("console error")]
    assert not problems, f"{lab} in JupyterLab:\n  " + "\n  ".join(problems)
