"""Grading spec for the lab ``soft_lookup`` (the worked example of the format; see README.md here).

Four autograded functions and one written answer. Every case uses ``n != d != d_v`` so that a wrong axis
or a missing transpose changes the shape; the softmax cases include scores of +-1e4 (overflow without the
max-subtraction, underflow with a global instead of a per-row maximum). ``cosine_scores`` and ``soft_lookup`` run
with the student's ``dot_scores`` and ``stable_softmax`` when those pass their own items' cases, and with correct
stand-ins when not: one bug costs its own item.
"""

from __future__ import annotations

import torch

import qkv
from qkv.grading.spec import (
    COSINE_FAMILY,
    QKV_ATTENTION,
    SOFTMAX_FAMILY,
    TORCH_ATTENTION,
    Case,
    Item,
    LabSpec,
    Manual,
    randn,
)

# The lab's introduction forbids these inside the answers (they would do the exercise).
FORBID = SOFTMAX_FAMILY + COSINE_FAMILY + QKV_ATTENTION + TORCH_ATTENTION


def dot_cases(g: torch.Generator) -> list[Case]:
    return [
        Case((randn(g, 7), randn(g, 11, 7)), label="a random query (7,) against 11 keys (11, 7)"),
        Case((randn(g, 16, scale=3.0), randn(g, 3, 16)), label="a query (16,) against 3 keys (3, 16)"),
        Case((randn(g, 5), randn(g, 1, 5)), label="a single key (1, 5)"),
    ]


def dot_reference(query, keys):
    return torch.einsum("d,nd->n", query, keys)  # (n,)


def cosine_cases(g: torch.Generator) -> list[Case]:
    keys = randn(g, 9, 5) * torch.linspace(0.1, 10.0, 9)[:, None]  # rows of very different lengths
    return [
        Case((randn(g, 5), randn(g, 9, 5)), label="a random query (5,) against 9 keys (9, 5)"),
        Case((3.0 * randn(g, 5), keys), label="keys of very different lengths, a long query"),
        Case((randn(g, 12, scale=0.01), randn(g, 4, 12)), label="a short query (12,) against 4 keys"),
    ]


def cosine_reference(query, keys):
    return (keys @ query) / (keys.norm(dim=1) * query.norm())  # (n,)


def softmax_cases(g: torch.Generator) -> list[Case]:
    extreme = torch.tensor([[1e4, -1e4, 0.0, 5.0], [-1e4, -1e4 + 1.0, -1e4 + 2.0, -1e4 + 3.0]])
    return [
        Case((randn(g, 6),), label="a vector (6,)"),
        Case((randn(g, 3, 5, scale=4.0),), label="a matrix (3, 5): normalise each row"),
        Case((randn(g, 4, 5, 6, scale=30.0),), label="a tensor (4, 5, 6) of large scores"),
        Case((extreme,), label="scores of +-1e4 (overflow and underflow)"),
        Case((torch.tensor([3.0, 3.0, 3.0]),), label="equal scores"),
    ]


def softmax_reference(scores):
    return torch.softmax(scores, dim=-1)


def lookup_cases(g: torch.Generator) -> list[Case]:
    cases = [
        Case((randn(g, 6), randn(g, 10, 6), randn(g, 10, 3)), label="a random lookup, default temperature"),
    ]
    for t in (0.5, 4.0):
        cases.append(
            Case(
                (randn(g, 6), randn(g, 10, 6), randn(g, 10, 3)),
                {"temperature": t},
                label=f"a random lookup at temperature {t}",
            )
        )
    cases.append(
        Case(
            (randn(g, 8, scale=10.0), randn(g, 5, 8, scale=10.0), randn(g, 5, 2)),
            {"temperature": 0.01},
            label="a very low temperature (large scores)",
        )
    )
    return cases


def dot_scores(query, keys):
    """The stand-in for the student's ``dot_scores`` when it is wrong (it runs in the sandbox)."""
    return keys @ query  # (n,)


def stable_softmax(scores):
    """The stand-in for the student's ``stable_softmax`` when it is wrong (it runs in the sandbox)."""
    import torch

    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


def lookup_reference(query, keys, values, temperature=1.0):
    weights = qkv.softmax(keys @ query / temperature)  # (n,)
    return weights @ values, weights  # (d_v,), (n,)


SPEC = LabSpec(
    lab="soft_lookup",
    items=(
        Item(
            "test_dot_scores",
            2,
            "dot_scores",
            dot_cases,
            dot_reference,
            forbid=FORBID,
            describe="one dot-product score per key, shape (n,)",
        ),
        Item(
            "test_cosine_scores",
            2,
            "cosine_scores",
            cosine_cases,
            cosine_reference,
            forbid=FORBID,
            helpers=(dot_scores, stable_softmax),
            describe="cosine similarity of the query with each key, independent of the vectors' lengths",
        ),
        Item(
            "test_stable_softmax",
            3,
            "stable_softmax",
            softmax_cases,
            softmax_reference,
            atol=1e-6,
            forbid=FORBID,
            describe="softmax over the last axis of any shape, finite for scores of +-1e4",
        ),
        Item(
            "test_soft_lookup",
            3,
            "soft_lookup",
            lookup_cases,
            lookup_reference,
            forbid=FORBID,
            helpers=(dot_scores, stable_softmax),
            describe="the pair (out, weights) of a soft lookup with a temperature",
        ),
        Manual("written_soft_vs_hard", 2, title="Soft versus hard lookup"),
    ),
)
