"""Notebook hygiene: committed stripped, labs regenerated identically, tagged cells raise exactly where they should.

nbval (run by `make test` with --nbval-lax) executes the blank labs, tests/ways_in/ the chapters and solutions (in a
Colab-like venv); these tests check what running them cannot.
"""

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

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


def _cell_errors(path: Path) -> dict[str, bool]:
    """Execute a notebook with errors allowed; map each `raises-exception` cell's id to whether it raised."""
    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb, timeout=60, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    return {
        c.id: any(o.output_type == "error" for o in c.outputs)
        for c in nb.cells
        if c.cell_type == "code" and "raises-exception" in c.metadata.get("tags", [])
    }


@pytest.mark.parametrize("lab", LABS)
def test_tagged_cells_raise_in_the_blank_lab_and_not_in_the_solution(lab):
    blank = _cell_errors(ROOT / "labs" / lab / f"{lab}.ipynb")
    solved = _cell_errors(ROOT / "solutions" / lab / f"{lab}.ipynb")
    assert blank, f"{lab}: no cell carries the raises-exception tag"
    assert blank.keys() == solved.keys()
    assert all(blank.values()), (
        f"{lab}: tagged cells that do not raise in the blank lab: {[i for i, e in blank.items() if not e]}"
    )
    assert not any(solved.values()), (
        f"{lab}: tagged cells that raise in the solution: {[i for i, e in solved.items() if e]}"
    )


def test_workspace_copy_never_overwrites(tmp_path):
    first = labs.copy_workspace(ROOT, tmp_path).copied
    assert first and all(p.exists() for p in first)
    mine = first[0]
    mine.write_text("my work")
    assert labs.copy_workspace(ROOT, tmp_path).copied == []
    assert mine.read_text() == "my work"
