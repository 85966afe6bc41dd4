"""The corpus of realistic submissions: every lab's table in tests/grading/corpus/ graded, sandboxed, in ONE
batch per lab, and every expected outcome asserted (status, points per item, feedback on correct work).

Expected outcomes are what a fair teacher gives: full marks for correct work written any way a student writes
it, 0 only on the item a bug breaks. Run with ``-s`` to see the table (submission, expected, got).
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from pathlib import Path

import pytest
from english_left import english_left

from qkv.grading.lab import load_lab
from qkv.grading.messages import INPUT_ANSWERED, MAGIC_SKIPPED, SHELL_SKIPPED, translator
from qkv.grading.reports import feedback_html
from qkv.grading.results import Result
from qkv.grading.testing import COURSE, english, english_lines, grade_notebooks

CORPUS = Path(__file__).parent / "corpus"
sys.path.insert(0, str(CORPUS))
from build import LABS, build, situations  # noqa: E402


def submissions(lab: str) -> dict:
    """name -> (notebook, Sub): the lab's table and the everyday situations."""
    table = importlib.import_module(lab)
    subs = {name: (build(lab, sub), sub) for name, sub in table.CORPUS.items()}
    subs.update(situations(lab, *table.LAST))
    return subs


def expected_points(sub, result: Result) -> dict[str, float]:
    return {gid: 0.0 if ("*" in sub.lose or gid in sub.lose) else r.max for gid, r in result.items.items()}


def verdict(name: str, sub, result: Result, grade_ids: list[str]) -> list[str]:
    """The ways ``result`` differs from what the table expects (empty: as expected)."""
    problems = []
    if result.status != sub.status:
        problems.append(f"status {result.status!r} ({english(result.note)}), expected {sub.status!r}")
    if sub.status != "graded":
        return problems
    got = {gid: r.points for gid, r in result.items.items()}
    if sorted(got) != sorted(grade_ids):
        problems.append(f"items {sorted(got)}, expected {grade_ids}")
    want = expected_points(sub, result)
    for gid in grade_ids:
        if gid in got and got[gid] != want.get(gid):
            lines = "; ".join(english_lines(result.items[gid].lines))[:300]
            problems.append(f"{gid}: {got[gid]:g} points, expected {want.get(gid, 0):g} ({lines})")
    errors = english_lines(result.cell_errors)
    if name == "unrelated_error":
        if len(errors) != 1 or "NameError" not in errors[0]:
            problems.append(f"feedback should list the one failing scratch cell; lists {errors}")
    elif not sub.lose and errors:
        problems.append(f"correct work, yet the feedback lists errors: {errors}")
    told = [part for part in english(result.note).split("; ") if part and not is_skip_note(part)]
    if not sub.lose and told:
        problems.append(f"correct work, yet the feedback says: {'; '.join(told)}")
    if name == "endless_loop" and "loop" not in english(result.note) + str(result.items):
        problems.append("the feedback does not say that a function looped")
    return problems


def is_skip_note(line: str) -> bool:
    """A note that says what the grader did not run as Jupyter would (a shell command, a magic, input()): told to
    the student, but no error of theirs."""
    return any(
        re.fullmatch(re.escape(str(t)).replace(r"\{cell\}", r"\d+").replace(r"\{command\}", "`.*`"), line)
        for t in (SHELL_SKIPPED, MAGIC_SKIPPED, INPUT_ANSWERED)
    )


@pytest.mark.parametrize("lab", LABS)
def test_corpus(lab, tmp_path):
    subs = submissions(lab)
    # Under umask 077 (bubblewrap 0.8.0 made the sandbox's /opt 0700 then: no qkv.selfcheck for the child), with
    # the lab's own limit on one call where its table sets one (CALL_TIMEOUT), else 7.5 s of CPU time; 120 s on
    # the clock: a function that loops in a self-check cell uses two calls' shares (the cell's, the graded call's).
    old = os.umask(0o077)
    try:
        results = grade_notebooks(
            lab,
            {name: nb for name, (nb, _) in subs.items()},
            tmp_path,
            timeout=120,
            call_timeout=getattr(importlib.import_module(lab), "CALL_TIMEOUT", 7.5),
        )
    finally:
        os.umask(old)
    grade_ids = sorted(next(r for r in results.values() if r.status == "graded").items)
    rows, failures = [], []
    for name, (_, sub) in subs.items():
        result = results[name]
        problems = verdict(name, sub, result, grade_ids)
        got = sum(r.points for r in result.items.values())
        want = sum(expected_points(sub, result).values()) if sub.status == "graded" else 0.0
        rows.append(
            f"{lab:16} {name:28} expected {sub.status:9} {want:5g}  got {result.status:9} {got:5g} {result.wall:5.1f}s "
            f"{'ok' if not problems else 'MISMATCH'}"
        )
        failures += [f"{name}: {p}" for p in problems]
        # The same feedback for a student of the Chinese edition (`qkv grade --lang zh`): no English left.
        page = feedback_html(result, load_lab(lab, COURSE), {}, translator("zh"))
        failures += [f"{name}: English in the Chinese feedback: {s!r}" for s in english_left(page)]
    print("\n" + "\n".join(rows))
    assert not failures, f"{lab}: {len(failures)} unexpected outcomes\n" + "\n".join(failures)
