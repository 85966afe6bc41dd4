"""``qkv check LAB NOTEBOOK`` against ``nbgrader validate NOTEBOOK`` on each lab's solution-filled notebook, side by
side in one run, interleaved.

    .venv/bin/python benchmarks/check_vs_validate.py [--labs soft_lookup,masks] [--reps 3] [--profile] [--before DIR]

For each lab, the released lab completed with the solution (as a student hands it in) is written to a folder;
each repetition runs the commands on it, one after the other, the order alternating between repetitions, as
a student runs them (fresh processes, from the course root): ``qkv check`` as a later check of the student's
session (answered by the resident checker the session's first check left, ``qkv.checkserver``), ``qkv check``
as the session's first check (no checker: ``QKV_CHECK_SERVER=0``), and ``nbgrader validate``. Each must say the
notebook is right: qkv check full autograded points, nbgrader validate "Success". Prints a table (the minimum
and median of the repetitions and the ratios of the minima, check / validate; issue 19's target: below 0.25)
and writes
benchmarks/results/check_vs_validate.json with the machine and its load. ``--profile`` also times the phases
of one cold ``qkv check`` per lab, in a fresh interpreter; ``--before DIR`` also times, in the same rotation, the
``qkv check`` of another checkout (the code before a change). Each check runs this checkout's ``src`` (or DIR's).
Not a test.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
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
from _common import RESULTS, machine, median, table, write_json

COURSE = Path(__file__).resolve().parents[1]  # qkv is imported only where needed: --phases-of times its import
BIN = Path(sys.executable).parent


def run_check(lab: str, nb: Path, course: Path = COURSE, resident: bool = False) -> tuple[float, bool, str]:
    """``qkv check`` as ``course``'s code has it (another checkout: the code before a change). ``resident``: a
    later check of the student's session, answered by the resident checker (``qkv.checkserver``) that the
    session's first check left; else every check by itself, as the session's first check is."""
    cmd = [sys.executable, "-m", "qkv.cli", "check", lab, str(nb), "--course", str(course)]
    env = dict(os.environ, PYTHONPATH=str(course / "src"), QKV_CHECK_SERVER="600" if resident else "0")
    start = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=course, env=env)
    wall = time.perf_counter() - start
    m = re.search(r"total: ([\d.]+) / ([\d.]+)", p.stdout)
    return wall, bool(p.returncode == 0 and m and m.group(1) == m.group(2)), (p.stdout + p.stderr)[-300:]


def run_validate(nb: Path) -> tuple[float, bool, str]:
    cmd = [str(BIN / "nbgrader"), "validate", str(nb)]
    start = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=COURSE)
    wall = time.perf_counter() - start
    return wall, "Success" in p.stdout, (p.stdout + p.stderr)[-300:]


def profile(lab: str, nb: Path) -> dict[str, float]:
    """Seconds of each phase of one ``qkv check``, cold, in a fresh interpreter as a student's (``--phases-of``)."""
    cmd = [sys.executable, __file__, "--phases-of", lab, str(nb)]
    start = time.perf_counter()
    p = subprocess.run(
        cmd, capture_output=True, text=True, cwd=COURSE, env=dict(os.environ, PYTHONPATH=str(COURSE / "src"))
    )
    wall = time.perf_counter() - start
    if p.returncode != 0:
        raise RuntimeError(f"--phases-of {lab} failed: {p.stderr[-2000:]}")
    spent = json.loads(p.stdout.splitlines()[-1])
    spent["the interpreter's start and exit"] = wall - sum(spent.values())
    spent["in all (wall)"] = wall
    return spent


def phases_of(lab: str, nb: Path) -> dict[str, float]:
    """The phases of ``qkv check`` (its CLI) in this (fresh) process; its imports first (torch comes with ``qkv``)."""
    spent: dict[str, float] = {}
    t = time.perf_counter()
    import qkv.cli  # what `qkv check` imports before it does anything

    spent["import qkv and its CLI (torch with it)"] = time.perf_counter() - t
    t = time.perf_counter()
    from qkv.grading import batch, command, reports, sandbox

    spent["import the grader"] = time.perf_counter() - t

    def wrap(owner, name: str, label: str) -> None:
        f = getattr(owner, name)

        @functools.wraps(f)
        def timed(*a, **k):
            t = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                spent[label] = spent.get(label, 0.0) + time.perf_counter() - t

        setattr(owner, name, timed)

    wrap(command, "load_lab", "load the lab")
    wrap(batch, "prepare", "prepare the cases")
    wrap(sandbox, "make_lib", "copy the library")
    wrap(batch, "grade_entry", "grade the notebook")
    wrap(sandbox.Worker, "start", "start the worker (fork, preloads)")
    wrap(sandbox.Worker, "run", "run the notebook (the child)")
    wrap(sandbox.Worker, "stop", "stop the worker")
    wrap(reports, "write_all", "write the reports")
    t = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # the report; the last line printed is the JSON
        assert qkv.cli.main(["check", lab, str(nb), "--course", str(Path.cwd())]) == 0
    total = time.perf_counter() - t
    # the spans nest: grade_entry runs the worker, whose run() starts it
    spent["run the notebook (the child)"] -= spent["start the worker (fork, preloads)"]
    spent["grade the notebook"] -= spent["run the notebook (the child)"] + spent["start the worker (fork, preloads)"]
    spent["the rest of qkv check (its report)"] = total - sum(v for k, v in spent.items() if not k.startswith("import"))
    return spent


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--labs", help="comma-separated lab ids (default: every lab)")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--profile", action="store_true", help="also time the phases of a cold qkv check per lab")
    p.add_argument(
        "--before",
        type=Path,
        help="also time qkv check of this checkout (e.g. `git worktree add /tmp/before main`), side by side",
    )
    p.add_argument("--phases-of", nargs=2, metavar=("LAB", "NOTEBOOK"), help=argparse.SUPPRESS)
    p.add_argument("--out", type=Path, default=RESULTS / "check_vs_validate.json")
    args = p.parse_args()
    if args.phases_of:  # one cold check, its phases as JSON on the last line (run by profile())
        print(json.dumps(phases_of(args.phases_of[0], Path(args.phases_of[1]))))
        return
    from qkv.grading.testing import completed_lab
    from qkv.labs import lab_ids

    labs = args.labs.split(",") if args.labs else lab_ids(COURSE)
    load_before = os.getloadavg()
    kinds = ["check", "check_cold", "validate"] + ["check_before"] * bool(args.before)
    # The resident checker of this run: its own socket folder, removed at the end (the checker then leaves).
    runtime = tempfile.mkdtemp(prefix="check-vs-validate-run-")
    os.environ["XDG_RUNTIME_DIR"] = runtime
    times: dict[str, dict[str, list[float]]] = {lab: {kind: [] for kind in kinds} for lab in labs}
    failures = []
    with tempfile.TemporaryDirectory(prefix="check-vs-validate-") as tmp:
        notebooks = {}
        for lab in labs:
            notebooks[lab] = Path(tmp) / lab / f"{lab}.ipynb"
            notebooks[lab].parent.mkdir()
            notebooks[lab].write_text(json.dumps(completed_lab(lab)), encoding="utf-8")
        run_check(labs[0], notebooks[labs[0]], resident=True)  # the session's first check leaves the checker
        for rep in range(args.reps):
            for lab in labs:
                runs = [
                    ("check", lambda: run_check(lab, notebooks[lab], resident=True)),
                    ("check_cold", lambda: run_check(lab, notebooks[lab])),
                    ("validate", lambda: run_validate(notebooks[lab])),
                ]
                if args.before:
                    runs.insert(1, ("check_before", lambda: run_check(lab, notebooks[lab], args.before.resolve())))
                for kind, fn in runs if rep % 2 == 0 else runs[::-1]:
                    wall, ok, tail = fn()
                    times[lab][kind].append(wall)
                    if not ok:
                        failures.append(f"{lab} {kind}: did not pass the solution: {tail}")
                    print(f"rep {rep} {lab:16} {kind:8} {wall:6.1f} s {'ok' if ok else 'FAILED'}", flush=True)
        phases = {lab: profile(lab, notebooks[lab]) for lab in labs} if args.profile else {}
    shutil.rmtree(runtime)
    rows = [
        {
            "lab": lab,
            "check_min": min(t["check"]),
            "check_median": median(t["check"]),
            "validate_min": min(t["validate"]),
            "validate_median": median(t["validate"]),
            "ratio": min(t["check"]) / min(t["validate"]),
            "cold_min": min(t["check_cold"]),
            "cold_ratio": min(t["check_cold"]) / min(t["validate"]),
            **(
                {"before_min": min(t["check_before"]), "before_ratio": min(t["check_before"]) / min(t["validate"])}
                if args.before
                else {}
            ),
        }
        for lab, t in times.items()
    ]
    cols = [("lab", "lab", ""), ("check_min", "check min s", ".1f"), ("check_median", "median", ".1f"),
            ("validate_min", "validate min s", ".1f"), ("validate_median", "median", ".1f"),
            ("ratio", "check/validate", ".2f"), ("cold_min", "first check min s", ".1f"),
            ("cold_ratio", "first/validate", ".2f")]  # fmt: skip
    if args.before:
        cols += [("before_min", "before: check min s", ".1f"), ("before_ratio", "before: check/validate", ".2f")]
    print("\n" + table(rows, cols))
    for lab, spent in phases.items():
        print(f"\n{lab}: the phases of a cold qkv check (a fresh interpreter)")
        for label, s in spent.items():
            print(f"  {s:6.2f} s  {label}")
    for f in failures:
        print("FAILED:", f)
    payload = {"machine": machine(), "load_before": load_before, "load_after": os.getloadavg(), "reps": args.reps,
               "before": str(args.before) if args.before else None,
               "rows": rows, "times": times, "phases": phases, "failures": failures}  # fmt: skip
    print(f"wrote {write_json(args.out, payload)}")


if __name__ == "__main__":
    main()
