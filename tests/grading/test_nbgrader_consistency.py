"""Real client: nbgrader's own `nbgrader autograde` and `qkv grade` agree on honest submissions.

For every lab that has a grading spec, the solution (every autograded point) and the blank lab (zero) are
graded by both, and the totals compared. nbgrader runs in a throwaway course folder with its own gradebook.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from qkv.grading.spec import load_spec
from qkv.grading.testing import COURSE, grade_notebooks

SPECS = Path(COURSE) / "src" / "qkv" / "grading" / "specs"
LABS = sorted(
    p.stem for p in SPECS.glob("*.py")
    if p.stem != "__init__" and (COURSE / "solutions" / p.stem / f"{p.stem}.ipynb").is_file()
    and (COURSE / "labs" / p.stem / f"{p.stem}.ipynb").is_file()
)  # fmt: skip


def _nbgrader(course: Path, *args: str) -> str:
    cmd = [sys.executable, "-m", "nbgrader", *args, f"--CourseDirectory.root={course}"]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}  # alembic
    done = subprocess.run(cmd, cwd=course, capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    return done.stdout + done.stderr


def nbgrader_scores(tmp: Path) -> dict[tuple[str, str], tuple[float, float]]:
    """(lab, student) -> (autograded score, autograded maximum) from nbgrader's gradebook."""
    course = tmp / "nbgrader-course"
    for lab in LABS:
        (course / "source" / lab).mkdir(parents=True)
        shutil.copy(COURSE / "solutions" / lab / f"{lab}.ipynb", course / "source" / lab)
        for student, folder in (("solution", "solutions"), ("blank", "labs")):
            dest = course / "submitted" / student / lab
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copy(COURSE / folder / lab / f"{lab}.ipynb", dest)
    for lab in LABS:
        _nbgrader(course, "db", "assignment", "add", lab)
        _nbgrader(course, "generate_assignment", lab, "--force")
        log = _nbgrader(course, "autograde", lab, "--force")
        assert "[ERROR]" not in log, log[-3000:]
    from nbgrader.api import Gradebook

    scores = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for lab in LABS:
            for student in ("solution", "blank"):
                sub = gb.find_submission(lab, student)
                scores[(lab, student)] = (float(sub.code_score), float(sub.max_code_score))
    return scores


def test_qkv_grade_agrees_with_nbgrader_autograde(tmp_path):
    assert "soft_lookup" in LABS
    theirs = nbgrader_scores(tmp_path)
    for lab in LABS:
        solution = (COURSE / "solutions" / lab / f"{lab}.ipynb").read_bytes()
        blank = (COURSE / "labs" / lab / f"{lab}.ipynb").read_bytes()
        ours = grade_notebooks(lab, {"solution": solution, "blank": blank}, tmp_path / lab, jobs=1)
        max_auto = load_spec(lab).max_auto
        for student, expected in (("solution", max_auto), ("blank", 0.0)):
            total = sum(i["points"] for i in ours[student]["items"].values())
            assert ours[student]["status"] == "graded", (lab, student, ours[student])
            assert theirs[(lab, student)] == (expected, max_auto), (lab, student, theirs[(lab, student)])
            assert total == expected, (lab, student, ours[student]["items"])
