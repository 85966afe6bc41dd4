"""``qkv grade`` and ``qkv gradescope-bundle`` (their arguments are in ``arguments``), and :func:`run_batch`, which
wires the layers: the lab, the batch of submissions, the reports.

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
from .batch import grade_folder
from .gradebook import record_grades
from .gradescope import build_bundle
from .jobs import Limits
from .lab import GradeError, load_lab
from .results import Result

__all__ = ["bundle", "grade", "run_batch"]


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


def _warn(msg: str) -> None:
    print(f"qkv grade: warning: {msg}", file=sys.stderr)


def grade(args: argparse.Namespace) -> int:
    """``qkv grade`` (its arguments: ``arguments.add_parsers``)."""
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


def bundle(args: argparse.Namespace) -> int:
    """``qkv gradescope-bundle``."""
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
