"""Helpers the benchmark scripts share: peak memory, the machine's description, tables and JSON.

Benchmarks are scripts that print tables and write JSON; they never assert on a time.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def reset_peak_rss() -> bool:
    """Reset this process's peak resident set size (``VmHWM``) to its current size.

    Writing ``5`` to ``/proc/self/clear_refs`` does this on Linux (since 4.0). Returns False
    where it is not possible; the peak then counts from the start of the process.
    """
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss_mb() -> float:
    """The peak resident set size (``VmHWM``) in MiB; falls back to ``resource`` off Linux."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return rss / (1024 * 1024) if platform.system() == "Darwin" else rss / 1024


def timed(fn: Callable[[], object]) -> float:
    """Seconds one call of ``fn`` takes."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def machine() -> dict:
    """What the numbers were measured on: CPU, threads, library versions, the load during the run."""
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    info = {
        "cpu": cpu,
        "logical_cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if hasattr(os, "getloadavg"):
        info["load_average_1min"] = round(os.getloadavg()[0], 2)
    return info


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs)


def table(rows: Sequence[dict], columns: Sequence[tuple[str, str, str]]) -> str:
    """A plain-text table. ``columns`` holds (key, header, format) triples; missing values print as '-'."""
    cells = [[h for _, h, _ in columns]]
    for row in rows:
        cells.append([("-" if row.get(k) is None else format(row[k], fmt)) for k, _, fmt in columns])
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def write_json(path: Path, payload: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=1) + "\n")
    return path
