"""Attention benchmark: the explicit version the book teaches, the fused path, chunked attention, PyTorch's SDPA.

Inputs are one head, ``q, k, v`` of shape ``(1, 1, N, d)`` (float32), for ``N = L = S``.

Memory: for each implementation a fresh Python process takes the lengths in turn: it builds the inputs,
resets its peak resident set size (write ``5`` to ``/proc/self/clear_refs``), makes one call and reads
``VmHWM``: the growth is the peak memory the call needed beyond its inputs.

Time, by a protocol meant to be fair on a shared machine: one fresh process takes the lengths in turn;
for each it makes a warm-up call of every implementation, then ``repeats`` rounds in which every implementation is called
once, in an order that rotates from round to round (interleaved, so that a burst of load from other
work hits all of them alike); an implementation's time is the **minimum** over its rounds, the run
least disturbed. The machine and its load average (before and after every length) are recorded, and
a check guards the protocol: ``qkv_fused`` and ``torch_sdpa`` call the same PyTorch kernel, so their
times must agree within ``--tolerance`` at every length at or above ``--check-from``; the JSON records
whether the check held, and the book shows times only if it did.

**Causal attention** is timed by the same protocol in a section of its own (``--only causal`` runs only it and
keeps the rest of the JSON): ``qkv.scaled_dot_product_attention(q, k, v, is_causal=True)`` beside PyTorch's
``is_causal=True``, and the masked call the flag replaces (``qkv.causal_mask(N)`` built and applied in each
call); its self-check times PyTorch's causal call twice under two names, which must agree within
``--tolerance``. The target: qkv's causal time within 1.1 of PyTorch's at N = 1024 on one thread.

Achieved GFLOP/s counts the two matrix products, ``4 * L * S * d`` floating-point operations (the
softmax's ``exp`` is not counted), beside a plain square matrix product timed the same way in the same
run, the practical ceiling on this machine. Benchmarks never assert on a time.

    python benchmarks/attention.py                  # the committed run: writes results/attention.json
    python benchmarks/attention.py --sizes 256 1024 --out /tmp/a.json
    python benchmarks/attention.py --only causal    # the causal section alone, merged into results/attention.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, machine, peak_rss_mb, reset_peak_rss, table, timed, write_json

IMPLS = ("explicit", "qkv_fused", "chunked", "torch_sdpa")
DESCRIPTION = {
    "explicit": "qkv.scaled_dot_product_attention(impl='explicit'): scores, softmax, weights @ v",
    "qkv_fused": "qkv.scaled_dot_product_attention(impl='auto'), which calls PyTorch's fused kernel",
    "chunked": "qkv.chunked_attention: online softmax over key blocks",
    "torch_sdpa": "torch.nn.functional.scaled_dot_product_attention",
}
SAME_KERNEL = ("qkv_fused", "torch_sdpa")  # two names for one PyTorch kernel: the protocol's check
SIZES = (1024, 2048, 4096, 8192, 16384)
CAUSAL_IMPLS = ("qkv_causal", "torch_causal", "torch_causal_again", "qkv_causal_mask")
CAUSAL_DESCRIPTION = {
    "qkv_causal": "qkv.scaled_dot_product_attention(q, k, v, is_causal=True): PyTorch's causal kernel, no mask",
    "torch_causal": "torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)",
    "torch_causal_again": "the same PyTorch call under a second name: the protocol's check",
    "qkv_causal_mask": "qkv.scaled_dot_product_attention(q, k, v, qkv.causal_mask(N)): the mask built and applied",
}
CAUSAL_SAME_KERNEL = ("torch_causal", "torch_causal_again")
CAUSAL_SIZES = (256, 1024, 4096)
CAUSAL_TARGET = {"N": 1024, "ratio": 1.1, "threads": 1}


def load() -> float | None:
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None


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
    if impl == "qkv_causal":
        return lambda: qkv.scaled_dot_product_attention(q, k, v, is_causal=True)
    if impl in ("torch_causal", "torch_causal_again"):
        return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
    if impl == "qkv_causal_mask":
        return lambda: qkv.scaled_dot_product_attention(q, k, v, qkv.causal_mask(n))
    if impl == "matmul":
        a, b = torch.randn(n, n, generator=gen), torch.randn(n, n, generator=gen)
        return lambda: torch.mm(a, b)
    raise ValueError(f"impl must be one of {IMPLS + CAUSAL_IMPLS} or 'matmul'; got {impl!r}")


def memory_worker(impl: str, sizes: list[int], d: int, block_size: int) -> dict:
    """In a fresh process, for each N in turn: the peak memory the first call needs beyond its inputs."""
    growth = {}
    for n in sizes:
        call = attention_call(impl, n, d, block_size)
        reset = reset_peak_rss()  # the peak restarts from what is resident now
        before = peak_rss_mb()
        call()
        growth[n] = {"peak_growth_mb": peak_rss_mb() - before, "peak_reset": reset}
        del call
    return growth


def time_worker(impls: list[str], sizes: list[int], d: int, block_size: int, repeats: int) -> dict:
    """In a fresh process, for each N: ``repeats`` interleaved rounds, the order rotating; times in seconds."""
    result = {}
    for n in sizes:
        calls = {impl: attention_call(impl, n, d, block_size) for impl in impls}
        for call in calls.values():
            call()  # warm-up
        times: dict[str, list[float]] = {impl: [] for impl in impls}
        load_before = load()
        for r in range(repeats):
            for impl in impls[r % len(impls) :] + impls[: r % len(impls)]:
                times[impl].append(timed(calls[impl]))
        result[n] = {"times": times, "load_before": load_before, "load_after": load()}
        del calls
    return result


def spawn(mode: str, *args: object, threads: int | None = None) -> dict:
    cmd = [sys.executable, __file__, "--worker", mode, json.dumps(args)]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads)) if threads else None  # torch reads it at start-up
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def same_kernel(n: int, a: float | None, b: float | None, from_n: int) -> list[dict]:
    """The protocol's check at one length: the ratio of two times of one kernel (none below ``from_n``)."""
    return [{"N": n, "ratio": max(a, b) / min(a, b)}] if n >= from_n and a and b else []


def main_section(args: argparse.Namespace) -> dict:
    """The four implementations at every length: time, peak memory, GFLOP/s and the same-kernel check."""
    impls = list(IMPLS)
    info = machine()
    if args.threads:
        info["torch_threads"] = args.threads
    print(f"attention benchmark: d={args.d}, float32, one head; {info['cpu']}, {info['torch_threads']} torch threads")
    timing = spawn("time", impls, args.sizes, args.d, args.block_size, args.repeats, threads=args.threads)
    memory = {impl: spawn("memory", impl, args.sizes, args.d, args.block_size, threads=args.threads) for impl in impls}
    ceiling_times = spawn("time", ["matmul"], [args.matmul_n], 0, 0, args.repeats, threads=args.threads)
    ceiling_times = ceiling_times.get(str(args.matmul_n), {}).get("times", {}).get("matmul")
    ceiling = 2 * args.matmul_n**3 / min(ceiling_times) / 1e9 if ceiling_times else None
    rows, checks = [], []
    for n in args.sizes:
        measured = timing.get(str(n), {})
        for impl in impls:
            row = {"impl": impl, "N": n, "d": args.d, "repeats": args.repeats}
            row["load_before"], row["load_after"] = measured.get("load_before"), measured.get("load_after")
            row.update(memory[impl].get(str(n), {"memory_error": memory[impl].get("error", "not measured")}))
            times = measured.get("times", {}).get(impl)
            if times:
                row["times_ms"] = [round(t * 1e3, 3) for t in times]
                row["min_ms"] = min(times) * 1e3
                row["gflops"] = 4 * n * n * args.d / min(times) / 1e9
                if ceiling:
                    row["pct_of_matmul"] = 100 * row["gflops"] / ceiling
            else:
                row["error"] = timing.get("error", "not timed")
            rows.append(row)
        by = {r["impl"]: r for r in rows if r["N"] == n}
        checks += same_kernel(n, *(by[i].get("min_ms") for i in SAME_KERNEL), args.check_from)
        print(
            f"  N={n:6d} "
            + "  ".join(f"{i} {by[i].get('min_ms', float('nan')):9.2f} ms" for i in impls)
            + f"  (load {by[impls[0]]['load_before']})",
            flush=True,
        )
    held = bool(checks) and all(c["ratio"] <= 1 + args.tolerance for c in checks)  # every checked N
    info["load_average_1min_end"] = load()

    print(f"\nplain matrix product {args.matmul_n}x{args.matmul_n}: {ceiling or float('nan'):.1f} GFLOP/s")
    print(
        table(
            rows,
            [
                ("N", "N", "d"),
                ("impl", "impl", "s"),
                ("min_ms", "min ms", ".2f"),
                ("peak_growth_mb", "peak MiB", ".1f"),
                ("gflops", "GFLOP/s", ".1f"),
                ("pct_of_matmul", "% matmul", ".0f"),
            ],
        )
    )
    worst = max(checks, key=lambda c: c["ratio"], default=None)
    print(f"same-kernel check ({' vs '.join(SAME_KERNEL)}, within {args.tolerance:.0%}): held={held}, worst {worst}")
    payload = {
        "benchmark": "attention",
        "machine": info,
        "config": {
            "d": args.d,
            "dtype": "float32",
            "shape": "(1, 1, N, d)",
            "block_size": args.block_size,
            "flops_per_call": "4 * N * N * d",
            "peak": "VmHWM growth over the first call after writing 5 to /proc/self/clear_refs; a process per implementation",
            "protocol": (
                f"one process, each N in turn: a warm-up call each, then {args.repeats} interleaved rounds "
                "(every implementation once per round, the order rotating); time = minimum over the rounds"
            ),
        },
        "implementations": {i: DESCRIPTION[i] for i in impls},
        "matmul": {"n": args.matmul_n, "gflops": ceiling},
        "same_kernel_check": {
            "pair": list(SAME_KERNEL),
            "tolerance": args.tolerance,
            "from_N": args.check_from,
            "ratios": checks,
            "held": held,
        },
        "rows": rows,
    }
    return payload


def causal_section(args: argparse.Namespace) -> dict:
    """Causal attention by the same protocol: qkv's flag, PyTorch's flag (twice: the check), the masked call."""
    impls, threads = list(CAUSAL_IMPLS), args.causal_threads
    info = machine()
    info["torch_threads"] = threads
    print(f"causal attention: d={args.d}, float32, one head, {threads} torch thread(s), {args.causal_repeats} rounds")
    timing = spawn("time", impls, args.causal_sizes, args.d, 0, args.causal_repeats, threads=threads)
    rows, ratios, checks = [], [], []
    for n in args.causal_sizes:
        measured = timing.get(str(n), {})
        best = {impl: min(t) * 1e3 for impl, t in measured.get("times", {}).items() if t}
        for impl in impls:
            row = {"impl": impl, "N": n, "d": args.d, "repeats": args.causal_repeats}
            row["load_before"], row["load_after"] = measured.get("load_before"), measured.get("load_after")
            if impl in best:
                row["times_ms"] = [round(t * 1e3, 4) for t in measured["times"][impl]]
                row["min_ms"] = best[impl]
            else:
                row["error"] = timing.get("error", "not timed")
            rows.append(row)
        if {"qkv_causal", "torch_causal", "qkv_causal_mask"} <= best.keys():
            ratios.append(
                {
                    "N": n,
                    "qkv_causal / torch_causal": best["qkv_causal"] / best["torch_causal"],
                    "qkv_causal_mask / torch_causal": best["qkv_causal_mask"] / best["torch_causal"],
                }
            )
        checks += same_kernel(n, *(best.get(i) for i in CAUSAL_SAME_KERNEL), args.check_from)
        print(
            f"  N={n:6d} "
            + "  ".join(f"{i} {best.get(i, float('nan')):8.3f} ms" for i in impls)
            + f"  (load {measured.get('load_before')})",
            flush=True,
        )
    held = bool(checks) and all(c["ratio"] <= 1 + args.tolerance for c in checks)  # every checked N
    at_target = next((r for r in ratios if r["N"] == CAUSAL_TARGET["N"]), None)
    met = bool(
        held
        and at_target
        and threads == CAUSAL_TARGET["threads"]
        and at_target["qkv_causal / torch_causal"] <= CAUSAL_TARGET["ratio"]
    )
    info["load_average_1min_end"] = load()
    for r in ratios:
        print(
            f"  N={r['N']:6d}  qkv is_causal / torch is_causal = {r['qkv_causal / torch_causal']:.3f}"
            f"   masked call / torch is_causal = {r['qkv_causal_mask / torch_causal']:.3f}"
        )
    worst = max(checks, key=lambda c: c["ratio"], default=None)
    print(
        f"same-kernel check ({' vs '.join(CAUSAL_SAME_KERNEL)}, within {args.tolerance:.0%}): held={held}, worst {worst}"
    )
    print(f"target (qkv / torch <= {CAUSAL_TARGET['ratio']} at N = {CAUSAL_TARGET['N']}, one thread): met={met}")
    return {
        "machine": info,
        "config": {
            "d": args.d,
            "dtype": "float32",
            "shape": "(1, 1, N, d)",
            "protocol": (
                f"one process, {threads} torch thread(s), each N in turn: a warm-up call each, then "
                f"{args.causal_repeats} interleaved rounds (the order rotating); time = minimum over the rounds"
            ),
        },
        "implementations": {i: CAUSAL_DESCRIPTION[i] for i in impls},
        "same_kernel_check": {
            "pair": list(CAUSAL_SAME_KERNEL),
            "tolerance": args.tolerance,
            "from_N": args.check_from,
            "ratios": checks,
            "held": held,
        },
        "ratios": ratios,
        "target": {**CAUSAL_TARGET, "met": met},
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="L = S values")
    parser.add_argument("--d", type=int, default=64, help="head dimension d_k = d_v")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved rounds per length (the minimum is kept)")
    parser.add_argument("--tolerance", type=float, default=0.10, help="largest relative difference of one kernel")
    parser.add_argument("--check-from", type=int, default=1024, help="smallest N at which the check applies")
    parser.add_argument(
        "--block-size", type=int, default=None, help="chunked_attention's block_size (default: its own)"
    )
    parser.add_argument("--matmul-n", type=int, default=2048, help="size of the square matrix product (the ceiling)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads in each process (default: torch's)")
    parser.add_argument("--out", type=Path, default=RESULTS / "attention.json")
    parser.add_argument(
        "--only", choices=("all", "main", "causal"), default="all", help="causal: rerun that section, keep the rest"
    )
    parser.add_argument("--causal-sizes", type=int, nargs="+", default=list(CAUSAL_SIZES), help="causal L = S values")
    parser.add_argument("--causal-repeats", type=int, default=41, help="interleaved rounds per length, causal section")
    parser.add_argument("--causal-threads", type=int, default=1, help="torch threads in the causal section")
    parser.add_argument("--worker", nargs=2, metavar=("MODE", "ARGS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        mode, worker_args = args.worker[0], json.loads(args.worker[1])
        result = (memory_worker if mode == "memory" else time_worker)(*worker_args)
        print(json.dumps(result))
        return 0

    if args.block_size is None:
        import inspect

        import qkv

        args.block_size = inspect.signature(qkv.chunked_attention).parameters["block_size"].default
    parts = {"main", "causal"} if args.only == "all" else {args.only}
    previous = json.loads(args.out.read_text()) if args.out.exists() else {}
    payload = main_section(args) if "main" in parts else previous
    causal = causal_section(args) if "causal" in parts else previous.get("causal")
    if causal is not None:  # a section not rerun is kept as it was measured
        payload["causal"] = causal
    print(f"wrote {write_json(args.out, payload)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
