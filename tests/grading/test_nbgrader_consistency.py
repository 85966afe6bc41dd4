"""Real client: nbgrader's own `nbgrader autograde` and `qkv grade` agree on honest submissions.

For every lab that has a grading spec, a solution and a generated lab, the solution (every autograded point)
and the blank lab (zero) are graded by both, and the totals compared: one test per lab, so that ``--lab`` keeps
it. The labs the session selected are graded once, together: nbgrader runs them in one throwaway course (its own
gradebook), its command lines in one process (qkv.nbgrader_cli); our side grades them with one sandboxed worker,
meanwhile. (xdist's loadscope keeps a module's tests on one worker, so that happens once per session.)
"""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from qkv import nbgrader_cli
from qkv.grading.spec import load_spec
from qkv.grading.testing import COURSE, grade_across_labs
from qkv.labs import lab_ids

LABS = lab_ids(COURSE)  # each has its spec and its released lab, and there are 8 or more (tests/test_lab_lists.py)
STUDENTS = {"solution": "solutions", "blank": "labs"}


def nbgrader_scores(tmp: Path, labs: list[str]) -> dict[str, dict[str, tuple[float, float]]]:
    """lab -> student -> (autograded score, autograded maximum) from nbgrader's gradebook."""
    course = tmp / "nbgrader"
    commands = []
    for lab in labs:
        (course / "source" / lab).mkdir(parents=True)
        shutil.copy(COURSE / "solutions" / lab / f"{lab}.ipynb", course / "source" / lab)
        for student, folder in STUDENTS.items():
            dest = course / "submitted" / student / lab
            dest.mkdir(parents=True)
            shutil.copy(COURSE / folder / lab / f"{lab}.ipynb", dest)
        root = f"--CourseDirectory.root={course}"
        commands += [
            ["db", "assignment", "add", lab, root],
            ["generate_assignment", lab, "--force", root],
            ["autograde", lab, "--force", root],
        ]
    done = nbgrader_cli.run(commands, cwd=course, timeout=900)
    log = done.stdout + done.stderr
    assert done.returncode == 0 and "[ERROR]" not in log, log[-3000:]
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return {
            lab: {
                s: (float(gb.find_submission(lab, s).code_score), float(gb.find_submission(lab, s).max_code_score))
                for s in STUDENTS
            }
            for lab in labs
        }


@pytest.fixture(scope="module")
def both_scores(request, tmp_path_factory):
    """(ours, theirs) for every lab whose test this session runs, graded in one go."""
    labs = sorted(
        {
            item.callspec.params["lab"]
            for item in request.session.items
            if getattr(item, "originalname", None) == test_qkv_grade_agrees_with_nbgrader_autograde.__name__
        }
    )
    tmp = tmp_path_factory.mktemp("consistency")
    with ThreadPoolExecutor(1) as pool:
        theirs_future = pool.submit(nbgrader_scores, tmp, labs)
        ours = grade_across_labs(
            [
                (lab, s, (COURSE / folder / lab / f"{lab}.ipynb").read_bytes())
                for lab in labs
                for s, folder in STUDENTS.items()
            ],
            tmp / "qkv",
        )
        return ours, theirs_future.result()


@pytest.mark.parametrize("lab", LABS)
def test_qkv_grade_agrees_with_nbgrader_autograde(lab, both_scores):
    ours, theirs = both_scores
    max_auto = load_spec(lab).max_auto
    problems = []
    for student, expected in (("solution", max_auto), ("blank", 0.0)):
        res = ours[(lab, student)]
        total = sum(i.points for i in res.items.values())
        if res.status != "graded" or total != expected:
            problems.append(f"qkv grade {lab}/{student}: {res.status} {total} (expected {expected}): {res.items}")
        if theirs[lab][student] != (expected, max_auto):
            problems.append(f"nbgrader {lab}/{student}: {theirs[lab][student]} (expected {(expected, max_auto)})")
    assert not problems, "\n".join(problems)
