"""``qkv check LAB NOTEBOOK`` against ``nbgrader validate NOTEBOOK`` on each lab's solution-filled notebook, side by
side in one run, interleaved.

    .venv/bin/python benchmarks/check_vs_validate.py [--labs soft_lookup,masks] [--reps 3] [--profile]

For each lab, the released lab completed with the solution (as a student hands it in) is written to a folder;
each repetition runs both commands on it, one after the other, the order alternating between repetitions, as
a student runs them (fresh processes, from the course root). Both must say the notebook is right: qkv check
full autograded points, nbgrader validate "Success". Prints a table (the minimum and median of the repetitions
and the ratio of the minima, check / validate; issue 19's target: below 0.25) and writes
benchmarks/results/check_vs_validate.json with the machine and its load. ``--profile`` also times the phases
of one ``qkv check`` in this process (the worker's start is most of it). Not a test.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, machine, median, table, write_json

from qkv.grading.testing import COURSE, completed_lab
from qkv.labs import lab_ids

LABS = lab_ids(COURSE)
BIN = Path(sys.executable).parent


def run_check(lab: str, nb: Path) -> tuple[float, bool, str]:
    cmd = [sys.executable, "-m", "qkv.cli", "check", lab, str(nb), "--course", str(COURSE)]
    start = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=COURSE)
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
    """Seconds of each phase of one ``qkv check`` run in this process (torch is already imported here)."""
    from qkv.check import check_notebook
    from qkv.grading import batch, command, reports, sandbox

    spent: dict[str, float] = {}
    originals = []

    def wrap(owner, name: str, label: str) -> None:
        f = getattr(owner, name)
        originals.append((owner, name, f))

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
    wrap(sandbox.Worker, "start", "start the worker (interpreter, torch, preloads)")
    wrap(sandbox.Worker, "run", "run the notebook (the child; a worker started late included)")
    wrap(sandbox.Worker, "stop", "stop the worker")
    wrap(reports, "write_all", "write the reports")
    t = time.perf_counter()
    try:
        check_notebook(lab, nb, course=COURSE)
    finally:
        for owner, name, f in originals:
            setattr(owner, name, f)
    spent["check_notebook, in all"] = time.perf_counter() - t
    return spent


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--labs", default=",".join(LABS))
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--profile", action="store_true", help="also time the phases of qkv check (in this process)")
    p.add_argument("--out", type=Path, default=RESULTS / "check_vs_validate.json")
    args = p.parse_args()
    labs = args.labs.split(",")
    load_before = os.getloadavg()
    times: dict[str, dict[str, list[float]]] = {lab: {"check": [], "validate": []} for lab in labs}
    failures = []
    with tempfile.TemporaryDirectory(prefix="check-vs-validate-") as tmp:
        notebooks = {}
        for lab in labs:
            notebooks[lab] = Path(tmp) / lab / f"{lab}.ipynb"
            notebooks[lab].parent.mkdir()
            notebooks[lab].write_text(json.dumps(completed_lab(lab)), encoding="utf-8")
        for rep in range(args.reps):
            for lab in labs:
                runs = [
                    ("check", lambda: run_check(lab, notebooks[lab])),
                    ("validate", lambda: run_validate(notebooks[lab])),
                ]
                for kind, fn in runs if rep % 2 == 0 else runs[::-1]:
                    wall, ok, tail = fn()
                    times[lab][kind].append(wall)
                    if not ok:
                        failures.append(f"{lab} {kind}: did not pass the solution: {tail}")
                    print(f"rep {rep} {lab:16} {kind:8} {wall:6.1f} s {'ok' if ok else 'FAILED'}", flush=True)
        phases = {lab: profile(lab, notebooks[lab]) for lab in labs} if args.profile else {}
    rows = [
        {
            "lab": lab,
            "check_min": min(t["check"]),
            "check_median": median(t["check"]),
            "validate_min": min(t["validate"]),
            "validate_median": median(t["validate"]),
            "ratio": min(t["check"]) / min(t["validate"]),
        }
        for lab, t in times.items()
    ]
    cols = [("lab", "lab", ""), ("check_min", "check min s", ".1f"), ("check_median", "median", ".1f"),
            ("validate_min", "validate min s", ".1f"), ("validate_median", "median", ".1f"),
            ("ratio", "check/validate", ".2f")]  # fmt: skip
    print("\n" + table(rows, cols))
    for lab, spent in phases.items():
        print(f"\n{lab}: qkv check's phases (in this process, torch already imported)")
        for label, s in spent.items():
            print(f"  {s:6.2f} s  {label}")
    for f in failures:
        print("FAILED:", f)
    payload = {"machine": machine(), "load_before": load_before, "load_after": os.getloadavg(), "reps": args.reps,
               "rows": rows, "times": times, "phases": phases, "failures": failures}  # fmt: skip
    print(f"wrote {write_json(args.out, payload)}")


if __name__ == "__main__":
    main()
