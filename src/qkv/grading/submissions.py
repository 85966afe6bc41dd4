"""The submissions: one notebook per student found in a folder, and what the grader reads of a notebook.

Layer: grader side, above ``lab`` and ``messages``; imports the standard library, ``lab`` and ``messages``. Nothing a submission contains is trusted:
its bytes are parsed as JSON only, its cells taken in order by type, its metadata used only to display an answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .lab import GradeError, Lab, cell_source
from .messages import (
    BOTH_FILE_AND_FOLDER,
    EMPTY_FILE,
    INVALID_JSON,
    NO_CELLS,
    NO_NOTEBOOK,
    NOT_A_FILE,
    SEVERAL_NOTEBOOKS,
    TOO_LARGE,
    Msg,
)

MAX_NOTEBOOK = 64 << 20  # bytes; larger files are "malformed" without being parsed


@dataclass
class Entry:
    student: str
    path: Path | None
    status: str | None = None  # set when it cannot be graded at all
    note: Msg | None = None


def _notebooks(folder: Path) -> list[Path]:
    found = []
    for p in sorted(folder.rglob("*.ipynb")):
        rel = p.relative_to(folder).parts
        if any(part.startswith(".") for part in rel) or not p.is_file():
            continue
        found.append(p)
    return found


def discover(root: Path, lab: str) -> list[Entry]:
    """One entry per student: ``<student>.ipynb`` or a folder ``<student>/`` (hidden names skipped)."""
    root = Path(root)
    if not root.is_dir():
        raise GradeError(f"submissions folder not found: {root}")
    files: dict[str, Path] = {}
    dirs: dict[str, Path] = {}
    for p in sorted(root.iterdir()):
        if p.name.startswith("."):
            continue
        if p.is_dir() and not p.is_symlink():
            dirs[p.name] = p
        elif p.suffix == ".ipynb":
            files[p.stem] = p
    entries = []
    for student in sorted(set(files) | set(dirs)):
        if student in files and student in dirs:
            entries.append(Entry(student, None, "duplicate", BOTH_FILE_AND_FOLDER(student=student)))
            continue
        if student in files:
            p = files[student]
            if p.is_symlink() or not p.is_file():
                entries.append(Entry(student, None, "malformed", NOT_A_FILE()))
            else:
                entries.append(Entry(student, p))
            continue
        nbs = _notebooks(dirs[student])
        named = [p for p in nbs if p.name == f"{lab}.ipynb"]
        if len(nbs) == 1:
            entries.append(Entry(student, nbs[0]))
        elif len(named) == 1:
            entries.append(Entry(student, named[0]))
        elif not nbs:
            entries.append(Entry(student, None, "malformed", NO_NOTEBOOK()))
        else:
            entries.append(Entry(student, None, "ambiguous", SEVERAL_NOTEBOOKS(count=len(nbs), lab=lab)))
    return entries


def parse_notebook(data: bytes) -> list[dict]:
    """The cells of a notebook as ``{"type", "source"}``; raises ValueError for anything that is not one (its
    argument: the message that says why)."""
    if not data.strip():
        raise ValueError(EMPTY_FILE())
    if len(data) > MAX_NOTEBOOK:
        raise ValueError(TOO_LARGE(mb=len(data) >> 20))
    try:
        nb = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        raise ValueError(INVALID_JSON(error=str(err)[:120])) from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise ValueError(NO_CELLS())
    cells = []
    for cell in nb["cells"]:
        if isinstance(cell, dict) and cell.get("cell_type") in ("code", "markdown", "raw"):
            cells.append({"type": cell["cell_type"], "source": cell_source(cell), "meta": cell.get("metadata")})
    return cells


def written_answer(cells: list[dict], lab: Lab, grade_id: str) -> str | None:
    """The student's answer to a written question: the markdown after the question's own text."""
    prompt = " ".join(lab.prompts.get(grade_id, "").split())
    for n, cell in enumerate(cells):
        if prompt and cell["type"] == "markdown" and " ".join(cell["source"].split()) == prompt:
            parts = []
            for nxt in cells[n + 1 :]:
                if nxt["type"] != "markdown" or nxt["source"].strip() in lab.locked:
                    break
                parts.append(nxt["source"])
            return "\n\n".join(parts)
    for cell in cells:  # metadata is used only to display an answer, never to score
        meta = cell.get("meta")
        nbg = meta.get("nbgrader") if isinstance(meta, dict) else None
        if isinstance(nbg, dict) and nbg.get("grade_id") == grade_id and cell["type"] == "markdown":
            return cell["source"]
    return None
