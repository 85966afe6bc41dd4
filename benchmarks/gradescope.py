"""Peak memory and time of one Gradescope submission, for each lab: what README.txt of a bundle quotes.

For each lab, ``qkv gradescope-bundle`` builds the bundle, it is laid out as Gradescope does
(``source/``, ``submission/``, ``results/``), and its own ``run_autograder`` grades the solution notebook.
Recorded: the wall time of run_autograder, and its peak memory, sampled every 50 ms over every process in
its tree (the grader, the pre-started worker, the notebook; a container's memory limit counts them
together): the sum of their resident set sizes (``peak_mb``, an upper bound: pages shared between them, such
as torch's libraries, count once per process) and of their proportional set sizes (``peak_pss_mb``, shared
pages split between them); and the largest single process (``/usr/bin/time``'s maximum resident set size).

    python benchmarks/gradescope.py                 # every lab; writes results/gradescope.json
    python benchmarks/gradescope.py soft_lookup     # some labs (merged into the JSON)
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, table, write_json

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
from qkv.grading.gradescope import build_bundle, layout  # noqa: E402
from qkv.labs import lab_ids  # noqa: E402


def tree_mb(proc: psutil.Process) -> tuple[float, float]:
    """The summed RSS and PSS of ``proc`` and its descendants, in MiB."""
    rss = pss = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            info = p.memory_full_info()
            rss, pss = rss + info.rss, pss + info.pss
        except psutil.Error:
            pass
    return rss / 2**20, pss / 2**20


def measure(lab: str, tmp: Path) -> dict:
    bundle = build_bundle(lab, ROOT, tmp / f"{lab}.zip")
    root = tmp / lab / "autograder"
    env = layout(bundle, root, ROOT / "solutions" / lab / f"{lab}.ipynb")
    start = time.perf_counter()
    rss_file = tmp / f"{lab}.maxrss"
    proc = subprocess.Popen(
        ["/usr/bin/time", "-f", "%M", "-o", str(rss_file), "bash", str(root / "source" / "run_autograder")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    peak = [0.0, 0.0]

    def sample() -> None:
        ps = psutil.Process(proc.pid)
        while proc.poll() is None:
            try:
                rss, pss = tree_mb(ps)
            except psutil.Error:
                break
            peak[:] = max(peak[0], rss), max(peak[1], pss)
            time.sleep(0.05)

    sampler = threading.Thread(target=sample)
    sampler.start()
    _, err = proc.communicate()
    seconds = time.perf_counter() - start
    sampler.join()
    results = json.loads((root / "results" / "results.json").read_text())
    return {
        "peak_mb": round(peak[0], 1),
        "peak_pss_mb": round(peak[1], 1),
        "largest_process_mb": round(int(rss_file.read_text().split()[-1]) / 1024, 1),
        "seconds": round(seconds, 1),
        "score": results["score"],
        "rc": proc.returncode,
        "machine": f"{psutil.cpu_count()} CPUs ({platform.machine()}), load {psutil.getloadavg()[0]:.1f}",
        "stderr_tail": err[-300:],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("labs", nargs="*", help="lab ids (default: every lab)")
    args = parser.parse_args()
    out = RESULTS / "gradescope.json"
    data = json.loads(out.read_text()) if out.exists() else {"labs": {}}
    with tempfile.TemporaryDirectory(prefix="qkv-bench-gradescope-") as tmp:
        for lab in args.labs or lab_ids(ROOT):
            data["labs"][lab] = measure(lab, Path(tmp))
            print(f"{lab}: {data['labs'][lab]}", flush=True)
    data["note"] = (
        "one solution submission per lab through the bundle's own run_autograder (default limits); "
        "peak_mb and peak_pss_mb: the process tree's summed RSS and PSS (sampled every 50 ms); "
        "largest_process_mb: the largest single process (/usr/bin/time's maximum resident set size)"
    )
    rows = [{"lab": lab, **r} for lab, r in sorted(data["labs"].items())]
    print(
        table(
            rows,
            [
                ("lab", "lab", "s"),
                ("peak_mb", "peak RSS MB", ".0f"),
                ("peak_pss_mb", "peak PSS MB", ".0f"),
                ("largest_process_mb", "largest process MB", ".0f"),
                ("seconds", "seconds", ".1f"),
                ("score", "score", "g"),
            ],
        )
    )
    write_json(out, data)


if __name__ == "__main__":
    main()
