"""Grading spec for the lab ``scaling``: why attention divides by sqrt(d_k), measured.

Four autograded items and one written answer. Two exercises are Monte Carlo experiments whose exact numbers
depend on the student's random draws, so their references are the expected values, with tolerances of at least
five standard deviations of the estimates (measured over 40 seeds with the solution; see the comments), and
the grader calls each experiment twice with the same seed to check that it is reproducible. The two
deterministic items (scaled scores, saturation statistics) are compared with float64 references. Dict results
are read in a fixed key order by a ``call`` probe (the sandbox sends back tensors and tuples only).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch

from qkv.grading.messages import NOT_REPRODUCIBLE, SAME_DRAWS
from qkv.grading.spec import QKV_ATTENTION, TORCH_ATTENTION, Case, Item, LabSpec, Manual, draw_seed, randn

FORBID = QKV_ATTENTION + TORCH_ATTENTION
STATS = ("max_weight", "entropy", "grad_norm")
EXPERIMENT_KEYS = tuple(f"{s}_{m}" for m in ("scaled", "unscaled") for s in STATS)


def _same_twice(case, got, expected):
    """The experiment was run twice with one seed: both runs must give the same numbers."""
    first, second = got
    flat = lambda x: np.concatenate([np.ravel(a) for a in x]) if isinstance(x, list) else np.ravel(x)
    if not np.array_equal(flat(first), flat(second)):
        return NOT_REPRODUCIBLE()
    return None


# --- exercise 1: Var(q . k) ------------------------------------------------------------------------------
def variance_cases(g: torch.Generator) -> list[Case]:
    # Relative standard deviation of a variance estimate from n samples of q.k: sqrt((kurtosis - 1) / n) with
    # kurtosis 3 + 6 / d_k, i.e. 2% at d_k = 1, n = 20000; rtol = 0.1 is five of them.
    return [
        Case(([1, 4, 32, 256], 20000, draw_seed(g)), label="d_k = 1, 4, 32, 256 with 20000 samples"),
        Case(([2, 64], 40000, draw_seed(g)), label="d_k = 2, 64 with 40000 samples"),
    ]


def variance_twice(dot_product_variance, d_k_values, num_samples, seed):
    """Runs in the sandbox: the estimates twice with the same seed."""
    first = dot_product_variance(d_k_values, num_samples=num_samples, seed=seed)
    second = dot_product_variance(d_k_values, num_samples=num_samples, seed=seed)
    return first, second


def variance_reference(d_k_values, num_samples, seed):
    exact = torch.tensor([float(d) for d in d_k_values], dtype=torch.float64)  # Var(q . k) = d_k
    return exact, exact


# --- exercise 2: scaled scores ---------------------------------------------------------------------------
def scores_cases(g: torch.Generator) -> list[Case]:
    return [
        Case((randn(g, 6, 64), randn(g, 9, 64)), label="6 queries, 9 keys, d_k = 64"),
        Case((randn(g, 3, 5, 16), randn(g, 3, 7, 16)), label="a batch of 3, L = 5, S = 7, d_k = 16"),
        Case((randn(g, 2, 4, 1, 8), randn(g, 2, 4, 6, 8)), label="two batch dimensions, one query, d_k = 8"),
    ]


def scores_reference(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., L, S)


# --- exercise 3: saturation statistics -------------------------------------------------------------------
def stats_cases(g: torch.Generator) -> list[Case]:
    # Odd numbers of queries: the median is one of the values (no convention for an even count needed).
    return [
        Case((randn(g, 51, 32), randn(g, 10, 32)), label="51 queries, 10 keys, d_k = 32, default scale"),
        Case((randn(g, 51, 32), randn(g, 10, 32)), {"scale": True}, label="scale=True"),
        Case((randn(g, 101, 16), randn(g, 64, 16)), {"scale": False}, label="scale=False, d_k = 16"),
        Case(
            (randn(g, 21, 8, scale=30.0), randn(g, 12, 8)),
            {"scale": False},
            label="saturated weights (some underflow to exactly 0)",
        ),
        Case((torch.zeros(5, 4), torch.eye(4)), {"scale": True}, label="uniform weights"),
    ]


def scaled_scores(q, k):
    """The stand-in for the student's ``scaled_scores`` when it is wrong (it runs in the sandbox)."""
    import math

    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., L, S)


def saturation_stats(q, k, scale=True):
    """The stand-in for the student's ``saturation_stats`` when it is wrong (it runs in the sandbox)."""
    import torch

    w = torch.softmax(scaled_scores(q, k) if scale else q @ k.T, dim=-1)  # (N, S)
    s2 = (w.double() ** 2).sum(dim=-1)  # ||J||_F^2 = sum w^2 - 2 sum w^3 + (sum w^2)^2, see jacobian_norm
    grad_norm = (s2 - 2 * (w.double() ** 3).sum(dim=-1) + s2**2).clamp_min(0).sqrt()
    return {
        "max_weight": w.amax(dim=-1).median().item(),
        "entropy": (-torch.special.xlogy(w, w).sum(dim=-1)).median().item(),
        "grad_norm": grad_norm.median().item(),
    }


def stats_tuple(saturation_stats, q, k, **kwargs):
    """Runs in the sandbox: the dict's three values in a fixed order, each a Python float."""
    result = saturation_stats(q, k, **kwargs)
    for key in ("max_weight", "entropy", "grad_norm"):
        if not isinstance(result[key], float):
            raise TypeError(f"result[{key!r}] must be a Python float (use .item()); got {type(result[key]).__name__}")
    return result["max_weight"], result["entropy"], result["grad_norm"]


def stats_reference(q, k, scale=True):
    scores = q @ k.T / (math.sqrt(q.shape[-1]) if scale else 1.0)  # (N, S)
    w = torch.softmax(scores, dim=-1)
    entropy = -torch.special.xlogy(w, w).sum(dim=-1)  # 0 log 0 = 0
    return w.amax(dim=-1).median(), entropy.median(), jacobian_norm(w).median()


def jacobian_norm(w):
    """||diag(w) - w w^T||_F per row of ``w`` (N, S), without building the (N, S, S) Jacobians: its square is
    sum w_i^2 - 2 sum w_i^3 + (sum w_i^2)^2, in float64 (near one-hot rows cancel to about 0)."""
    w = w.double()
    s2 = (w**2).sum(dim=-1)  # (N,)
    return (s2 - 2 * (w**3).sum(dim=-1) + s2**2).clamp_min(0).sqrt()


# --- exercise 4: the experiment --------------------------------------------------------------------------
def experiment_cases(g: torch.Generator) -> list[Case]:
    # d_k = 256 and 1024 with 401 queries and 128 keys: over 40 seeds the largest standard deviation of any of
    # the six statistics was 0.027 (entropy without scaling at d_k = 256); atol = 0.15 is more than five.
    # Dividing by d_k instead of sqrt(d_k) moves the scaled entropy by 0.47, leaving out the scaling moves the
    # scaled largest weight by 0.9: both far outside the tolerance.
    return [
        Case(
            ([256, 1024],),
            {"num_queries": 401, "num_keys": 128, "seed": draw_seed(g)},
            label="d_k = 256 and 1024, 401 queries, 128 keys, run twice with one seed",
        ),
        # The lab's contract (and its self-check): both runs on the same draws, so at d_k = 1, where sqrt(d_k) = 1,
        # the scaled and unscaled statistics are equal exactly (_same_draws). The estimates at d_k = 1 spread less
        # than at 256 (scores of variance 1 either way).
        Case(
            ([1, 256],),
            {"num_queries": 401, "num_keys": 128, "seed": draw_seed(g)},
            label="d_k = 1 and 256: the scaled and unscaled runs on the same draws",
        ),
    ]


def _same_draws(case, got, expected):
    """Reproducible with the seed, and at d_k = 1 the two runs equal: the unscaled run used the same draws."""
    reproducible = _same_twice(case, got, expected)
    if reproducible or 1 not in case.args[0]:
        return reproducible
    first, at = got[0], list(case.args[0]).index(1)
    for n, stat in enumerate(STATS):
        if np.ravel(first[n])[at] != np.ravel(first[n + len(STATS)])[at]:
            return SAME_DRAWS(stat=stat)
    return None


def experiment_twice(scaling_experiment, d_k_values, **kwargs):
    """Runs in the sandbox: the six curves in a fixed order, twice with the same seed."""
    keys = [f"{s}_{m}" for m in ("scaled", "unscaled") for s in ("max_weight", "entropy", "grad_norm")]
    first = scaling_experiment(d_k_values, **kwargs)
    second = scaling_experiment(d_k_values, **kwargs)
    return tuple(first[k] for k in keys), tuple(second[k] for k in keys)


@functools.lru_cache(maxsize=8)
def _expected_experiment(d_k_values: tuple[int, ...], num_queries: int, num_keys: int) -> tuple[torch.Tensor, ...]:
    """The expected value of each statistic: the mean over 6 independent runs (cached: one batch, one case)."""
    runs = []
    for seed in range(6):
        g = torch.Generator().manual_seed(10_000 + seed)
        row: dict[str, list[float]] = {key: [] for key in EXPERIMENT_KEYS}
        for d_k in d_k_values:
            q, k = torch.randn(num_queries, d_k, generator=g), torch.randn(num_keys, d_k, generator=g)
            for mode, scale in (("scaled", True), ("unscaled", False)):
                for name, value in zip(STATS, stats_reference(q.double(), k.double(), scale)):
                    row[f"{name}_{mode}"].append(float(value))
        runs.append(torch.tensor([row[key] for key in EXPERIMENT_KEYS], dtype=torch.float64))  # (6, n)
    mean = torch.stack(runs).mean(dim=0)
    return tuple(mean[i] for i in range(len(EXPERIMENT_KEYS)))


def experiment_reference(d_k_values, num_queries=200, num_keys=64, seed=0):
    expected = _expected_experiment(tuple(d_k_values), num_queries, num_keys)
    return expected, expected


SPEC = LabSpec(
    lab="scaling",
    items=(
        Item(
            "test_dot_product_variance",
            3,
            "dot_product_variance",
            variance_cases,
            variance_reference,
            atol=0.0,
            rtol=0.1,
            forbid=FORBID,
            call=variance_twice,
            check=_same_twice,
            describe="Monte Carlo estimates of Var(q.k), close to d_k, reproducible with the seed",
        ),
        Item(
            "test_scaled_scores",
            2,
            "scaled_scores",
            scores_cases,
            scores_reference,
            forbid=FORBID,
            describe="q k^T / sqrt(d_k) with any batch dimensions, shape (..., L, S)",
        ),
        Item(
            "test_saturation_stats",
            3,
            "saturation_stats",
            stats_cases,
            stats_reference,
            forbid=FORBID,
            call=stats_tuple,
            helpers=(scaled_scores,),
            describe="medians of the largest weight, the entropy and ||J||_F as Python floats, finite when saturated",
        ),
        Item(
            "test_scaling_experiment",
            2,
            "scaling_experiment",
            experiment_cases,
            experiment_reference,
            atol=0.15,
            rtol=0.02,
            forbid=FORBID,
            call=experiment_twice,
            helpers=(scaled_scores, saturation_stats),
            check=_same_draws,
            describe="the six statistics with and without scaling, reproducible with the seed",
        ),
        Manual("written_conclusion", 3, title="Your conclusion on scaling"),
    ),
)
