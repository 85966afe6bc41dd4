"""Every library function on the GPU, checked against the CPU; then attention timed against PyTorch's SDPA.

Part 1 runs each public name in ``qkv.__all__`` on the same inputs on the CPU and on the GPU and
compares the results (float64 where the function allows it, so that the comparison is tight;
modules in float32, forward and backward). A name with no check here is listed, never skipped
in silence. Part 2 times ``qkv.scaled_dot_product_attention`` (explicit and fused),
``qkv.chunked_attention`` and ``torch.nn.functional.scaled_dot_product_attention`` at large N with
CUDA events, and records the peak GPU memory (MiB) each needs beyond its inputs.

With no GPU it says so and exits 0. ``--device cpu`` runs the same script CPU against CPU (a smoke
test of the script itself; the numbers then mean nothing).

    python benchmarks/gpu_check.py                 # writes results/gpu.json when a GPU is present
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import torch
import torch.nn.functional as F
from _common import RESULTS, machine, median, table, write_json

import qkv

F64 = {"rtol": 1e-9, "atol": 1e-9}
F32 = {"rtol": 1e-4, "atol": 1e-5}


def _close(a, b, tol) -> float:
    """Max absolute difference; raises AssertionError (with torch's message) if outside ``tol``."""
    a, b = a.detach().cpu(), b.detach().cpu()
    torch.testing.assert_close(a, b, **tol, equal_nan=True)
    return float((a.double() - b.double()).abs().max()) if a.numel() and a.is_floating_point() else 0.0


def _qkv(gen, *shape_lsd, dtype=torch.float64):
    L, S, d_k, d_v = shape_lsd
    q = torch.randn(2, 3, L, d_k, generator=gen, dtype=dtype)
    k = torch.randn(2, 3, S, d_k, generator=gen, dtype=dtype)
    v = torch.randn(2, 3, S, d_v, generator=gen, dtype=dtype)
    return q, k, v


def _module_check(make, inputs, dev):
    """Build on the CPU, copy to ``dev``, compare the forward output and every parameter's gradient."""
    torch.manual_seed(0)
    cpu = make()
    gpu = copy.deepcopy(cpu).to(dev)
    out_c = cpu(*inputs)
    out_g = gpu(*[x.to(dev) if isinstance(x, torch.Tensor) else x for x in inputs])
    out_c = out_c[0] if isinstance(out_c, tuple) else out_c
    out_g = out_g[0] if isinstance(out_g, tuple) else out_g
    diff = _close(out_g, out_c, F32)
    if out_c.is_floating_point():
        out_c.square().mean().backward()
        out_g.square().mean().backward()
        for (_, pc), (_, pg) in zip(cpu.named_parameters(), gpu.named_parameters()):
            if pc.grad is not None:
                diff = max(diff, _close(pg.grad, pc.grad, {"rtol": 1e-3, "atol": 1e-5}))
    return diff


def checks(dev: torch.device) -> dict:
    """name -> function(dev) returning the max |GPU - CPU| over its cases."""
    gen = lambda: torch.Generator().manual_seed(0)

    def softmax(dev):
        x = torch.randn(4, 7, 9, generator=gen(), dtype=torch.float64)
        x[0, 0] = float("-inf")  # a fully masked row: zeros, not NaN, on both devices
        return _close(qkv.softmax(x.to(dev), dim=-1), qkv.softmax(x, dim=-1), F64)

    def sdpa(dev):
        q, k, v = _qkv(gen(), 5, 7, 8, 4)
        mask = torch.rand(2, 3, 5, 7, generator=gen()) > 0.3
        mask[0, 0, 0] = False  # a query with no key
        diff = 0.0
        for impl in ("explicit", "fused"):
            for m in (None, mask):
                got = qkv.scaled_dot_product_attention(
                    q.to(dev), k.to(dev), v.to(dev), None if m is None else m.to(dev), impl=impl
                )
                diff = max(diff, _close(got, qkv.scaled_dot_product_attention(q, k, v, m, impl=impl), F64))
        out, w = qkv.scaled_dot_product_attention(q.to(dev), k.to(dev), v.to(dev), mask.to(dev), return_weights=True)
        out_c, w_c = qkv.scaled_dot_product_attention(q, k, v, mask, return_weights=True)
        return max(diff, _close(out, out_c, F64), _close(w, w_c, F64))

    def column(dev):
        q, k, v = (t.mT for t in _qkv(gen(), 5, 7, 8, 4))
        return _close(qkv.column_attention(q.to(dev), k.to(dev), v.to(dev)), qkv.column_attention(q, k, v), F64)

    def chunked(dev):
        diff = 0.0
        for L, S in ((33, 33), (10, 45), (40, 17)):
            q, k, v = _qkv(gen(), L, S, 8, 6)
            for causal in (False, True):
                got = qkv.chunked_attention(q.to(dev), k.to(dev), v.to(dev), block_size=7, causal=causal)
                diff = max(diff, _close(got, qkv.chunked_attention(q, k, v, block_size=7, causal=causal), F64))
        return diff

    def masks(dev):
        adj = torch.rand(6, 6, generator=gen()) > 0.5
        pairs = [
            (qkv.causal_mask(5, 7, device=dev), qkv.causal_mask(5, 7)),
            (qkv.local_mask(9, 2, device=dev), qkv.local_mask(9, 2)),
            (qkv.padding_mask([2, 5, 3], device=dev), qkv.padding_mask([2, 5, 3])),
            (qkv.graph_mask(adj.to(dev)), qkv.graph_mask(adj)),
        ]
        for g, c in pairs:
            if g.device.type != dev.type or not torch.equal(g.cpu(), c):
                raise AssertionError(f"mask differs or is on {g.device}")
        return 0.0

    def heads(dev):
        x = torch.randn(2, 5, 12, generator=gen(), dtype=torch.float64)
        s = qkv.split_heads(x.to(dev), 3)
        return max(_close(s, qkv.split_heads(x, 3), F64), _close(qkv.merge_heads(s), x, F64))

    def positional(dev):
        pe = qkv.sinusoidal_positional_encoding(50, 16, device=dev, dtype=torch.float64)
        m = qkv.sinusoidal_shift_matrix(3, 16, device=dev, dtype=torch.float64)
        return max(
            _close(pe, qkv.sinusoidal_positional_encoding(50, 16, dtype=torch.float64), F64),
            _close(m, qkv.sinusoidal_shift_matrix(3, 16, dtype=torch.float64), F64),
        )

    def mha(dev):
        x = torch.randn(2, 6, 16)
        mask = qkv.causal_mask(6)
        return max(
            _module_check(lambda: qkv.MultiHeadAttention(16, 4), (x,), dev),
            _module_check(lambda: qkv.MultiHeadAttention(16, 4, impl="explicit"), (x, None, None, mask), dev),
        )

    def encoder_layer(dev):
        return _module_check(lambda: qkv.TransformerEncoderLayer(16, 4), (torch.randn(2, 6, 16),), dev)

    def tiny(dev):
        tokens = torch.randint(0, 10, (2, 6), generator=gen())
        return _module_check(lambda: qkv.TinyTransformer(10, 16, 4, 2), (tokens,), dev)

    def device(dev):
        want = "cuda" if torch.cuda.is_available() else dev.type
        if qkv.default_device().type != want:
            raise AssertionError(f"default_device() is {qkv.default_device()}, expected {want}")
        return 0.0

    def tasks(dev):
        # Data generators: CPU tensors from a CPU generator; the same on every machine, moved with .to(dev).
        a = qkv.reversal_batch(4, 6, 10, generator=gen())
        b = qkv.sorting_batch(4, 6, 10, generator=gen())
        if not (torch.equal(a[1], a[0].flip(-1)) and torch.equal(b[1], b[0].sort(-1).values)):
            raise AssertionError("task targets are wrong")
        return 0.0

    table_ = {
        "softmax": softmax,
        "scaled_dot_product_attention": sdpa,
        "column_attention": column,
        "chunked_attention": chunked,
        "causal_mask": masks,
        "local_mask": masks,
        "padding_mask": masks,
        "graph_mask": masks,
        "split_heads": heads,
        "merge_heads": heads,
        "sinusoidal_positional_encoding": positional,
        "sinusoidal_shift_matrix": positional,
        "MultiHeadAttention": mha,
        "TransformerEncoderLayer": encoder_layer,
        "TinyTransformer": tiny,
        "default_device": device,
        "reversal_batch": tasks,
        "sorting_batch": tasks,
    }
    return table_


def correctness(dev: torch.device) -> list[dict]:
    fns = checks(dev)
    done: dict = {}
    rows = []
    for name in qkv.__all__:
        fn = fns.get(name)
        if fn is None:
            rows.append({"name": name, "status": "NO CHECK (add one to gpu_check.py)"})
            continue
        if fn not in done:
            try:
                done[fn] = ("ok", fn(dev))
            except Exception as err:  # report every failure, then carry on with the next name
                done[fn] = (f"FAIL: {type(err).__name__}: {str(err).splitlines()[0][:120]}", None)
        status, diff = done[fn]
        rows.append({"name": name, "status": status, "max_abs_diff": diff})
    return rows


def _sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize()


def _time(fn, dev, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        if dev.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        else:
            import time

            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
    return times


def timing(dev: torch.device, sizes, heads: int, d: int, dtype, block_size: int, explicit_max: int) -> list[dict]:
    rows = []
    for n in sizes:
        gen = torch.Generator(device=dev).manual_seed(0)
        q, k, v = [torch.randn(1, heads, n, d, device=dev, dtype=dtype, generator=gen) for _ in range(3)]
        impls = {
            "explicit": lambda q=q, k=k, v=v: qkv.scaled_dot_product_attention(q, k, v, impl="explicit"),
            "qkv_fused": lambda q=q, k=k, v=v: qkv.scaled_dot_product_attention(q, k, v),
            "chunked": lambda q=q, k=k, v=v: qkv.chunked_attention(q, k, v, block_size=block_size),
            "torch_sdpa": lambda q=q, k=k, v=v: F.scaled_dot_product_attention(q, k, v),
        }
        for name, fn in impls.items():
            row = {"N": n, "heads": heads, "impl": name}
            if name == "explicit" and n > explicit_max:
                row["note"] = f"skipped above N={explicit_max} (memory)"
                rows.append(row)
                continue
            try:
                _sync(dev)
                if dev.type == "cuda":
                    torch.cuda.reset_peak_memory_stats()
                    base = torch.cuda.memory_allocated()
                fn()  # warm-up, and the peak memory
                _sync(dev)
                if dev.type == "cuda":
                    row["peak_growth_mb"] = (torch.cuda.max_memory_allocated() - base) / 2**20
                times = _time(fn, dev, 10 if n <= 16384 else 3)
                row["median_ms"] = median(times) * 1e3
                row["tflops"] = 4 * heads * n * n * d / median(times) / 1e12
            except torch.OutOfMemoryError:
                row["note"] = "out of memory"
            rows.append(row)
            print(
                f"  N={n:6d} {name:10s} " + (f"{row['median_ms']:9.2f} ms" if "median_ms" in row else row["note"]),
                flush=True,
            )
        del impls, q, k, v  # free the device memory before the next size
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda", help="'cuda' (default) or 'cpu' for a smoke test of this script")
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192, 16384, 32768, 65536])
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--block-size", type=int, default=1024, help="chunked_attention's block_size on the GPU")
    parser.add_argument("--explicit-max", type=int, default=32768, help="largest N for the explicit version")
    parser.add_argument("--out", type=Path, default=None, help="default results/gpu.json (cuda) or no file (cpu)")
    args = parser.parse_args(argv)

    dev = torch.device(args.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        print(
            "No CUDA GPU here (torch.cuda.is_available() is False): nothing to check. "
            "Run this script on a machine with a GPU; '--device cpu' smoke-tests the script itself."
        )
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False  # compare float32 with float32, not TF32
    torch.backends.cudnn.allow_tf32 = False
    info = machine()
    print(
        f"device: {torch.cuda.get_device_name(dev) if dev.type == 'cuda' else 'cpu (smoke test)'}; torch {torch.__version__}"
    )

    rows = correctness(dev)
    print(
        table(rows, [("name", "function", "s"), ("status", "GPU vs CPU", "s"), ("max_abs_diff", "max |diff|", ".1e")])
    )
    failed = [r["name"] for r in rows if r["status"] != "ok"]

    print(f"\nattention timing: B=1, H={args.heads}, d={args.d}, {args.dtype}")
    timings = timing(
        dev, args.sizes, args.heads, args.d, getattr(torch, args.dtype), args.block_size, args.explicit_max
    )
    print(
        table(
            timings,
            [
                ("N", "N", "d"),
                ("impl", "impl", "s"),
                ("median_ms", "median ms", ".2f"),
                ("peak_growth_mb", "peak MiB", ".0f"),
                ("tflops", "TFLOP/s", ".2f"),
                ("note", "note", "s"),
            ],
        )
    )
    out = args.out if args.out is not None else (RESULTS / "gpu.json" if dev.type == "cuda" else None)
    if out is not None:
        payload = {
            "benchmark": "gpu_check",
            "machine": info,
            "device": str(dev),
            "correctness": rows,
            "timing_config": {"B": 1, "H": args.heads, "d": args.d, "dtype": args.dtype, "block_size": args.block_size},
            "timing": timings,
        }
        print(f"wrote {write_json(out, payload)}")
    if failed:
        print(f"\nNOT OK on {dev}: {', '.join(failed)}")
        return 1
    print(f"\nall {len(rows)} public names checked on {dev}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
