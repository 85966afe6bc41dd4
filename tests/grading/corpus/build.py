"""The corpus builder: realistic submissions made from a lab's completed notebook by named edits.

A lab's table (``tests/grading/corpus/<lab>.py``) maps a submission's name to a :class:`Sub`: the edits that
turn the completed lab (the released notebook with the solution's code in its answer cells, as a student
hands it in) into that submission, and what a fair teacher gives it. Edits:

* ``{"function_name": "new source of the cell that defines it"}`` (dedented), as a student rewrites an answer;
* ``add=[(after, source)]``: a new code cell after the one defining the function ``after`` (or graded as
  ``after``, a lab's self-check cell; ``None``: after the setup cell), as a student adds a scratch cell;
* ``release=[(grade_id, old, new)]``: the locked cell ``grade_id`` as an earlier release of the lab had it (its
  text ``old`` replaced by ``new``, its nbgrader checksum computed by nbgrader for the new source).

:func:`situations` adds the everyday situations every lab gets: never run, stale outputs, a renamed
function, an error in an unrelated cell, the blank lab, another lab's notebook, one endless loop.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field

from nbformat.v4 import new_code_cell

from qkv.grading.testing import COURSE, completed_lab, with_function
from qkv.labs import lab_ids

LABS = tuple(lab_ids(COURSE))  # every lab has a table here, <lab>.py (tests/test_lab_lists.py checks it)


@dataclass(frozen=True)
class Sub:
    """One submission: its edits, the grade_ids a fair teacher takes its points away on, and its status."""

    edits: dict[str, str] = field(default_factory=dict)
    lose: frozenset[str] | set[str] = frozenset()  # grade_ids that score 0; every other item keeps full marks
    add: tuple[tuple[str | None, str], ...] = ()
    release: tuple[tuple[str, str, str], ...] = ()  # (grade_id, old, new) of an earlier release's locked cell
    status: str = "graded"
    why: str = ""  # what the submission is, for the report


def _defines(cell: dict, name: str) -> bool:
    src = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
    return cell["cell_type"] == "code" and re.search(rf"^(def|class)\s+{re.escape(name)}\b", src, re.M) is not None


def add_cell(nb: dict, after: str | None, source: str, cid: str) -> dict:
    """A copy of ``nb`` with a new code cell after the cell defining ``after`` or graded as ``after`` (None:
    after the setup cell)."""
    nb = copy.deepcopy(nb)
    cells = nb["cells"]
    if after is None:
        at = next(
            i for i, c in enumerate(cells) if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "setup"
        )
    else:  # the cell defining ``after``, or the cell with that nbgrader grade_id (a lab's self-check cell)
        at = next(
            i
            for i, c in enumerate(cells)
            if _defines(c, after) or c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == after
        )
    cells.insert(at + 1, new_code_cell(source.strip("\n") + "\n", id=cid))
    return nb


def earlier_release(nb: dict, grade_id: str, old: str, new: str) -> dict:
    """A copy of ``nb`` whose locked cell ``grade_id`` holds an earlier release's text, checksummed by nbgrader."""
    from nbformat import from_dict
    from nbgrader.utils import compute_checksum

    nb = copy.deepcopy(nb)
    cell = next(c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id)
    src = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
    if old not in src:
        raise LookupError(f"{old!r} is not in the cell {grade_id}")
    cell["source"] = src.replace(old, new)
    cell["metadata"]["nbgrader"]["checksum"] = compute_checksum(from_dict(cell))
    return nb


def build(lab: str, sub: Sub) -> dict:
    nb = completed_lab(lab)
    for name, source in sub.edits.items():
        nb = with_function(nb, name, source)
    for n, (after, source) in enumerate(sub.add):
        nb = add_cell(nb, after, source, f"student-{n}")
    for grade_id, old, new in sub.release:
        nb = earlier_release(nb, grade_id, old, new)
    return nb


def with_outputs(nb: dict) -> dict:
    """As a student hands in a notebook they ran: execution counts, printed outputs, a stale error."""
    nb = copy.deepcopy(nb)
    count = 0
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        count += 1
        cell["execution_count"] = count
        cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["all checks passed\n"]}]
    first = next(c for c in nb["cells"] if c["cell_type"] == "code")
    first["outputs"].append(
        {
            "output_type": "error",
            "ename": "NameError",
            "evalue": "name 'x' is not defined",
            "traceback": ["NameError: name 'x' is not defined"],
        }
    )
    return nb


def renamed(nb: dict, old: str, new: str) -> dict:
    """A copy of ``nb`` where the definition of ``old`` is named ``new`` (callers in the lab's cells unchanged)."""
    nb = copy.deepcopy(nb)
    for cell in nb["cells"]:
        if _defines(cell, old):
            src = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            cell["source"] = re.sub(rf"^(def|class)\s+{re.escape(old)}\b", rf"\1 {new}", src, count=1, flags=re.M)
            return nb
    raise LookupError(f"no code cell defines {old}")


def situations(lab: str, last: str, last_item: str, signature: str) -> dict[str, tuple[dict | bytes, Sub]]:
    """The everyday situations of one lab. ``last`` is the last graded function (no other graded function
    calls it), ``last_item`` its grade_id, ``signature`` its parameter list (for the looping version)."""
    done = completed_lab(lab)
    other = LABS[(LABS.index(lab) + 1) % len(LABS)]
    loop = f"def {last}({signature}):\n    total = 0\n    while True:  # waiting for convergence\n        total += 1\n"
    return {
        "never_run": (done, Sub(why="solved, saved without running (no outputs)")),
        "stale_outputs": (with_outputs(done), Sub(why="ran, with outputs and a stale error in them")),
        "renamed": (renamed(done, last, last + "_v2"), Sub(lose={last_item}, why=f"{last} renamed {last}_v2")),
        "unrelated_error": (
            add_cell(done, None, "print(undefined_scratch_variable)", "scratch"),
            Sub(why="a scratch cell raises NameError"),
        ),
        "blank": (
            (COURSE / "labs" / lab / f"{lab}.ipynb").read_bytes(),
            Sub(lose={"*"}, why="the released lab, untouched"),
        ),
        "other_lab": (completed_lab(other), Sub(status="wrong_lab", why=f"the {other} notebook in this folder")),
        "endless_loop": (with_function(done, last, loop), Sub(lose={last_item}, why=f"{last} loops forever")),
    }
