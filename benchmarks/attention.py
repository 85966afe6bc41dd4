"""Attention benchmark: the explicit version the book teaches, the fused path, chunked attention, PyTorch's SDPA.

For each length ``N = L = S`` and each implementation, a fresh Python process builds one head of
``q, k, v`` of shape ``(1, 1, N, d)`` (float32), resets its peak resident set size (write ``5``
to ``/proc/self/clear_refs``), runs one warm-up call and reads ``VmHWM``: the growth is the peak
memory the call needed beyond its inputs. It then times ``repeats`` more calls (median).

Achieved GFLOP/s counts the two matrix products, ``4 * L * S * d`` floating-point operations
(the softmax's ``exp`` is not counted), and is printed beside the GFLOP/s of a plain square
matrix product measured in the same run, the practical ceiling on this machine.

    python benchmarks/attention.py                  # the full table, writes results/attention.json
    python benchmarks/attention.py --sizes 256 1024 --out /tmp/a.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, machine, median, peak_rss_mb, reset_peak_rss, table, timed, write_json

IMPLS = ("explicit", "qkv_fused", "chunked", "torch_sdpa")
DESCRIPTION = {
    "explicit": "qkv.scaled_dot_product_attention(impl='explicit'): scores, softmax, weights @ v",
    "qkv_fused": "qkv.scaled_dot_product_attention(impl='auto'), which calls PyTorch's fused kernel",
    "chunked": "qkv.chunked_attention: online softmax over key blocks",
    "torch_sdpa": "torch.nn.functional.scaled_dot_product_attention",
}
SIZES = (256, 512, 1024, 2048, 4096, 8192, 16384)


def default_repeats(n: int) -> int:
    """Fewer timed calls at large sizes, so that the whole run stays within minutes on 2 cores."""
    return 20 if n <= 1024 else 10 if n <= 2048 else 5 if n <= 4096 else 3 if n <= 8192 else 2


def attention_call(impl: str, n: int, d: int, block_size: int):
    import torch
    import torch.nn.functional as F

    import qkv

    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 1, n, d, generator=gen) for _ in range(3))  # (B=1, H=1, N, d)
    if impl == "explicit":
        return lambda: qkv.scaled_dot_product_attention(q, k, v, impl="explicit")
    if impl == "qkv_fused":
        return lambda: qkv.scaled_dot_product_attention(q, k, v)
    if impl == "chunked":
        return lambda: qkv.chunked_attention(q, k, v, block_size=block_size)
    if impl == "torch_sdpa":
        return lambda: F.scaled_dot_product_attention(q, k, v)
    raise ValueError(f"impl must be one of {IMPLS}; got {impl!r}")


def worker(impl: str, n: int, d: int, repeats: int, block_size: int) -> dict:
    """Runs in a fresh process: peak memory of the first call, then the median of ``repeats`` calls."""
    if impl == "matmul":
        import torch

        a, b = torch.randn(n, n), torch.randn(n, n)
        torch.mm(a, b)  # warm-up
        times = [timed(lambda: torch.mm(a, b)) for _ in range(repeats)]
        return {"impl": "matmul", "n": n, "times_s": times, "gflops": 2 * n**3 / median(times) / 1e9}
    call = attention_call(impl, n, d, block_size)
    reset = reset_peak_rss()
    before = peak_rss_mb()
    call()
    growth = peak_rss_mb() - before
    times = [timed(call) for _ in range(repeats)]
    return {"impl": impl, "N": n, "times_s": times, "peak_growth_mb": growth, "peak_reset": reset}


def spawn(*args: object, threads: int | None = None) -> dict:
    cmd = [sys.executable, __file__, "--worker", *map(str, args)]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads)) if threads else None  # torch reads it at start-up
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="L = S values")
    parser.add_argument("--d", type=int, default=64, help="head dimension d_k = d_v")
    parser.add_argument("--impls", nargs="+", default=list(IMPLS), choices=IMPLS)
    parser.add_argument("--repeats", type=int, default=None, help="timed calls per case (default: fewer at large N)")
    parser.add_argument(
        "--rounds", type=int, default=2, help="fresh processes per case for N >= 4096, alternating implementations"
    )
    parser.add_argument(
        "--block-size", type=int, default=None, help="chunked_attention's block_size (default: its own)"
    )
    parser.add_argument(
        "--matmul-n", type=int, default=2048, help="size of the square matrix product used as the ceiling"
    )
    parser.add_argument(
        "--threads", type=int, default=None, help="torch threads in each process (default: torch's own)"
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "attention.json")
    parser.add_argument("--worker", nargs=5, metavar=("IMPL", "N", "D", "REPEATS", "BLOCK"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        impl, n, d, repeats, block = args.worker
        print(json.dumps(worker(impl, int(n), int(d), int(repeats), int(block))))
        return 0

    if args.block_size is None:
        import inspect

        import qkv

        args.block_size = inspect.signature(qkv.chunked_attention).parameters["block_size"].default
    info = machine()
    if args.threads:
        info["torch_threads"] = args.threads
    print(f"attention benchmark: d={args.d}, float32, one head; {info['cpu']}, {info['torch_threads']} torch threads")
    matmul = [spawn("matmul", args.matmul_n, 0, 5, 0, threads=args.threads)]
    rows = []
    for n in args.sizes:
        repeats = args.repeats or default_repeats(n)
        rounds = args.rounds if n >= 4096 else 1
        runs: dict[str, list[dict]] = {impl: [] for impl in args.impls}
        for r in range(rounds):
            order = args.impls if r % 2 == 0 else list(reversed(args.impls))
            for impl in order:
                runs[impl].append(spawn(impl, n, args.d, repeats, args.block_size, threads=args.threads))
        for impl in args.impls:
            good = [x for x in runs[impl] if "error" not in x]
            row = {"impl": impl, "N": n, "d": args.d, "repeats": repeats, "processes": len(runs[impl])}
            if not good:
                row["error"] = runs[impl][0]["error"]
            else:
                times = [t for x in good for t in x["times_s"]]
                row["times_ms"] = [round(t * 1e3, 3) for t in times]
                row["median_ms"] = median(times) * 1e3
                row["peak_growth_mb"] = median([x["peak_growth_mb"] for x in good])
                row["gflops"] = 4 * n * n * args.d / median(times) / 1e9
            rows.append(row)
            print(
                f"  N={n:6d} {impl:10s} "
                + (
                    f"{row['median_ms']:10.1f} ms {row['peak_growth_mb']:8.1f} MiB"
                    if "median_ms" in row
                    else row["error"]
                ),
                flush=True,
            )
    matmul.append(spawn("matmul", args.matmul_n, 0, 5, 0, threads=args.threads))
    ceiling = max((m["gflops"] for m in matmul if "gflops" in m), default=None)
    for row in rows:
        if ceiling and "gflops" in row:
            row["pct_of_matmul"] = 100 * row["gflops"] / ceiling

    by = {(r["impl"], r["N"]): r for r in rows}
    targets = {}
    n_max = max(args.sizes)
    c, e = by.get(("chunked", n_max)), by.get(("explicit", n_max))
    if c and e and "median_ms" in c and "median_ms" in e:
        targets = {
            "N": n_max,
            "chunked_over_explicit_time": c["median_ms"] / e["median_ms"],
            "chunked_over_explicit_peak_memory": c["peak_growth_mb"] / e["peak_growth_mb"],
            "goal_time": 1.5,
            "goal_peak_memory": 0.10,
        }

    print()
    print(
        f"plain matrix product {args.matmul_n}x{args.matmul_n}: "
        + ", ".join(f"{m.get('gflops', float('nan')):.1f}" for m in matmul)
        + " GFLOP/s (start, end of the run)"
    )
    print(
        table(
            rows,
            [
                ("N", "N", "d"),
                ("impl", "impl", "s"),
                ("median_ms", "median ms", ".1f"),
                ("peak_growth_mb", "peak MiB", ".1f"),
                ("gflops", "GFLOP/s", ".1f"),
                ("pct_of_matmul", "% matmul", ".0f"),
            ],
        )
    )
    if targets:
        print(
            f"\nN={n_max}: chunked / explicit time {targets['chunked_over_explicit_time']:.2f} (goal <= 1.5), "
            f"peak memory {targets['chunked_over_explicit_peak_memory']:.3f} (goal <= 0.10)"
        )
    payload = {
        "benchmark": "attention",
        "machine": info,
        "config": {
            "d": args.d,
            "dtype": "float32",
            "shape": "(1, 1, N, d)",
            "block_size": args.block_size,
            "rounds_for_N_ge_4096": args.rounds,
            "flops_per_call": "4 * N * N * d",
            "peak": "VmHWM growth over the first call after writing 5 to /proc/self/clear_refs, median over processes",
        },
        "implementations": {i: DESCRIPTION[i] for i in args.impls},
        "matmul": {"n": args.matmul_n, "gflops_runs": [m.get("gflops") for m in matmul], "gflops": ceiling},
        "rows": rows,
        "targets": targets,
    }
    print(f"wrote {write_json(args.out, payload)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
