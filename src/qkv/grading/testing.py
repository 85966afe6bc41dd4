"""Helpers for testing a grading spec: plant bugs in the solution, check they lose points; correct variants don't.

Typical use, in ``tests/grading/test_spec_<lab>.py``::

    from qkv.grading.testing import check_spec

    BUGS = {  # name -> (function whose definition is replaced, new source, grade_ids that must lose points)
        "no max subtraction": ("stable_softmax", '''
            def stable_softmax(scores):
                e = torch.exp(scores)
                return e / e.sum(dim=-1, keepdim=True)
            ''', {"test_stable_softmax"}),
    }
    ALTERNATIVES = {  # name -> {function: new source}; must keep full marks
        "einsum": {"dot_scores": "def dot_scores(query, keys):\\n    return torch.einsum('d,nd->n', query, keys)\\n"},
    }

    def test_planted_bugs(tmp_path):
        check_spec("my_lab", BUGS, ALTERNATIVES, tmp_path)

Every variant is graded in ONE sandboxed batch (the workers start once), so a dozen variants cost a few
seconds. Sources are dedented, so they can be written indented inside the test.

Layer: grader side, the top (above ``command``); may import any module of the grader; only tests import it.
"""

from __future__ import annotations

import copy
import json
import re
import textwrap
from collections.abc import Iterable, Mapping
from pathlib import Path

from . import sandbox
from .batch import grade_entry
from .command import run_batch
from .jobs import Limits
from .lab import load_lab
from .messages import Msg
from .results import Result
from .scoring import prepare
from .submissions import Entry

__all__ = [
    "COURSE",
    "check_spec",
    "completed_lab",
    "english",
    "english_lines",
    "grade_across_labs",
    "grade_notebooks",
    "solution_notebook",
    "with_function",
    "with_replaced",
]

COURSE = Path(__file__).resolve().parents[3]  # the repository root (src/qkv/grading -> ../../..)


def solution_notebook(lab: str, course: Path = COURSE) -> dict:
    """The parsed solution notebook ``solutions/<lab>/<lab>.ipynb``."""
    return json.loads((Path(course) / "solutions" / lab / f"{lab}.ipynb").read_text(encoding="utf-8"))


def completed_lab(lab: str, course: Path = COURSE) -> dict:
    """The released lab ``labs/<lab>/<lab>.ipynb`` as a student hands it in after solving it: each answer cell
    holds the solution's code (the ``### BEGIN/END SOLUTION`` lines dropped); every other cell is the lab's own,
    unchanged (the solution notebook's test cells hold hidden tests a student never sees)."""
    released = json.loads((Path(course) / "labs" / lab / f"{lab}.ipynb").read_text(encoding="utf-8"))
    answers = {}
    for cell in solution_notebook(lab, course)["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("solution"):
            lines = _cell_source(cell).splitlines(keepends=True)
            answers[meta["grade_id"]] = "".join(
                x for x in lines if x.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION")
            )
    nb = copy.deepcopy(released)
    for cell in nb["cells"]:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell["source"] = answers[gid]
    return nb


def _cell_source(cell: dict) -> str:
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else src


def with_function(nb: dict, name: str, source: str) -> dict:
    """A copy of ``nb`` whose code cell defining ``name`` (``def name`` or ``class name``) holds ``source`` instead."""
    nb = copy.deepcopy(nb)
    pattern = re.compile(rf"^(def|class)\s+{re.escape(name)}\b", re.M)
    for cell in nb["cells"]:
        if cell["cell_type"] == "code" and pattern.search(_cell_source(cell)):
            cell["source"] = textwrap.dedent(source).strip("\n") + "\n"
            return nb
    raise LookupError(f"no code cell defines {name}")


def with_replaced(nb: dict, old: str, new: str) -> dict:
    """A copy of ``nb`` with the text ``old`` replaced by ``new`` in the one code cell that contains it."""
    nb = copy.deepcopy(nb)
    hits = [c for c in nb["cells"] if c["cell_type"] == "code" and old in _cell_source(c)]
    if len(hits) != 1:
        raise LookupError(f"{old!r} found in {len(hits)} code cells (expected exactly one)")
    hits[0]["source"] = _cell_source(hits[0]).replace(old, new)
    return nb


def grade_notebooks(
    lab: str,
    notebooks: Mapping[str, dict | str | bytes],
    tmp_path: Path,
    *,
    course: Path = COURSE,
    jobs: int = 2,
    seed: int = 1234,
    timeout: float = 60,
    memory: int = 2048,
    use_sandbox: bool = True,
    call_timeout: float | None = None,
) -> dict[str, Result]:
    """Grade ``{student: notebook}`` (a parsed notebook, JSON text or raw bytes) in one batch; results by student."""
    subs = Path(tmp_path) / "submissions"
    subs.mkdir(parents=True, exist_ok=True)
    for student, nb in notebooks.items():
        data = nb if isinstance(nb, bytes) else (nb if isinstance(nb, str) else json.dumps(nb)).encode("utf-8")
        (subs / f"{student}.ipynb").write_bytes(data)
    results = run_batch(
        lab,
        subs,
        Path(tmp_path) / "out",
        course=course,
        jobs=jobs,
        limits=Limits.of(timeout, memory, call_timeout),
        seed=seed,
        use_sandbox=use_sandbox,
        log=lambda *a, **k: None,
    )
    return {r.student: r for r in results}


def grade_across_labs(
    notebooks: list[tuple[str, str, bytes]],
    tmp_path: Path,
    *,
    course: Path = COURSE,
    seed: int = 1234,
    timeout: float = 120,
    memory: int = 2048,
) -> dict[tuple[str, str], Result]:
    """Grade ``(lab, student, notebook bytes)`` triples of several labs with ONE sandboxed worker (it is
    lab-agnostic: a job carries its cells and cases), so a test over every lab starts one worker, not one per lab."""
    tmp_path = Path(tmp_path)
    lib = sandbox.make_lib(Path(__file__).resolve().parent.parent, tmp_path / "sandbox-lib")
    worker = sandbox.Worker(0, lib, sandbox=True, log=tmp_path / "worker.log")
    labs: dict[str, tuple] = {}
    results = {}
    try:
        for lab, student, data in notebooks:
            if lab not in labs:
                info = load_lab(lab, course)
                labs[lab] = (info, prepare(info, seed))
            info, prepared = labs[lab]
            path = tmp_path / "submissions" / lab / f"{student}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            results[(lab, student)] = grade_entry(
                Entry(student, path), info, prepared, worker, limits=Limits.of(timeout, memory)
            )
    finally:
        worker.stop()
    return results


def english(said: Msg | None) -> str:
    """A result's message as the tests compare it: its English, "" for none (a result's ``note`` when all went well)."""
    return "" if said is None else str(said)


def english_lines(said: Iterable[Msg]) -> list[str]:
    """Messages in English: an item's ``lines``, a result's ``cell_errors``."""
    return [str(m) for m in said]


def points(result: Result) -> dict[str, float]:
    return {gid: r.points for gid, r in result.items.items()}


def check_spec(
    lab: str,
    bugs: dict[str, tuple[str, str, set[str]]],
    alternatives: dict[str, dict[str, str]],
    tmp_path: Path,
    *,
    course: Path = COURSE,
) -> dict[str, Result]:
    """Assert: the solution gets every autograded point; each bug loses the points of exactly the items it
    names (one bug costs its own item, not the later ones that call the buggy function); each alternative keeps
    every point. Returns the results by variant name."""
    base = solution_notebook(lab, course)
    variants: dict[str, dict] = {"solution": base}
    for function, source, _ in bugs.values():
        variants[f"bug-{len(variants):02d}"] = with_function(base, function, source)
    for replacements in alternatives.values():
        nb = base
        for function, source in replacements.items():
            nb = with_function(nb, function, source)
        variants[f"alt-{len(variants):02d}"] = nb
    results = grade_notebooks(lab, variants, tmp_path, course=course)
    names = ["solution", *bugs, *alternatives]
    by_name = dict(zip(names, (results[k] for k in variants)))
    full = {gid: r.max for gid, r in results["solution"].items.items()}
    assert results["solution"].status == "graded", results["solution"]
    missing = [
        f"{name} (status {res.status}: {res.note})"
        for name, res in by_name.items()
        if res.status == "graded" and set(res.items) != set(full)
    ]
    assert not missing, f"graded without a result for every item: {missing}"
    assert points(results["solution"]) == full, f"the solution itself loses points: {results['solution'].items}"
    problems = []
    for name, (_, _, losing) in bugs.items():
        got = points(by_name[name])
        lost = {gid for gid in full if got.get(gid, 0.0) < full[gid]}
        if lost != losing:
            res = by_name[name]
            problems.append(
                f"bug {name!r} should lose {sorted(losing)} but lost {sorted(lost)} (status "
                f"{res.status}{f': {res.note}' if res.note else ''})"
            )
    for name in alternatives:
        got = points(by_name[name])
        if got != full:
            res = by_name[name]
            lines = {
                gid: [str(m) for m in res.items[gid].lines] if gid in res.items else "no result"
                for gid in full
                if got.get(gid) != full[gid]
            }
            problems.append(
                f"correct alternative {name!r} lost points (status {res.status}"
                f"{f': {res.note}' if res.note else ''}): {lines}"
            )
    assert not problems, "\n".join(problems)
    return by_name
