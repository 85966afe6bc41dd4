"""Grader throughput: `qkv grade` against `nbgrader autograde` on the same submissions, in one run.

    .venv/bin/python benchmarks/grader.py [--n 100] [--lab soft_lookup] [--jobs 2]

Builds N submissions of one lab (solutions, blank labs and solutions with a planted bug, in a fixed mix),
grades them with `qkv grade` (sandboxed, pre-started workers that fork a child per submission) and with
nbgrader's own `nbgrader autograde` (a fresh kernel per notebook) one after the other, checks that both give
the same autograded totals, prints a table and writes benchmarks/results/grader.json. Not a timed test.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, machine, table, write_json  # noqa: E402

from qkv.grading.testing import COURSE, solution_notebook, with_function  # noqa: E402

BUG = """
def stable_softmax(scores):
    e = torch.exp(scores)
    return e / e.sum(dim=-1, keepdim=True)
"""


def make_submissions(lab: str, n: int, folder: Path) -> None:
    solution = json.dumps(solution_notebook(lab))
    blank = (COURSE / "labs" / lab / f"{lab}.ipynb").read_text()
    buggy = json.dumps(with_function(solution_notebook(lab), "stable_softmax", BUG)) if lab == "soft_lookup" else solution
    for i in range(n):
        text = (solution, blank, buggy)[i % 3]
        dest = folder / f"student{i:03d}" / lab
        dest.mkdir(parents=True)
        (dest / f"{lab}.ipynb").write_text(text)


def run_qkv(lab: str, subs: Path, out: Path, jobs: int) -> tuple[float, dict[str, float], list[dict]]:
    cmd = [sys.executable, "-m", "qkv.cli", "grade", lab, str(subs), "--out", str(out), "--course", str(COURSE),
           "--jobs", str(jobs), "--quiet", "--seed", "1"]  # fmt: skip
    start = time.perf_counter()
    subprocess.run(cmd, check=True)
    wall = time.perf_counter() - start
    totals = {}
    import csv

    with open(out / "grades.csv", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            totals[row["student"]] = float(row["total"])
    results = [json.loads(p.read_text()) for p in (out / "results").glob("*.json")]
    return wall, totals, results


def run_nbgrader(lab: str, subs: Path, course: Path) -> tuple[float, dict[str, float]]:
    (course / "source" / lab).mkdir(parents=True)
    shutil.copy(COURSE / "solutions" / lab / f"{lab}.ipynb", course / "source" / lab)
    shutil.copytree(subs, course / "submitted")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}

    def nbgrader(*args: str) -> None:
        cmd = [sys.executable, "-m", "nbgrader", *args, f"--CourseDirectory.root={course}"]
        subprocess.run(cmd, cwd=course, check=True, env=env, capture_output=True)

    nbgrader("db", "assignment", "add", lab)
    nbgrader("generate_assignment", lab, "--force")
    start = time.perf_counter()
    nbgrader("autograde", lab, "--force")
    wall = time.perf_counter() - start
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        totals = {s.student.id: float(s.code_score) for s in gb.assignment_submissions(lab)}
    return wall, totals


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100, help="submissions (default 100)")
    ap.add_argument("--lab", default="soft_lookup")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="qkv grade --jobs (default: every core)")
    ap.add_argument("--json", type=Path, default=RESULTS / "grader.json")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-grader-") as tmp:
        tmp = Path(tmp)
        subs = tmp / "submissions"
        make_submissions(args.lab, args.n, subs)
        one = tmp / "one"
        shutil.copytree(subs / "student000", one / "student000")
        one_wall, _, _ = run_qkv(args.lab, one, tmp / "qkv-one", args.jobs)  # the fixed cost: start-up and reports
        qkv_wall, qkv_totals, results = run_qkv(args.lab, subs, tmp / "qkv-out", args.jobs)
        nb_wall, nb_totals = run_nbgrader(args.lab, subs, tmp / "nbgrader-course")

    child = sorted(r["wall"] for r in results if r.get("wall"))
    agree = sum(qkv_totals.get(s) == t for s, t in nb_totals.items())
    rows = [
        {"tool": "qkv grade (bubblewrap, forked workers)", "n": args.n, "wall": qkv_wall, "per": qkv_wall / args.n,
         "rate": args.n / qkv_wall * 60},
        {"tool": "nbgrader autograde", "n": args.n, "wall": nb_wall, "per": nb_wall / args.n, "rate": args.n / nb_wall * 60},
    ]  # fmt: skip
    print(table(rows, [("tool", "grader", "s"), ("n", "submissions", "d"), ("wall", "wall s", ".1f"),
                       ("per", "s / submission", ".2f"), ("rate", "per minute", ".0f")]))  # fmt: skip
    ratio = nb_wall / qkv_wall
    marginal = (qkv_wall - one_wall) / max(args.n - 1, 1)
    print(f"\nthroughput ratio qkv/nbgrader: {ratio:.1f}x   (goal: at least 3x)")
    print(f"totals agree on {agree} of {len(nb_totals)} submissions")
    if child:
        print(f"where qkv's time goes: {one_wall:.1f} s fixed (grading 1 submission: Python and torch start-up, one "
              f"sandboxed worker per job importing torch, reports), then {marginal:.2f} s per further submission "
              f"({args.jobs} jobs); a submission's forked child runs {child[len(child) // 2]:.2f} s (median: fork, "
              f"limits, its cells, the calls, cleanup)")  # fmt: skip
    write_json(args.json, {"machine": machine(), "lab": args.lab, "n": args.n, "jobs": args.jobs,
                           "qkv_wall_s": qkv_wall, "nbgrader_wall_s": nb_wall, "ratio": ratio,
                           "qkv_one_submission_wall_s": one_wall, "qkv_marginal_s": marginal,
                           "load_average_after": os.getloadavg(),
                           "qkv_child_median_s": child[len(child) // 2] if child else None,
                           "qkv_child_total_s": sum(child), "totals_agree": agree, "submissions_compared": len(nb_totals)})  # fmt: skip
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
