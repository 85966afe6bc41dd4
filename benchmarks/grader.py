"""Grader throughput on every lab: `qkv grade` against `nbgrader autograde` on the same submissions, in one run.

    .venv/bin/python benchmarks/grader.py [--n 4] [--labs soft_lookup,masks] [--jobs 2]

For each lab, builds N submissions as students hand them in (the released lab completed with the solution,
the blank lab, and the lab with its first exercise left unfinished, in turn), grades them with `qkv grade`
(sandboxed, pre-started workers that fork a child per submission) and with nbgrader's own `nbgrader
autograde` (a fresh kernel per notebook) one after the other, checks that both give the same autograded
totals, prints a table and writes benchmarks/results/grader.json. Not a timed test.

qkv's wall time holds a fixed cost per command (Python and torch start-up, one sandboxed worker per job
importing torch, the reports) that a few submissions do not amortise: "ratio wall" (nbgrader's wall time over
qkv's, on the same submissions) counts it; "ratio per sub" compares the cost of one more submission:
nbgrader's wall time per submission against qkv's forked child (the mean over the same submissions, as
nbgrader's is) shared among the jobs. The ratio per submission is nbgrader's wall time per submission over qkv's.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, machine, table, write_json

from qkv.grading.results import Result
from qkv.grading.spec import load_spec
from qkv.grading.testing import COURSE, completed_lab
from qkv.labs import lab_ids

LABS = lab_ids(COURSE)  # labs/ also holds labs/zh/, the Chinese edition: not a lab


def unfinished_first(lab: str) -> dict:
    """The completed lab with its first exercise's cell left as released (it still raises NotImplementedError)."""
    nb = completed_lab(lab)
    released = json.loads((COURSE / "labs" / lab / f"{lab}.ipynb").read_text(encoding="utf-8"))
    first = load_spec(lab).autograded[0].function
    pattern = re.compile(rf"^(def|class)\s+{re.escape(first)}\b", re.M)
    for mine, blank in zip(nb["cells"], released["cells"]):
        if mine["cell_type"] == "code" and pattern.search("".join(blank["source"])):
            mine["source"] = blank["source"]
            break
    return nb


def make_submissions(lab: str, n: int, folder: Path) -> None:
    blank = (COURSE / "labs" / lab / f"{lab}.ipynb").read_text(encoding="utf-8")
    kinds = (json.dumps(completed_lab(lab)), blank, json.dumps(unfinished_first(lab)))
    for i in range(n):
        dest = folder / f"student{i:03d}" / lab
        dest.mkdir(parents=True)
        (dest / f"{lab}.ipynb").write_text(kinds[i % 3], encoding="utf-8")


def run_qkv(lab: str, subs: Path, out: Path, jobs: int) -> tuple[float, dict[str, float], list[dict]]:
    cmd = [
        sys.executable,
        "-m",
        "qkv.cli",
        "grade",
        lab,
        str(subs),
        "--out",
        str(out),
        "--course",
        str(COURSE),
        "--jobs",
        str(jobs),
        "--quiet",
        "--seed",
        "1",
    ]
    start = time.perf_counter()
    subprocess.run(cmd, check=True)
    wall = time.perf_counter() - start
    with open(out / "grades.csv", encoding="utf-8") as f:
        totals = {row["student"]: float(row["total"]) for row in csv.DictReader(f)}
    results = [Result.from_json(json.loads(p.read_text())) for p in (out / "results").glob("*.json")]
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


def bench_lab(lab: str, n: int, jobs: int, tmp: Path) -> dict:
    subs = tmp / lab / "submissions"
    make_submissions(lab, n, subs)
    qkv_wall, qkv_totals, results = run_qkv(lab, subs, tmp / lab / "qkv-out", jobs)
    nb_wall, nb_totals = run_nbgrader(lab, subs, tmp / lab / "nbgrader-course")
    child = sorted(r.wall for r in results if r.wall)
    # the mean, like nbgrader's wall / n: the submissions are of three kinds, and a median picks one kind
    qkv_per = max(sum(child) / len(child) / jobs if child else qkv_wall / n, 1e-3)
    return {
        "lab": lab,
        "n": n,
        "qkv_wall_s": qkv_wall,
        "qkv_per_submission_s": qkv_per,
        "qkv_child_median_s": child[len(child) // 2] if child else None,
        "qkv_child_mean_s": sum(child) / len(child) if child else None,
        "nbgrader_wall_s": nb_wall,
        "nbgrader_per_submission_s": nb_wall / n,
        "ratio_wall": nb_wall / qkv_wall,
        "ratio_per_submission": (nb_wall / n) / qkv_per,
        "totals_agree": sum(qkv_totals.get(s) == t for s, t in nb_totals.items()),
        "compared": len(nb_totals),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=3, help="submissions per lab (default 3)")
    ap.add_argument("--labs", default=",".join(LABS), help="comma-separated lab ids (default: every lab)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="qkv grade --jobs (default: every core)")
    ap.add_argument("--json", type=Path, default=RESULTS / "grader.json")
    args = ap.parse_args()

    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-grader-") as tmp:
        for lab in args.labs.split(","):
            rows.append(bench_lab(lab, args.n, args.jobs, Path(tmp)))
            r = rows[-1]
            print(
                f"{lab}: qkv {r['qkv_per_submission_s']:.2f} s/sub, nbgrader {r['nbgrader_per_submission_s']:.2f} "
                f"s/sub, ratio per sub {r['ratio_per_submission']:.1f}, ratio wall {r['ratio_wall']:.1f}",
                file=sys.stderr,
                flush=True,
            )
    print(
        table(
            rows,
            [
                ("lab", "lab", "s"),
                ("n", "subs", "d"),
                ("qkv_wall_s", "qkv wall s", ".1f"),
                ("qkv_per_submission_s", "qkv s/sub", ".2f"),
                ("nbgrader_wall_s", "nbgrader wall s", ".1f"),
                ("nbgrader_per_submission_s", "nbgrader s/sub", ".2f"),
                ("ratio_wall", "ratio wall", ".1f"),
                ("ratio_per_submission", "ratio per sub", ".1f"),
                ("totals_agree", "totals agree", "d"),
            ],
        )
    )
    heavy = next((r for r in rows if r["lab"] == "tiny_transformer"), None)
    if heavy:
        print(
            f"\nheaviest lab, tiny_transformer: qkv {heavy['qkv_per_submission_s']:.2f} s per submission "
            f"(child mean {heavy['qkv_child_mean_s']:.2f} s) against nbgrader's "
            f"{heavy['nbgrader_per_submission_s']:.2f} s"
        )
    below = [r["lab"] for r in rows if r["ratio_per_submission"] < 10]
    print(f"goal: at least 10x nbgrader per submission on every lab; below it: {', '.join(below) or 'none'}")
    write_json(
        args.json,
        {
            "machine": machine(),
            "jobs": args.jobs,
            "n_per_lab": args.n,
            "labs": rows,
            "load_average_after": os.getloadavg(),
        },
    )
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
