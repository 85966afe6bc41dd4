"""Lean pages (issue 21): what a reader sees of a chapter's code stays short and is the teaching code.

For every chapter notebook of `_toc.yml`, in the book's order: at most 120 visible code lines, no visible code cell
over 25 lines, and no visible `glue(` call (numbers are glued in a hidden cell after the visible computation).
A code cell is visible unless its tags contain `remove-input`, `remove-cell` or `hide-input` (myst-nb); every line
of its source counts, blank lines included.
"""

import re
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
HIDDEN = {"remove-input", "remove-cell", "hide-input"}
MAX_PAGE_LINES, MAX_CELL_LINES = 120, 25
GLUE_CALL = re.compile(r"\bglue\s*\(")


def _chapters() -> list[str]:
    """The chapter notebooks of the table of contents, in its order (a chapter's sections, the labs, excluded)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    files = [entry["file"] for part in toc["parts"] for entry in part["chapters"]]
    return [f for f in files if (ROOT / f"{f}.ipynb").exists()]


CHAPTERS = _chapters()


def _visible_cells(page: str) -> list[tuple[int, list[str]]]:
    """(index, source lines) of each code cell a reader sees."""
    nb = nbformat.read(ROOT / f"{page}.ipynb", as_version=4)
    return [
        (i, cell.source.splitlines())
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and not HIDDEN & set(cell.metadata.get("tags", []))
    ]


def test_the_toc_lists_chapter_notebooks():
    assert "chapters/soft_lookup" in CHAPTERS and "chapters/multihead" in CHAPTERS, CHAPTERS
    assert not any(f.startswith("labs/") for f in CHAPTERS), CHAPTERS


@pytest.mark.parametrize("page", CHAPTERS)
def test_visible_code_fits_the_budget(page):
    cells = _visible_cells(page)
    total = sum(len(lines) for _, lines in cells)
    assert total <= MAX_PAGE_LINES, f"{page}: {total} visible code lines (at most {MAX_PAGE_LINES})"
    long = {i: len(lines) for i, lines in cells if len(lines) > MAX_CELL_LINES}
    assert not long, f"{page}: visible code cells over {MAX_CELL_LINES} lines (cell index: lines): {long}"


@pytest.mark.parametrize("page", CHAPTERS)
def test_no_visible_glue_call(page):
    glued = [i for i, lines in _visible_cells(page) if any(GLUE_CALL.search(line) for line in lines)]
    assert not glued, f"{page}: visible cells call glue() (cell indices {glued}); move the calls to a remove-cell cell"
