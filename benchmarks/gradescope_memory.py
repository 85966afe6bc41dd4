"""The kernel's measured peak memory of one Gradescope run, per lab, and the run checked under a container's limit.

For each lab, ``qkv gradescope-bundle`` builds the bundle (default ``--memory``), it is laid out as Gradescope
does (``source/``, ``submission/``, ``results/``), and its own ``run_autograder`` grades a correct student's
notebook (the released lab filled in with the solution's answers) inside a memory cgroup created for the run,
as a container's limit is enforced: the whole process tree (grader, worker, notebook) in one group, pages
shared between processes counted once. Recorded per run: the group's peak (cgroup v2 ``memory.peak``, or v1
``memory.max_usage_in_bytes``; both include the page cache the run charged, such as torch's libraries read
from disk), ``/usr/bin/time``'s maximum resident set size (the largest single process), the wall time, the
score, whether the kernel killed anything for memory, and any error line in results.json.

Each lab runs unlimited (the peak README.txt quotes), then at 768 MB and at 1.5 GB (Gradescope's two smallest
containers), with one CPU (a CFS quota) and no swap. Needs root and a cgroup hierarchy it may write.

    python benchmarks/gradescope_memory.py                    # soft_lookup, masks, tiny_transformer
    python benchmarks/gradescope_memory.py soft_lookup        # some labs (merged into the JSON)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, table, write_json

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
from qkv.grading.gradescope import build_bundle, layout  # noqa: E402
from qkv.grading.testing import completed_lab  # noqa: E402

LABS = ["soft_lookup", "masks", "tiny_transformer"]  # tiny_transformer: the heaviest
LIMITS = [None, 768, 1536]  # MB; None: no limit (the peak)
CG = Path("/sys/fs/cgroup")
ERRORS = ("error", "forbidden", "traceback")
# A correct notebook with one more cell that fills a 400 MB tensor: within the default --memory 512, above what
# a 768 MB container leaves after the peak (run with the first of LABS, at 768 MB).
HOG = "big = torch.ones(100 * 2**20)  # 400 MB of float32, touched\n"


class Group:
    """A fresh cgroup (v2, or v1's memory and cpu controllers) with a memory limit (MB, None: none), no swap, and
    one CPU; ``join`` puts the calling process in it (call it in the child before exec)."""

    def __init__(self, name: str, limit_mb: int | None):
        self.v2 = (CG / "cgroup.controllers").exists()
        self.mem = CG / name if self.v2 else CG / "memory" / name
        self.cpu = None if self.v2 else CG / "cpu" / name
        for d in (self.mem, self.cpu):
            if d is not None:
                d.mkdir()
        limit = str(limit_mb * 2**20) if limit_mb else None
        if self.v2:
            (self.mem / "cpu.max").write_text("100000 100000")
            if limit:
                (self.mem / "memory.max").write_text(limit)
                (self.mem / "memory.swap.max").write_text("0")
        else:
            (self.cpu / "cpu.cfs_period_us").write_text("100000")
            (self.cpu / "cpu.cfs_quota_us").write_text("100000")
            if limit:
                (self.mem / "memory.limit_in_bytes").write_text(limit)
                if (self.mem / "memory.memsw.limit_in_bytes").exists():
                    (self.mem / "memory.memsw.limit_in_bytes").write_text(limit)

    def join(self) -> None:
        for d in (self.mem, self.cpu):
            if d is not None:
                (d / "cgroup.procs").write_text(str(os.getpid()))

    def peak_mb(self) -> float:
        name = "memory.peak" if self.v2 else "memory.max_usage_in_bytes"
        return int((self.mem / name).read_text()) / 2**20

    def oom_kills(self) -> int:
        name = "memory.events" if self.v2 else "memory.oom_control"
        for line in (self.mem / name).read_text().splitlines():
            if line.startswith("oom_kill "):
                return int(line.split()[1])
        return 0

    def remove(self) -> None:
        for d in (self.mem, self.cpu):
            if d is not None:
                d.rmdir()


def run(lab: str, bundle: Path, notebook: Path, tmp: Path, limit: int | None) -> dict:
    tag = f"{notebook.stem}-{limit or 'none'}"
    root = tmp / tag / "autograder"
    env = layout(bundle, root, notebook)
    group = Group(f"qkv-bench-{os.getpid()}-{tag}", limit)
    rss = tmp / "maxrss"
    try:
        start = time.perf_counter()
        done = subprocess.run(
            ["/usr/bin/time", "-f", "%M", "-o", str(rss), str(root / "source" / "run_autograder")],
            env=env,
            capture_output=True,
            text=True,
            preexec_fn=group.join,
        )
        seconds = time.perf_counter() - start
        peak, kills = group.peak_mb(), group.oom_kills()
    finally:
        group.remove()
    results = root / "results" / "results.json"
    res = json.loads(results.read_text()) if results.exists() else {"score": 0, "output": "no results.json"}
    text = "\n".join([res.get("output", ""), *(t.get("output", "") for t in res.get("tests", []))])
    return {
        "notebook": "correct" if notebook.stem == lab else notebook.stem,
        "limit_mb": limit,
        "peak_mb": round(peak, 1),
        "largest_process_mb": round(int(rss.read_text().split()[-1]) / 1024, 1),
        "seconds": round(seconds, 1),
        "score": res["score"],
        "max_score": sum(t.get("max_score", 0) for t in res.get("tests", [])),
        "oom_kills": kills,
        "rc": done.returncode,
        "error_lines": [x for x in text.splitlines() if any(w in x.lower() for w in ERRORS)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("labs", nargs="*", help=f"lab ids (default: {' '.join(LABS)})")
    args = parser.parse_args()
    out = RESULTS / "gradescope_memory.json"
    data = json.loads(out.read_text()) if out.exists() else {"labs": {}}
    machine = f"{os.cpu_count()} CPUs ({platform.machine()}) capped at one, load {os.getloadavg()[0]:.1f}"
    with tempfile.TemporaryDirectory(prefix="qkv-bench-gsmem-") as tmp:
        tmp = Path(tmp)
        for lab in args.labs or LABS:
            bundle = build_bundle(lab, ROOT, tmp / f"{lab}.zip")
            notebook = tmp / f"{lab}.ipynb"
            notebook.write_text(json.dumps(completed_lab(lab, ROOT)))
            runs = [run(lab, bundle, notebook, tmp, limit) for limit in LIMITS]
            if lab == LABS[0]:
                nb = completed_lab(lab, ROOT)
                nb["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [], "source": HOG})
                nb["cells"][-1]["execution_count"] = None
                hog = tmp / "hog_400mb.ipynb"
                hog.write_text(json.dumps(nb))
                runs.append(run(lab, bundle, hog, tmp, 768))
            free = runs[0]
            data["labs"][lab] = {
                "peak_mb": free["peak_mb"],
                "seconds": free["seconds"],
                "machine": machine,
                "runs": runs,
            }
            print(f"{lab}: {runs}", flush=True)
    data["note"] = (
        "a correct student's notebook per lab through the bundle's own run_autograder (default limits), in a "
        "cgroup of its own with one CPU and no swap; peak_mb: the cgroup's peak (memory.peak, or v1's "
        "memory.max_usage_in_bytes: the whole process tree, shared pages once, page cache included), unlimited; "
        "runs: unlimited, at 768 MB and at 1.5 GB (hog_400mb: the first lab's notebook plus a 400 MB tensor, at "
        "768 MB); largest_process_mb: /usr/bin/time's maximum resident set size"
    )
    rows = [{"lab": lab, **r} for lab, row in sorted(data["labs"].items()) for r in row["runs"]]
    for r in rows:
        r["limit"] = f"{r['limit_mb']} MB" if r["limit_mb"] else "none"
        r["clean"] = "yes" if not r["error_lines"] else "NO"
    columns = [
        ("lab", "lab", "s"),
        ("notebook", "notebook", "s"),
        ("limit", "limit", "s"),
        ("peak_mb", "cgroup peak MB", ".0f"),
    ]
    columns += [("largest_process_mb", "largest process MB", ".0f"), ("seconds", "seconds", ".1f")]
    columns += [("score", "score", "g"), ("max_score", "of", "g"), ("oom_kills", "OOM kills", "d")]
    print(table(rows, [*columns, ("clean", "clean output", "s")]))
    write_json(out, data)


if __name__ == "__main__":
    main()
