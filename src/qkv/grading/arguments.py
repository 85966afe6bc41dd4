"""The arguments of ``qkv grade`` and ``qkv gradescope-bundle``, registered in ``qkv/cli.py``. Apart from
``command``, which runs them: building the ``qkv`` command's parser imports no torch, so that ``qkv check``
(whose resident checker answers most checks) and ``qkv --help`` start in a twentieth of a second.

Layer: grader side, above ``command``, which it imports only when a command runs.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from . import messages as M
from .jobs import CALL_SHARE, CELL_CALLS, GRADE, GRADESCOPE

__all__ = ["add_parsers"]


def add_parsers(sub) -> None:
    p = sub.add_parser(
        "grade", help="grade students' notebooks of one lab in a sandbox (grades.csv, feedback, summary)"
    )
    p.add_argument("lab", help="lab id, e.g. soft_lookup (looked up under solutions/ of --course)")
    p.add_argument(
        "submissions", type=Path, help="folder of <student>.ipynb or <student>/…/*.ipynb (a notebook with --gradescope)"
    )
    p.add_argument(
        "--out", type=Path, required=True, help="output folder (grades.csv, feedback/, manual/, summary.html)"
    )
    p.add_argument("--course", type=Path, default=Path.cwd(), help="course root (default: current folder)")
    p.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="submissions graded in parallel (default: every core)"
    )
    p.add_argument(
        "--timeout", type=float, default=GRADE.timeout, help="wall-clock seconds per submission (default %(default)g)"
    )
    p.add_argument(
        "--call-timeout",
        type=float,
        default=None,
        help="CPU seconds one call of a graded function (or of the student's functions from a cell) may use "
        f"(default: --timeout / {CALL_SHARE}), a whole cell {CELL_CALLS} times as much; a function that loops loses "
        "only the items that call it",
    )
    p.add_argument(
        "--memory", type=int, default=GRADE.memory_mb, help="memory per submission in MB (default %(default)d)"
    )
    p.add_argument("--fresh", action="store_true", help="forget earlier results in --out and draw a new seed")
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help="the inputs' seed for a new --out (default: random, recorded in run.json)",
    )
    p.add_argument(
        "--no-sandbox", action="store_true", help="run without bubblewrap (resource limits and a separate uid only)"
    )
    p.add_argument(
        "--gradescope", action="store_true", help="grade one submission and write Gradescope's results.json into --out"
    )
    p.add_argument(
        "--gradebook",
        metavar="URL",
        help="also write the autograded points into this nbgrader gradebook (e.g. sqlite:///gradebook.db), where "
        "formgrader and `nbgrader export` show them with the hand-graded points",
    )
    p.add_argument("--assignment", help="the lab's assignment name in the gradebook (default: the lab id)")
    _add_lang(p)
    p.add_argument("--quiet", action="store_true", help="print only warnings and errors")
    p.set_defaults(func=_grade)

    p = sub.add_parser("gradescope-bundle", help="build the Gradescope autograder .zip for a lab")
    p.add_argument("lab", help="lab id, e.g. soft_lookup")
    p.add_argument("--out", type=Path, default=None, help="zip to write (default: <lab>-gradescope.zip)")
    p.add_argument("--course", type=Path, default=Path.cwd(), help="course root (default: current folder)")
    p.add_argument(
        "--timeout",
        type=float,
        default=GRADESCOPE.timeout,
        help="wall-clock seconds per submission on Gradescope (default %(default)g)",
    )
    p.add_argument(
        "--memory",
        type=int,
        default=GRADESCOPE.memory_mb,
        help="memory in MB for a submission's own code (default %(default)d: with the kernel's measured peaks, "
        "410-600 MB, it fits Gradescope's 1.5 GB container; see benchmarks/gradescope_memory.py)",
    )
    _add_lang(p)
    p.set_defaults(func=_bundle)


def _add_lang(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--lang",
        choices=list(M.LANGUAGES),
        default="en",
        help="language of the feedback and the summary: en or zh (中文; default: en)",
    )


def _grade(args: argparse.Namespace) -> int:
    from .command import grade

    return grade(args)


def _bundle(args: argparse.Namespace) -> int:
    from .command import bundle

    return bundle(args)
