"""Realistic variants of each lab's solution, for testing the grader: correct work in many styles, and the
classic bugs planted among them.

A variant is the released lab completed with the solution (as a student hands it in) changed by named,
composable rewrites that keep what the notebook computes in Jupyter (``code.py``: the student's own code on its
syntax tree; ``notebook.py``: scratch cells, magics, comments, an older release of the lab's locked cells), and
optionally one classic bug from the lab's spec test planted last (``generate.py``). Seeded: a variant is named
by its lab, seed, rewrites and bug, and builds the same notebook every time.

    from variants import combinations, planted, singles
    for v in singles("masks") + combinations("masks", 10) + planted("masks"):
        nb, lose = v.notebook(), v.lose  # lose: the grade_ids a fair teacher takes points from

Used by ``tests/grading/test_variants.py`` (a sample, in ``make test``) and ``benchmarks/grader_variants.py``
(the full sweep).
"""

from .cells import NotApplicable
from .generate import REWRITES, Variant, applicable, bugs, combinations, planted, singles

__all__ = ["REWRITES", "NotApplicable", "Variant", "applicable", "bugs", "combinations", "planted", "singles"]
