"""``qkv grade`` and ``qkv gradescope-bundle`` (registered in ``qkv/cli.py``), and :func:`run_batch`, which wires
the layers: the lab, the batch of submissions, the reports.

Layer: grader side, the top; may import every other module of the grader (none imports it but ``testing``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from . import bwrap, reports
from . import messages as M
from .atomic import write_atomic
from .batch import default_jobs, grade_folder
from .gradebook import record_grades
from .gradescope import build_bundle
from .lab import GradeError, load_lab
from .limits import CALL_SHARE, CELL_CALLS, GRADE, GRADESCOPE, Limits
from .results import Result

__all__ = ["add_parsers", "run_batch"]


def run_batch(
    lab_id: str, submissions: Path, out: Path, *, course: Path = Path("."), lang: str = "en", **options
) -> list[Result]:
    """Grade every student under ``submissions`` into ``out``: the cache, grades.csv, feedback, the manual-grading
    pages and the summary, in ``lang`` (``en`` or ``zh``; results and their cache stay in English). Returns the
    results, sorted by student. ``options``: those of :func:`.batch.grade_folder` (jobs, limits, fresh,
    use_sandbox, seed, fork_worker, log)."""
    if lang not in M.LANGUAGES:
        raise GradeError(f"unknown language {lang!r}: the grader speaks {', '.join(M.LANGUAGES)}")
    lab = load_lab(lab_id, course)
    results, run = grade_folder(lab, submissions, Path(out), **options)
    reports.write_all(Path(out), lab, results, run, lang)
    return results


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
        "--jobs", type=int, default=default_jobs(), help="submissions graded in parallel (default: every core)"
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


def _warn(msg: str) -> None:
    print(f"qkv grade: warning: {msg}", file=sys.stderr)


def _grade(args: argparse.Namespace) -> int:
    log = (lambda *a, **k: None) if args.quiet else print
    try:
        if args.gradescope:
            return _gradescope(args, log)
        if args.no_sandbox:
            _warn(
                "--no-sandbox: submissions run WITHOUT bubblewrap; they can read files and use the network "
                "as an unprivileged user (or as you, when not root). Use it only for notebooks you trust."
            )
        results = run_batch(
            args.lab,
            args.submissions,
            args.out,
            course=args.course,
            jobs=args.jobs,
            limits=Limits.of(args.timeout, args.memory, args.call_timeout),
            fresh=args.fresh,
            use_sandbox=not args.no_sandbox,
            seed=args.seed,
            lang=args.lang,
            log=log,
        )
        if args.gradebook:
            lab = load_lab(args.lab, args.course)
            n = record_grades(args.gradebook, args.assignment or args.lab, lab, results)
            log(f"{n} submissions' autograded points written into the gradebook {args.gradebook}")
    except GradeError as err:
        print(f"qkv grade: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "qkv grade: interrupted; the results so far are kept: run the same command again to resume", file=sys.stderr
        )
        return 130
    log(f"{len(results)} students graded into {args.out}: grades.csv, feedback/, manual/, summary.html")
    return 0


def _gradescope(args: argparse.Namespace, log) -> int:
    """One submission (a notebook, or Gradescope's /autograder/submission folder) -> DIR/results.json."""
    lab = load_lab(args.lab, args.course)
    src = args.submissions
    if not src.exists():
        raise GradeError(f"submission not found: {src}")
    t = M.translator(args.lang)
    use_sandbox, note = not args.no_sandbox, ""
    if use_sandbox:
        path = bwrap.bwrap_path()
        ok, why = bwrap.bwrap_works(path) if path else (False, "bubblewrap is not installed")
        if not ok:
            # Gradescope's container often forbids namespaces. The container is itself a throwaway sandbox for
            # this one submission; inside it, the child still runs as an unprivileged uid with resource limits,
            # so it cannot write results.json or read the autograder's files (run_autograder makes them root-only).
            use_sandbox = False
            _warn(M.translator("en")(M.GS_NO_BWRAP, why=why[:200]))
            note = t(M.GS_NO_BWRAP, why=why[:200])
    with tempfile.TemporaryDirectory(prefix="qkv-gradescope-") as tmp:
        subs = Path(tmp) / "subs" / "submission"
        subs.mkdir(parents=True)
        if src.is_file():
            shutil.copy(src, subs / f"{lab.lab}.ipynb")
        else:
            for p in src.rglob("*.ipynb"):
                if (
                    not any(part.startswith(".") for part in p.relative_to(src).parts)
                    and p.is_file()
                    and not p.is_symlink()
                ):
                    dest = subs / p.relative_to(src)
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy(p, dest)
        results = run_batch(
            args.lab,
            subs.parent,
            Path(tmp) / "out",
            course=args.course,
            jobs=1,
            limits=Limits.of(args.timeout, args.memory, args.call_timeout),
            fresh=True,
            use_sandbox=use_sandbox,
            seed=args.seed,
            log=log,
        )
    write_atomic(args.out / "results.json", reports.gradescope_json(results[0], lab, note, t))
    log(f"results.json written to {args.out}: {json.loads((args.out / 'results.json').read_text())['score']:g} points")
    return 0


def _bundle(args: argparse.Namespace) -> int:
    try:
        path = build_bundle(
            args.lab,
            args.course,
            args.out or Path(f"{args.lab}-gradescope.zip"),
            limits=Limits.of(args.timeout, args.memory),
            lang=args.lang,
        )
    except GradeError as err:
        print(f"qkv gradescope-bundle: error: {err}", file=sys.stderr)
        return 2
    print(f"wrote {path}: upload it as the autograder of the Gradescope assignment for {args.lab}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    os.execvp(sys.executable, [sys.executable, "-m", "qkv.cli", *sys.argv[1:]])
