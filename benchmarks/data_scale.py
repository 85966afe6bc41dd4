"""Data-scale benchmark: a tiny CNN against a tiny vision Transformer, over training-set sizes and seeds.

Both models learn :func:`qkv.tasks.pattern_images` (8x8 noisy images, four 3x3 patterns at random
places). Each run trains with AdamW until the accuracy on a fixed validation set stops improving
(:func:`qkv.tasks.fit_classifier`: early stopping, best weights restored), so every size is trained to
convergence rather than for a fixed number of steps; the test set is separate. The chapter
"Self-attention, CNNs and RNNs" plots the committed JSON.

    python benchmarks/data_scale.py            # sizes 100 ... 10,000, 3 seeds; writes results/data_scale.json
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, machine, table, write_json


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 300, 1000, 3000, 10_000])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--noise", type=float, default=0.4)
    parser.add_argument("--max-steps", type=int, default=3000)
    parser.add_argument("--patience", type=int, default=12, help="evaluations (25 steps each) without improvement")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (tiny models: 1 is fastest)")
    parser.add_argument("--out", type=Path, default=RESULTS / "data_scale.json")
    args = parser.parse_args(argv)

    import torch

    from qkv.tasks import fit_classifier, pattern_cnn, pattern_images, pattern_vit

    torch.set_num_threads(args.threads)
    info = machine()
    gen = torch.Generator().manual_seed(0)
    x_test, y_test = pattern_images(4000, noise=args.noise, generator=gen)
    x_val, y_val = pattern_images(1000, noise=args.noise, generator=gen)
    x_pool, y_pool = pattern_images(max(args.sizes), noise=args.noise, generator=gen)
    models = {"cnn": pattern_cnn, "attention": pattern_vit}
    runs = []
    start = time.perf_counter()
    for n in args.sizes:
        for seed in range(args.seeds):
            # each seed draws its own training subset from the pool and its own initialisation
            pick = torch.randperm(len(x_pool), generator=torch.Generator().manual_seed(seed))[:n]
            for name, make in models.items():
                torch.manual_seed(seed)
                t = time.perf_counter()
                model, steps = fit_classifier(
                    make(),
                    x_pool[pick],
                    y_pool[pick],
                    x_val,
                    y_val,
                    max_steps=args.max_steps,
                    patience=args.patience,
                    seed=seed,
                )
                with torch.no_grad():
                    acc = (model(x_test).argmax(-1) == y_test).float().mean().item()
                runs.append(
                    {
                        "model": name,
                        "n": n,
                        "seed": seed,
                        "test_accuracy": acc,
                        "steps": steps,
                        "epochs": steps * 64 / n,
                        "seconds": time.perf_counter() - t,
                        "parameters": sum(p.numel() for p in model.parameters()),
                    }
                )
                print(f"n={n:6d} seed={seed} {name:9s} accuracy {acc:.3f} after {steps} steps", flush=True)
    rows = []
    for n in args.sizes:
        row = {"n": n}
        for name in models:
            accs = [r["test_accuracy"] for r in runs if r["model"] == name and r["n"] == n]
            row[name] = statistics.mean(accs)
            row[name + "_sd"] = statistics.stdev(accs) if len(accs) > 1 else 0.0
        rows.append(row)
    print(
        table(
            rows,
            [
                ("n", "training images", "d"),
                ("cnn", "CNN", ".3f"),
                ("cnn_sd", "sd", ".3f"),
                ("attention", "attention", ".3f"),
                ("attention_sd", "sd", ".3f"),
            ],
        )
    )
    info["load_average_1min_end"] = round(__import__("os").getloadavg()[0], 2)
    payload = {
        "benchmark": "data_scale",
        "machine": info,
        "seconds": time.perf_counter() - start,
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "test_images": len(x_test),
        "validation_images": len(x_val),
        "runs": runs,
        "summary": rows,
    }
    print(f"wrote {write_json(args.out, payload)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
