"""The ``qkv`` command: ``qkv labs`` regenerates or checks the labs; ``qkv workspace`` copies them for a student;
``qkv grade`` grades submissions in a sandbox; ``qkv gradescope-bundle`` builds a Gradescope autograder;
``qkv check`` shows a student their score before they submit."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import labs


def _labs(args: argparse.Namespace) -> int:
    if args.check:
        problems = labs.check(args.course)
        for line in problems:
            print(line, file=sys.stderr)
        if not problems:
            print(f"labs/ and labs/zh/ match the solutions ({len(labs.lab_ids(args.course))} labs each)")
        return 1 if problems else 0
    editions = list(labs.EDITIONS) if args.edition == "all" else [args.edition]
    for edition in editions:
        labs.generate(args.course, args.ids or None, edition=edition)
        folder = Path(args.course) / labs.EDITIONS[edition][0]
        print(f"generated {', '.join(args.ids or labs.lab_ids(args.course))} into {folder}")
    return 0


def _workspace(args: argparse.Namespace) -> int:
    copied = labs.copy_workspace(args.course, args.dest, edition=args.edition)
    print(f"{len(copied)} new file(s) in {args.dest}; existing copies were left untouched")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="qkv", description="Tools for the qkv course.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("labs", help="generate labs/ from solutions/ with nbgrader, or --check that they match")
    p.add_argument("ids", nargs="*", help="lab ids (default: every lab)")
    p.add_argument("--check", action="store_true", help="regenerate in a temporary folder and compare bytes")
    p.add_argument("--edition", choices=[*labs.EDITIONS, "all"], default="all",
                   help="which edition to generate: en (labs/), zh (labs/zh/, translated from locales/), all (default)")
    p.add_argument("--course", type=Path, default=Path.cwd(), help="course root (default: current folder)")
    p.set_defaults(func=_labs)

    p = sub.add_parser("workspace", help="copy the labs into a folder of your own, never overwriting your work")
    p.add_argument("dest", type=Path, help="where your copies go, e.g. work/")
    p.add_argument("--edition", choices=list(labs.EDITIONS), default="en", help="the labs' language (default: en)")
    p.add_argument("--course", type=Path, default=Path.cwd(), help="course root (default: current folder)")
    p.set_defaults(func=_workspace)

    from .grading.command import add_parsers  # `qkv grade` and `qkv gradescope-bundle`

    add_parsers(sub)
    from .check import add_parser as add_check  # `qkv check`

    add_check(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
