"""Generated variants of every lab's solution (tests/grading/variants/), graded sandboxed in ONE batch per lab.

Correct work in any style keeps every point, and its feedback names no error (the rewrites keep what the
notebook computes: it raises none in Jupyter); each planted classic bug costs exactly its own item. This is a
seeded sample; ``benchmarks/grader_variants.py`` runs the full sweep and prints which rewrite fails where.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from qkv.grading.testing import COURSE, grade_notebooks
from qkv.labs import lab_ids

sys.path.insert(0, str(Path(__file__).parent))
from variants import applicable, combinations, planted, singles
from variants.judge import problems

LABS = lab_ids(COURSE)  # every lab of the course: a new lab gets its variants without a list to keep


def sample(lab: str) -> list:
    """Four correct variants of two to five rewrites each, each rewrite that only some labs have (alone), and two
    planted bugs (seeded by the lab)."""
    rare = [v for v in singles(lab) if not all(v.rewrites[0] in applicable(other) for other in LABS)]
    return combinations(lab, 4) + rare + random.Random(lab).sample(planted(lab, seed=7), 2)


@pytest.mark.parametrize("lab", LABS)
def test_variants(lab, tmp_path):
    variants = {f"v{n:02d}": v for n, v in enumerate(sample(lab))}
    results = grade_notebooks(lab, {key: v.notebook() for key, v in variants.items()}, tmp_path)
    failures = [f"{v.name}: {p}" for key, v in variants.items() for p in problems(v, results[key])]
    print("\n" + "\n".join(f"{key} {v.name}" for key, v in variants.items()))
    assert not failures, f"{lab}: {len(failures)} unfair outcomes\n" + "\n".join(failures)
