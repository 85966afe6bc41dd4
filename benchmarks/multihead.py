"""Multi-head attention benchmark: ``qkv.MultiHeadAttention`` against ``torch.nn.MultiheadAttention``.

Forward plus backward on self-attention, ``need_weights=False`` for both, the same weights
(copied with ``MultiHeadAttention.from_torch``). The modules are timed alternately in one process,
call after call, so that both see the same machine load; the reported ratio is the median of the
per-round ratios. ``qkv`` with ``impl="explicit"`` (the version the book teaches) is timed too.

    python benchmarks/multihead.py              # B=8, L=S=256, d_model=256, H=8; writes results/multihead.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, machine, median, table, timed, write_json


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--length", type=int, default=256, help="L = S")
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    parser.add_argument("--out", type=Path, default=RESULTS / "multihead.json")
    args = parser.parse_args(argv)

    import torch

    import qkv

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    B, L, d_model, H = args.batch, args.length, args.d_model, args.heads
    ref = torch.nn.MultiheadAttention(d_model, H, batch_first=True)
    modules = {
        "torch": ref,
        "qkv": qkv.MultiHeadAttention.from_torch(ref),  # impl="auto": the fused kernel
        "qkv_explicit": qkv.MultiHeadAttention.from_torch(ref, impl="explicit"),
    }
    x = torch.randn(B, L, d_model, requires_grad=True)  # (B, L, d_model)
    grad_out = torch.randn(B, L, d_model)

    def step(name: str):
        module = modules[name]

        def run():
            x.grad = None
            module.zero_grad(set_to_none=True)
            out, _ = module(x, x, x, need_weights=False)  # (B, L, d_model)
            out.backward(grad_out)
            return out

        return run

    steps = {name: step(name) for name in modules}
    # Same weights, same numbers: a benchmark of two different computations would mean nothing.
    outs = {name: steps[name]().detach() for name in modules}
    grads = {}
    for name in modules:
        steps[name]()
        grads[name] = x.grad.clone()
    max_diff = max(float((outs[n] - outs["torch"]).abs().max()) for n in modules)
    max_grad_diff = max(float((grads[n] - grads["torch"]).abs().max()) for n in modules)
    if max_diff > 1e-4 or max_grad_diff > 1e-4:
        raise SystemExit(f"outputs differ from torch's: {max_diff:.2e} (out), {max_grad_diff:.2e} (grad of x)")

    for _ in range(args.warmup):
        for run in steps.values():
            run()
    times: dict[str, list[float]] = {name: [] for name in modules}
    for r in range(args.rounds):
        order = list(modules) if r % 2 == 0 else list(reversed(modules))
        for name in order:
            times[name].append(timed(steps[name]))
    ratios = {name: median([a / b for a, b in zip(times[name], times["torch"])]) for name in modules}
    rows = [
        {"module": name, "median_ms": median(t) * 1e3, "min_ms": min(t) * 1e3, "ratio": ratios[name]}
        for name, t in times.items()
    ]
    info = machine()
    print(
        f"multi-head attention, forward + backward: B={B}, L=S={L}, d_model={d_model}, H={H}, float32; "
        f"{info['cpu']}, {info['torch_threads']} torch threads, {args.rounds} alternating rounds"
    )
    print(
        table(
            rows,
            [
                ("module", "module", "s"),
                ("median_ms", "median ms", ".2f"),
                ("min_ms", "min ms", ".2f"),
                ("ratio", "median ratio to torch", ".3f"),
            ],
        )
    )
    print(f"max |difference| from torch: {max_diff:.1e} (output), {max_grad_diff:.1e} (gradient of x)")
    print(f"qkv / torch = {ratios['qkv']:.3f} (goal <= 1.2)")
    payload = {
        "benchmark": "multihead",
        "machine": info,
        "config": {
            "B": B,
            "L": L,
            "S": L,
            "d_model": d_model,
            "H": H,
            "dtype": "float32",
            "need_weights": False,
            "rounds": args.rounds,
            "timing": "forward + backward, modules alternated within each round",
        },
        "rows": rows,
        "times_ms": {name: [round(t * 1e3, 3) for t in ts] for name, ts in times.items()},
        "max_abs_diff": {"output": max_diff, "grad_x": max_grad_diff},
        "targets": {"qkv_over_torch": ratios["qkv"], "goal": 1.2},
    }
    print(f"wrote {write_json(args.out, payload)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
