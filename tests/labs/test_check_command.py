"""`qkv check LAB NOTEBOOK`: the grader's own score on a student's notebook, printed per exercise with its reasons."""

from __future__ import annotations

import json

from qkv.cli import main
from qkv.grading.testing import COURSE, solution_notebook, with_function


def _check(capsys, lab: str, notebook) -> str:
    assert main(["check", lab, str(notebook), "--course", str(COURSE)]) == 0
    return capsys.readouterr().out


def test_a_solution_gets_full_marks_and_a_blank_lab_zero(capsys):
    out = _check(capsys, "soft_lookup", COURSE / "solutions" / "soft_lookup" / "soft_lookup.ipynb")
    assert "total: 10 / 10 autograded points" in out, out
    assert "stable_softmax: 3 / 3" in out, out
    out = _check(capsys, "soft_lookup", COURSE / "labs" / "soft_lookup" / "soft_lookup.ipynb")
    assert "total: 0 / 10 autograded points" in out, out
    assert "not written yet (it still raises NotImplementedError)" in out, out
    assert "(plus 2 points for written answers, graded by hand)" in out, out


def test_it_reports_what_the_self_checks_cannot_see(capsys, tmp_path):
    """A forbidden call gives correct numbers (every self-check passes), and loses the exercise's points."""
    nb = with_function(
        solution_notebook("soft_lookup"),
        "stable_softmax",
        "def stable_softmax(scores):\n    return torch.softmax(scores, dim=-1)\n",
    )
    path = tmp_path / "mine.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    out = _check(capsys, "soft_lookup", path)
    assert "stable_softmax: 0 / 3" in out and "torch.softmax" in out and "forbids" in out, out
    assert "total: 4 / 10 autograded points" in out, out  # soft_lookup calls stable_softmax, so it loses too


def test_a_missing_notebook_is_a_clear_error(capsys, tmp_path):
    assert main(["check", "soft_lookup", str(tmp_path / "nope.ipynb"), "--course", str(COURSE)]) == 2
    assert "notebook not found" in capsys.readouterr().err
