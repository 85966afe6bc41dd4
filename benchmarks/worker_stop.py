"""How long `Worker.stop` takes: the grader closes a worker's stdin and waits for the worker to end.

    .venv/bin/python benchmarks/worker_stop.py [--n 3] [--no-sandbox]

Starts a worker (in bubblewrap unless --no-sandbox), grades one small job with it, then times `stop()`;
N times. A worker that finds end of file on its stdin leaves with `os._exit(0)`: each job already cleaned up
after itself, and a normal interpreter exit tears down torch's modules first. Prints a table and writes
benchmarks/results/worker_stop.json. Not a timed test.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from _common import RESULTS, machine, median, table, write_json

from qkv.grading import sandbox
from qkv.grading.jobs import Job, Limits
from qkv.grading.testing import COURSE

JOB = Job(["x = 1 + 1"], Limits(30, 1024))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=3, help="workers started and stopped (default 3)")
    parser.add_argument("--no-sandbox", action="store_true", help="plain processes instead of bubblewrap")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="qkv-worker-stop-") as tmp:
        lib = sandbox.make_lib(COURSE / "src" / "qkv", Path(tmp))
        for n in range(args.n):
            worker = sandbox.Worker(0, lib, sandbox=not args.no_sandbox, log=Path(tmp) / "worker.log")
            start = time.perf_counter()
            header, _ = worker.run(JOB)
            started = time.perf_counter() - start
            if header.state != "exited":
                sys.exit(f"the worker failed: {header}")
            start = time.perf_counter()
            worker.stop()
            rows.append({"run": n + 1, "start_and_job_s": started, "stop_s": time.perf_counter() - start})
    print(
        table(rows, [("run", "run", "d"), ("start_and_job_s", "start + job (s)", ".2f"), ("stop_s", "stop (s)", ".2f")])
    )
    stops = [r["stop_s"] for r in rows]
    print(f"median stop: {median(stops):.2f} s")
    write_json(
        RESULTS / "worker_stop.json",
        {"machine": machine(), "sandbox": not args.no_sandbox, "runs": rows, "median_stop_s": median(stops)},
    )


if __name__ == "__main__":
    main()
