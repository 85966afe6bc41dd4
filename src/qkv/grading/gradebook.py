"""``qkv grade ... --gradebook URL``: the grader's scores in nbgrader's gradebook, through nbgrader's own API.

Each graded student gets a submission of the assignment (nbgrader's ``update_or_create_submission``, which makes a
grade for every graded cell that ``nbgrader generate_assignment`` recorded), and each autograded exercise its
``auto_score``: the points ``qkv grade`` gave it. Written answers are left to nbgrader: their manual scores, entered
in formgrader, are kept and add up with qkv's, so formgrader and ``nbgrader export`` show the total. A submission
that could not be graded (a timeout, a crash) gets 0 on every exercise, as in grades.csv.

Layer: grader side, beside ``reports``; imports the standard library, ``lab`` and ``results`` (nbgrader lazily).
"""

from __future__ import annotations

from .lab import GradeError, Lab
from .results import Result


def record_grades(url: str, assignment: str, lab: Lab, results: list[Result]) -> int:
    """Write each result's autograded points into the gradebook at ``url`` (e.g. ``sqlite:///gradebook.db``) as
    the grades of ``assignment`` (nbgrader's name for the lab; its notebook is ``<lab>.ipynb``); returns how many
    submissions were written. The assignment must be in the gradebook (``nbgrader generate_assignment``)."""
    from nbgrader.api import Gradebook, MissingEntry

    autograded = [item.grade_id for item in lab.spec.autograded]
    with Gradebook(url) as gb:
        try:
            notebook = gb.find_notebook(lab.lab, assignment)
        except MissingEntry:
            raise GradeError(
                f"the gradebook {url} has no notebook {lab.lab} in an assignment {assignment!r}: release the lab "
                f"with `nbgrader generate_assignment {assignment}` first, or name it with --assignment"
            ) from None
        missing = sorted(set(autograded) - {cell.name for cell in notebook.grade_cells})
        if missing:
            raise GradeError(f"the gradebook's {assignment}/{lab.lab} has no graded cells {', '.join(missing)}")
        for res in results:
            gb.update_or_create_student(res.student)
            gb.update_or_create_submission(assignment, res.student)
            for grade_id in autograded:
                grade = gb.find_grade(grade_id, lab.lab, assignment, res.student)
                item = res.items.get(grade_id)
                grade.auto_score = item.points if item is not None else 0.0
            gb.db.commit()
    return len(results)
