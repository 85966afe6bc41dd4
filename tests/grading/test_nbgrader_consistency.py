"""Real client: nbgrader's own `nbgrader autograde` and `qkv grade` agree on honest submissions.

For every lab that has a grading spec, a solution and a generated lab, the solution (every autograded point)
and the blank lab (zero) are graded by both, and the totals compared. nbgrader runs in one throwaway course
folder per lab (its own gradebook), two labs at a time; our side grades every lab with one sandboxed worker.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from qkv.grading.spec import load_spec
from qkv.grading.testing import COURSE, grade_across_labs
from qkv.labs import lab_ids

LABS = lab_ids(COURSE)  # each has its spec and its released lab (tests/test_lab_lists.py)
STUDENTS = {"solution": "solutions", "blank": "labs"}


def _nbgrader(course: Path, *args: str) -> str:
    cmd = [sys.executable, "-m", "nbgrader", *args, f"--CourseDirectory.root={course}"]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}  # alembic
    done = subprocess.run(cmd, cwd=course, capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    return done.stdout + done.stderr


def nbgrader_scores(lab: str, tmp: Path) -> dict[str, tuple[float, float]]:
    """student -> (autograded score, autograded maximum) from nbgrader's gradebook for one lab."""
    course = tmp / f"nbgrader-{lab}"
    (course / "source" / lab).mkdir(parents=True)
    shutil.copy(COURSE / "solutions" / lab / f"{lab}.ipynb", course / "source" / lab)
    for student, folder in STUDENTS.items():
        dest = course / "submitted" / student / lab
        dest.mkdir(parents=True)
        shutil.copy(COURSE / folder / lab / f"{lab}.ipynb", dest)
    _nbgrader(course, "db", "assignment", "add", lab)
    _nbgrader(course, "generate_assignment", lab, "--force")
    log = _nbgrader(course, "autograde", lab, "--force")
    assert "[ERROR]" not in log, log[-3000:]
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return {
            s: (float(gb.find_submission(lab, s).code_score), float(gb.find_submission(lab, s).max_code_score))
            for s in STUDENTS
        }


def test_qkv_grade_agrees_with_nbgrader_autograde(tmp_path):
    assert "soft_lookup" in LABS
    with ThreadPoolExecutor(2) as pool:
        theirs_future = {lab: pool.submit(nbgrader_scores, lab, tmp_path) for lab in LABS}
        ours = grade_across_labs(
            [
                (lab, s, (COURSE / folder / lab / f"{lab}.ipynb").read_bytes())
                for lab in LABS
                for s, folder in STUDENTS.items()
            ],
            tmp_path / "qkv",
        )
        theirs = {lab: f.result() for lab, f in theirs_future.items()}
    problems = []
    for lab in LABS:
        max_auto = load_spec(lab).max_auto
        for student, expected in (("solution", max_auto), ("blank", 0.0)):
            res = ours[(lab, student)]
            total = sum(i.points for i in res.items.values())
            if res.status != "graded" or total != expected:
                problems.append(f"qkv grade {lab}/{student}: {res.status} {total} (expected {expected}): {res.items}")
            if theirs[lab][student] != (expected, max_auto):
                problems.append(f"nbgrader {lab}/{student}: {theirs[lab][student]} (expected {(expected, max_auto)})")
    assert not problems, "\n".join(problems)
