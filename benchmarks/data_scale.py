"""Data-scale benchmark: a tiny CNN against a tiny vision Transformer, over training-set sizes and seeds.

Both models learn :func:`qkv.tasks.pattern_images` (8x8 noisy images, four 3x3 patterns at random
places). Each run trains with AdamW (:func:`qkv.tasks.fit_classifier`) until the accuracy on a fixed
validation set has not reached a new best for ``patience`` evaluations (25 steps each); the best weights
are restored. The stopping rule is checked, not assumed:

- every run records whether it stopped by that rule (``converged``) or hit ``max_steps`` (not converged);
- the largest size (seed 0, both models) is trained on with twice the patience: if the test accuracy
  moves by more than ``--check-tolerance``, the runs were stopped too early (``patience_check``). Training
  is deterministic, so that run passes exactly where the shorter patience would have stopped; it records
  that point (the run with ``patience``) and goes on (the check), one training for both.

The ceiling is the task's Bayes accuracy: :func:`qkv.tasks.pattern_bayes_logits` knows how the images
are made and classifies them as well as anything can. Gains from more data are reported as the share
of the remaining gap to that ceiling that a model closes. The chapter "Self-attention, CNNs and RNNs"
reads the committed JSON (it does not retrain).

    python benchmarks/data_scale.py            # the committed run: writes results/data_scale.json
    python benchmarks/data_scale.py --resume benchmarks/results/data_scale.json   # reuse finished runs
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, machine, table, write_json

EVAL_EVERY = 25  # fit_classifier's default: steps between validation evaluations


def test_accuracy(model, x, y) -> float:
    import torch

    with torch.no_grad():
        return (model(x).argmax(-1) == y).float().mean().item()


def share_closed(before: float, after: float, ceiling: float) -> float:
    """The share of the gap to ``ceiling`` that going from ``before`` to ``after`` closes."""
    return (after - before) / (ceiling - before)


def summarise(runs: list[dict], sizes: list[int], models: list[str], bayes: float) -> list[dict]:
    rows = []
    for n in sizes:
        row = {"n": n}
        for name in models:
            accs = [r["test_accuracy"] for r in runs if r["model"] == name and r["n"] == n]
            if not accs:
                continue
            row[name] = statistics.mean(accs)
            row[name + "_sd"] = statistics.stdev(accs) if len(accs) > 1 else 0.0
            row[name + "_gap_to_bayes"] = bayes - row[name]
            row[name + "_converged"] = sum(r["converged"] for r in runs if r["model"] == name and r["n"] == n)
            row[name + "_runs"] = len(accs)
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 300, 1000, 3000, 10_000])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--noise", type=float, default=0.4)
    parser.add_argument("--max-steps", type=int, default=30_000)
    parser.add_argument(
        "--patience", type=int, default=40, help=f"evaluations ({EVAL_EVERY} steps each) without a new best"
    )
    parser.add_argument("--check-tolerance", type=float, default=0.01, help="largest accepted change with 2x patience")
    parser.add_argument("--bayes-images", type=int, default=200_000, help="fresh images for the Bayes accuracy")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (tiny models: 1 is fastest)")
    parser.add_argument("--seeds-per-size", type=int, nargs="+", help="seeds for each size (default: --seeds)")
    parser.add_argument("--resume", type=Path, help="a partial JSON of this script: its finished runs are kept")
    parser.add_argument("--budget", default="", help="what was cut to fit the machine, recorded in the JSON")
    parser.add_argument("--out", type=Path, default=RESULTS / "data_scale.json")
    args = parser.parse_args(argv)

    import torch

    from qkv.tasks import fit_classifier, pattern_bayes_logits, pattern_cnn, pattern_images, pattern_vit

    torch.set_num_threads(args.threads)
    info = machine()
    gen = torch.Generator().manual_seed(0)
    x_test, y_test = pattern_images(4000, noise=args.noise, generator=gen)
    x_val, y_val = pattern_images(1000, noise=args.noise, generator=gen)
    x_pool, y_pool = pattern_images(max(args.sizes), noise=args.noise, generator=gen)

    bayes_test = (pattern_bayes_logits(x_test, noise=args.noise).argmax(-1) == y_test).float().mean().item()
    fresh = torch.Generator().manual_seed(1)
    hits = 0
    for start in range(0, args.bayes_images, 20_000):
        x, y = pattern_images(min(20_000, args.bayes_images - start), noise=args.noise, generator=fresh)
        hits += (pattern_bayes_logits(x, noise=args.noise).argmax(-1) == y).sum().item()
    bayes = {
        "test_accuracy": bayes_test,
        "accuracy": hits / args.bayes_images,
        "images": args.bayes_images,
        "standard_error": (hits / args.bayes_images * (1 - hits / args.bayes_images) / args.bayes_images) ** 0.5,
    }
    print(
        f"Bayes accuracy {bayes['accuracy']:.4f} on {args.bayes_images:,} fresh images, {bayes_test:.4f} on the test set"
    )

    models = {"cnn": pattern_cnn, "attention": pattern_vit}
    start = time.perf_counter()

    def record(name: str, n: int, seed: int, patience: int, model, steps: int, seconds: float) -> dict:
        converged = steps < args.max_steps  # stopped by the patience rule, not by the cap
        run = {
            "model": name,
            "n": n,
            "seed": seed,
            "patience": patience,
            "test_accuracy": test_accuracy(model, x_test, y_test),
            "steps": steps,
            "converged": converged,
            "best_step": steps - patience * EVAL_EVERY if converged else None,
            "epochs": steps * 64 / n,
            "seconds": seconds,
            "parameters": sum(p.numel() for p in model.parameters()),
        }
        print(
            f"n={n:6d} seed={seed} {name:9s} patience {patience:3d}: accuracy {run['test_accuracy']:.3f} "
            f"after {steps} steps{'' if converged else ' (hit max_steps)'}, {seconds:.0f} s",
            flush=True,
        )
        return run

    def train(name: str, n: int, seed: int, patience: int, watch: int | None = None) -> list[dict]:
        """One training; with ``watch``, also the run that patience ``watch`` would have stopped (first)."""
        import copy

        # each seed draws its own training subset from the pool and its own initialisation
        pick = torch.randperm(len(x_pool), generator=torch.Generator().manual_seed(seed))[:n]
        torch.manual_seed(seed)
        t = time.perf_counter()
        shorter: list[dict] = []
        state = {"best": -1.0, "since": 0, "weights": None}

        def on_evaluation(model, step, accuracy):  # fit_classifier's own rule, with patience `watch`
            if watch is None or shorter:
                return
            if accuracy > state["best"]:
                state.update(best=accuracy, since=0, weights=copy.deepcopy(model.state_dict()))
            else:
                state["since"] += 1
            if state["since"] == watch:
                stopped = copy.deepcopy(model)
                stopped.load_state_dict(state["weights"])
                shorter.append(record(name, n, seed, watch, stopped, step, time.perf_counter() - t))

        model, steps = fit_classifier(
            models[name](), x_pool[pick], y_pool[pick], x_val, y_val, max_steps=args.max_steps,
            eval_every=EVAL_EVERY, patience=patience, seed=seed, on_evaluation=on_evaluation,
        )  # fmt: skip
        longer = record(name, n, seed, patience, model, steps, time.perf_counter() - t)
        if watch is not None and not shorter:  # the cap came first: the shorter run ends there too
            shorter.append({**longer, "patience": watch})
        return [*shorter, longer]

    def payload(runs: list[dict], check: dict | None) -> dict:
        rows = summarise(runs, sorted(args.sizes), list(models), bayes_test)
        return {
            "benchmark": "data_scale",
            "machine": {**info, "load_average_1min_end": round(os.getloadavg()[0], 2)},
            "seconds": time.perf_counter() - start + (resumed["seconds"] if resumed else 0.0),
            "resumed": resumed,
            "complete": check is not None,
            "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "eval_every": EVAL_EVERY,
            "stopping_rule": (
                f"stop when the validation accuracy has not reached a new best for {args.patience} evaluations "
                f"({args.patience * EVAL_EVERY} steps) and restore the best weights; a run that reaches "
                f"max_steps={args.max_steps} is recorded as not converged"
            ),
            "test_images": len(x_test),
            "validation_images": len(x_val),
            "bayes": bayes,
            "all_converged": all(r["converged"] for r in runs),
            "patience_check": check,
            "runs": runs,
            "summary": rows,
        }

    seeds = dict(zip(args.sizes, args.seeds_per_size or [args.seeds] * len(args.sizes), strict=True))
    kept = json.loads(args.resume.read_text()) if args.resume else None
    if kept:
        same = ("noise", "max_steps", "patience")
        assert all(kept["settings"][k] == getattr(args, k) for k in same), f"--resume needs the same {same}"
        kept_runs = [r for r in kept["runs"] if r["patience"] == args.patience]
        resumed = {"date_utc": kept["machine"]["date_utc"], "runs_kept": len(kept_runs), "seconds": kept["seconds"]}
    else:
        kept_runs, resumed = [], None
    n_max = max(args.sizes)
    runs, checks = [], {}
    for n in args.sizes:
        for seed in range(seeds[n]):
            for name in models:
                done = [r for r in kept_runs if (r["model"], r["n"], r["seed"]) == (name, n, seed)]
                if n == n_max and seed == 0:  # one training gives the run and its patience check
                    run, checks[name] = train(name, n, seed, 2 * args.patience, watch=args.patience)
                    runs.append(run)
                elif done:
                    runs.extend(done)
                else:
                    runs.extend(train(name, n, seed, args.patience))
        write_json(args.out, payload(runs, None))  # a partial file survives an interrupted run

    check = {"n": n_max, "seed": 0, "patience": 2 * args.patience, "tolerance": args.check_tolerance, "models": {}}
    for name in models:
        longer = checks[name]
        first = next(r for r in runs if r["model"] == name and r["n"] == n_max and r["seed"] == 0)
        check["models"][name] = {
            "test_accuracy": longer["test_accuracy"],
            "steps": longer["steps"],
            "converged": longer["converged"],
            "change": longer["test_accuracy"] - first["test_accuracy"],
        }
    check["held"] = all(m["converged"] and abs(m["change"]) <= args.check_tolerance for m in check["models"].values())
    result = payload(runs, check)

    print(
        table(
            result["summary"],
            [
                ("n", "training images", "d"),
                ("cnn", "CNN", ".3f"),
                ("cnn_sd", "sd", ".3f"),
                ("attention", "attention", ".3f"),
                ("attention_sd", "sd", ".3f"),
            ],
        )
    )
    print(f"Bayes (test set) {bayes_test:.3f}; every run converged: {result['all_converged']}")
    print("patience check:", {k: round(v["change"], 4) for k, v in check["models"].items()}, "held:", check["held"])
    print(f"wrote {write_json(args.out, result)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
