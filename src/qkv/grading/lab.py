"""The lab being graded: its spec, checked against the solution notebook, and the cells it released to students.

What the grader reads from a course (the solution's grade ids, points, written questions and locked cells; the
released lab's cells) is its *record*. It comes from the course's ``solutions/`` where the course has the lab; else
from the record shipped in the package (``specs/<lab>.json``, written by ``qkv labs`` and checked by ``qkv labs
--check``), so that ``qkv check`` works wherever students are (a wheel, Colab, Binder, the hub) without the solution
notebooks, which are never shipped.

Layer: grader side, above ``spec``; imports the standard library, ``spec`` and ``qkv.labs`` (which labs a course has).
The solution's nbgrader metadata is trusted (it is ours); a submission's never is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from qkv.labs import EDITIONS, lab_ids

from .spec import LabSpec, load_spec


class GradeError(Exception):
    """An instructor's mistake (unknown lab, missing folder): the message says what to do."""


@dataclass
class Lab:
    lab: str
    spec: LabSpec
    order: list[str]  # grade_ids in notebook order
    prompts: dict[str, str]  # manual grade_id -> the question's markdown (the cell before the answer)
    locked: set[str]  # sources of the lab's locked Markdown cells (to find where a written answer ends)
    course: Path | None  # the course folder the record came from; None: the record shipped in the package
    released: set[str]  # sources (stripped) of the released lab's cells: what a student did not write
    others: dict[str, set[str]]  # the other labs' released cells (to recognise a notebook of another lab)
    ids: frozenset[str] = frozenset()  # the grade_ids of the solution's nbgrader cells


def cell_source(cell: dict) -> str:
    """A notebook cell's source as one string ("" when it is neither a string nor a list of them)."""
    src = cell.get("source", "")
    if isinstance(src, list):
        src = "".join(s for s in src if isinstance(s, str))
    return src if isinstance(src, str) else ""


RECORDS = Path(__file__).parent / "specs"  # <lab>.json: the records shipped with the package


def lab_record(course: Path, lab: str) -> dict | None:
    """What the grader reads from ``course`` about ``lab`` (None when the course has no solution of it): grade ids
    in notebook order, their points, the written questions, the locked Markdown cells and the released lab's cells."""
    solution = Path(course) / "solutions" / lab / f"{lab}.ipynb"
    if not solution.is_file():
        return None
    nb = json.loads(solution.read_text(encoding="utf-8"))
    order, locked, points, ids = [], {}, {}, set()
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade_id"):
            ids.add(meta["grade_id"])
        if meta.get("grade"):
            order.append(meta["grade_id"])
            points[meta["grade_id"]] = float(meta.get("points", 0))
        if meta.get("locked"):
            locked[cell_source(cell).strip()] = cell.get("cell_type")
    # the released lab's cells; without a release, the locked ones (the record keeps no hidden test where there is)
    released = _released_cells(Path(course), lab) or set(locked)
    return {
        "lab": lab,
        "order": order,
        "ids": sorted(ids),  # every nbgrader cell's grade_id (a locked cell of any release is known by it)
        "points": points,
        "prompts": questions(nb),
        "locked": sorted(src for src, kind in locked.items() if kind == "markdown"),  # code: hidden tests
        "released": sorted(released),
    }


def packaged_record(lab: str) -> dict | None:
    """The record of ``lab`` shipped in the package (None when there is none)."""
    path = RECORDS / f"{lab}.json"
    return json.loads(path.read_text(encoding="utf-8")) if lab.isidentifier() and path.is_file() else None


def record_text(record: dict) -> str:
    """A record as ``specs/<lab>.json`` holds it (stable bytes: ``qkv labs --check`` compares them)."""
    return json.dumps(record, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


def records(course: Path) -> dict[Path, str]:
    """The records to ship, where ``course`` is qkv's own source tree (``src/qkv/``; else none): path -> text.
    ``qkv labs`` writes them and ``qkv labs --check`` compares them."""
    specs = Path(course) / "src" / "qkv" / "grading" / "specs"
    if not specs.is_dir():
        return {}
    found = {lab: lab_record(course, lab) for lab in lab_ids(course)}  # lab_ids: the labs with a solution
    return {specs / f"{lab}.json": record_text(record) for lab, record in found.items() if record is not None}


def load_lab(lab: str, course: Path) -> Lab:
    """The lab's spec, checked against its record: the course's solution notebook's nbgrader metadata (trusted: it
    is ours) where the course has it, else the record shipped in the package."""
    course = Path(course)
    record = lab_record(course, lab)
    home: Path | None = course
    if record is None:
        record, home = packaged_record(lab), None
    if record is None:
        known = sorted(set(lab_ids(course)) | {p.stem for p in RECORDS.glob("*.json")})
        raise GradeError(
            f"unknown lab {lab!r}: no {course / 'solutions' / lab / f'{lab}.ipynb'} and no such lab in qkv "
            f"(labs: {', '.join(known) or 'none'}; --course sets the course folder)"
        )
    try:
        spec = load_spec(lab)
    except LookupError as err:
        raise GradeError(str(err)) from None
    order, points = record["order"], record["points"]
    spec_ids = [i.grade_id for i in spec.items]
    if sorted(spec_ids) != sorted(order):
        raise GradeError(f"the spec of {lab} grades {spec_ids} but the notebook's graded cells are {order}")
    for i in spec.items:
        if float(i.points) != points[i.grade_id]:
            raise GradeError(
                f"{lab}: {i.grade_id} is worth {points[i.grade_id]} points in the notebook, {i.points} in the spec"
            )
    locked, released = set(record["locked"]), set(record["released"])
    if home is not None:
        others = {o: _released_cells(course, o) for o in lab_ids(course) if o != lab}
    else:
        shipped = {p.stem: packaged_record(p.stem) for p in RECORDS.glob("*.json") if p.stem != lab}
        others = {o: set(r["released"]) for o, r in shipped.items() if r is not None}
    others = {o: cells for o, cells in others.items() if cells}
    return Lab(lab, spec, order, record["prompts"], locked, home, released, others, frozenset(record["ids"]))


RELEASED, CHECKSUM = "released", "checksum"  # how a cell is known as the course's (the_courses)


def the_courses(cell: dict, lab: Lab) -> str:
    """Whether a parsed cell (``submissions.parse_notebook``) is the course's, not the student's: ``RELEASED`` for a
    cell of the released lab, ``CHECKSUM`` for a locked cell of the lab whose nbgrader checksum matches its source
    (nbgrader's own test of an unchanged cell, so the cells of any release of the lab count, not only the current
    one's), "" for the student's. A checksum is no secret (anyone can compute one): such a cell's errors are not
    the student's, but the code it defines is judged like theirs (``batch``: only released cells keep every right)."""
    if cell["source"].strip() in lab.released:
        return RELEASED
    meta = cell.get("meta")
    nbg = meta.get("nbgrader") if isinstance(meta, dict) else None
    if not isinstance(nbg, dict) or not isinstance(nbg.get("checksum"), str) or nbg.get("grade_id") not in lab.ids:
        return ""
    if nbg.get("solution") or not (nbg.get("grade") or nbg.get("locked")):
        return ""  # nbgrader's is_locked says no from the metadata alone: every answer cell, without importing it
    try:  # nbgrader takes seconds to import: only for a locked cell of another release
        from nbformat import from_dict
        from nbgrader.utils import compute_checksum, is_locked
    except ImportError:  # a grader installed without nbgrader (qkv[grade] has it): the cell counts as the student's
        return ""

    node = from_dict({"cell_type": cell["type"], "source": cell["source"], "metadata": meta})
    try:
        return CHECKSUM if is_locked(node) and compute_checksum(node) == nbg["checksum"] else ""
    except (KeyError, TypeError, ValueError, AttributeError):
        return ""


def questions(nb: dict) -> dict[str, str]:
    """Each written answer's question: grade_id -> the Markdown of the cell before the answer cell."""
    found, prev = {}, ""
    for cell in nb.get("cells", []):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade") and cell.get("cell_type") == "markdown":
            found[meta["grade_id"]] = prev
        prev = cell_source(cell)
    return found


def _released_cells(course: Path, lab: str) -> set[str]:
    """The stripped, non-empty sources of the released lab in every edition, ``labs/<lab>/<lab>.ipynb`` and
    ``labs/zh/<lab>/<lab>.ipynb`` (the Chinese lab's code differs in its messages): empty if there is none."""
    found: set[str] = set()
    for folder, _ in EDITIONS.values():
        path = course / folder / lab / f"{lab}.ipynb"
        if path.is_file():
            nb = json.loads(path.read_text(encoding="utf-8"))
            found |= {src for cell in nb.get("cells", []) if (src := cell_source(cell).strip())}
    return found


def looks_like(cells: list[dict], lab: Lab) -> str | None:
    """The other lab a notebook is a copy of, or None: most of its cells come from another lab's release and
    almost none from this one's."""
    sources = {c["source"].strip() for c in cells if c["source"].strip()}
    if not sources:
        return None
    mine = len(sources & lab.released)
    best, hits = None, 0
    for other, released in lab.others.items():
        n = len(sources & released)
        if n > hits:
            best, hits = other, n
    if best is not None and hits >= 5 and hits >= 4 * mine and hits >= 0.3 * len(lab.others[best]):
        return best
    return None
