"""The ``qkv`` command: ``qkv labs`` regenerates or checks the labs; ``qkv workspace`` copies them for a student;
``qkv student-dist`` writes what students may see (for a JupyterHub with nbgitpuller); ``qkv course init`` adds
the labs to an nbgrader course; ``qkv grade`` grades submissions in a sandbox; ``qkv gradescope-bundle`` builds
a Gradescope autograder; ``qkv check`` shows a student their score before they submit."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import labs


def _labs(args: argparse.Namespace) -> int:
    from .grading.lab import records  # what `qkv check` reads where there is no course (the package's records)

    if args.check:
        problems = labs.check(args.course)
        for path, text in records(args.course).items():
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                problems.append(f"{path}: not the record of the solutions and labs (run `qkv labs`)")
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
    for path, text in records(args.course).items():
        path.write_text(text, encoding="utf-8")
    return 0


def _workspace(args: argparse.Namespace) -> int:
    try:
        done = labs.copy_workspace(args.course, args.dest, update=args.update, edition=args.edition)
    except (ValueError, FileExistsError) as err:
        print(f"qkv workspace: error: {err}", file=sys.stderr)
        return 2
    print(f"{len(done.copied)} new file(s) in {args.dest}; existing copies were left untouched")
    for path in done.written:
        print(f"the lab's new version is in {path}, next to your copy (which is unchanged): move your answers over")
    for lab, paths in done.updated.items():
        print(
            f"NOTICE: the lab {lab} was updated in the course since you copied it. Your copy "
            f"{', '.join(map(str, paths))} is untouched. To get the new version next to it "
            f"({labs.new_name(paths[0]).name}), run:\n    {_self()} workspace {args.dest} --update {lab}"
        )
    return 0


def _self() -> str:
    """How to call this same ``qkv`` again: ``python -m qkv.cli`` with this interpreter (short when under the cwd)."""
    exe = Path(sys.executable)
    try:
        exe = exe.relative_to(Path.cwd())
    except ValueError:
        pass
    return f"{exe} -m qkv.cli"


def _student_dist(args: argparse.Namespace) -> int:
    from .course import student_dist

    try:
        files = student_dist(
            args.course, args.dest, branch=args.branch, repo=args.repo, hub=args.hub, qkv_ref=args.qkv_ref
        )
    except (FileExistsError, FileNotFoundError) as err:
        print(f"qkv student-dist: error: {err}", file=sys.stderr)
        return 2
    print(
        f"wrote {len(files)} files into {args.dest} (labs, chapters, README.md, requirements.txt; no solutions). "
        f"Commit them on the branch {args.branch!r} and push it for nbgitpuller."
    )
    return 0


def _ask(question: str) -> bool:
    if not sys.stdin.isatty():
        return False
    return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")


def _course_init(args: argparse.Namespace) -> int:
    from .course import course_init

    try:
        done = course_init(args.course, args.dir, args.labs or None, yes=args.yes, ask=_ask)
    except (FileNotFoundError, ValueError) as err:
        print(f"qkv course init: error: {err}", file=sys.stderr)
        return 2
    for what, labs_ in (("copied into the course", done.copied), ("already there, unchanged", done.current)):
        if labs_:
            print(f"{what}: {', '.join(labs_)}")
    if done.settings:
        print(
            f"nbgrader_config.py: wrote {len(done.settings)} setting(s) in the qkv block: " + "; ".join(done.settings)
        )
    if done.kept:
        print(
            f"left as they were (they differ from the qkv solutions; --yes replaces them): {', '.join(done.kept)}",
            file=sys.stderr,
        )
    if done.declined:
        print(
            "not written to nbgrader_config.py (--yes writes them); without them the releases differ from labs/: "
            + "; ".join(done.declined),
            file=sys.stderr,
        )
    if done.kept or done.declined:
        return 1
    print(f"release a lab with: cd {args.dir} && nbgrader generate_assignment LAB")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="qkv", description="Tools for the qkv course.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("labs", help="generate labs/ from solutions/ with nbgrader, or --check that they match")
    p.add_argument("ids", nargs="*", help="lab ids (default: every lab)")
    p.add_argument("--check", action="store_true", help="regenerate in a temporary folder and compare bytes")
    p.add_argument(
        "--edition",
        choices=[*labs.EDITIONS, "all"],
        default="all",
        help="which edition to generate: en (labs/), zh (labs/zh/, translated from locales/), all (default)",
    )
    p.add_argument("--course", type=Path, default=Path.cwd(), help="course root (default: current folder)")
    p.set_defaults(func=_labs)

    p = sub.add_parser("workspace", help="copy the labs into a folder of your own, never overwriting your work")
    p.add_argument("dest", type=Path, help="where your copies go, e.g. work/")
    p.add_argument(
        "--update",
        nargs="+",
        metavar="LAB",
        default=[],
        help="write the course's newer version of these labs next to your copy as <lab>.new.ipynb",
    )
    p.add_argument("--edition", choices=list(labs.EDITIONS), default="en", help="the labs' language (default: en)")
    p.add_argument("--course", type=Path, default=Path.cwd(), help="course root (default: current folder)")
    p.set_defaults(func=_workspace)

    p = sub.add_parser(
        "student-dist", help="write what students may see (labs, chapters; no solutions) into a folder, for nbgitpuller"
    )
    p.add_argument("dest", type=Path, help="an empty folder, or one written by student-dist before (its .git is kept)")
    p.add_argument(
        "--branch", default="student", help="the branch you will push it as, named in its README (default: student)"
    )
    p.add_argument(
        "--repo",
        help="the repository you push it to, for the README's nbgitpuller link (default: the folder's git remote "
        "origin, else repository.url of _config.yml)",
    )
    p.add_argument("--hub", default="https://YOUR-HUB", help="your JupyterHub's URL, for the README's link")
    p.add_argument(
        "--qkv-ref",
        help="the tag or commit of qkv that requirements.txt pins (default: this checkout's commit)",
    )
    p.add_argument("--course", type=Path, default=Path.cwd(), help="course root (default: current folder)")
    p.set_defaults(func=_student_dist)

    p = sub.add_parser("course", help="an nbgrader course: `qkv course init DIR` adds the labs to it")
    course_sub = p.add_subparsers(dest="action", required=True)
    p = course_sub.add_parser(
        "init", help="copy the labs' sources into an existing nbgrader course and set what nbgrader needs"
    )
    p.add_argument("dir", type=Path, help="the nbgrader course's root (holds nbgrader_config.py)")
    p.add_argument("labs", nargs="*", help="lab ids (default: every lab)")
    p.add_argument(
        "--yes", action="store_true", help="replace differing lab sources and write the settings without asking"
    )
    p.add_argument("--course", type=Path, default=Path.cwd(), help="the qkv course root (default: current folder)")
    p.set_defaults(func=_course_init)

    from .grading.arguments import add_parsers  # `qkv grade` and `qkv gradescope-bundle`

    add_parsers(sub)
    from .check import add_parser as add_check  # `qkv check`

    add_check(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
