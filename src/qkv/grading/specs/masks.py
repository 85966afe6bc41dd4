"""Grading spec for the lab ``masks``: causal, local and graph masks, masked attention, a future-leak experiment.

Five autograded items and one written answer. The masks are compared with the library's masks (booleans
compared as 0/1, exactly, and the dtype must be bool). ``masked_attention`` is compared with ``qkv.scaled_dot_product_attention`` (explicit
path, float64) on cases with ``L != S``, ``d_k != d_v``, a batch of heads under one ``(L, S)`` mask, and rows
that are **fully masked**, and scores of about 1e3 (overflow without the max-subtraction): there the reference gives zero weights and a zero output, so ``-1e9`` instead of
``-inf`` (uniform weights) and ``-inf`` without a special case (NaN) both lose the item, as does an inverted
mask. ``future_leak`` is compared with the same experiment computed by the library, with masks that leak
exactly at the boundary (position t sees t + 1) so an off-by-one in the compared range shows.
"""

from __future__ import annotations

import torch

import qkv
from qkv.grading.spec import QKV_ATTENTION, SOFTMAX_FAMILY, TORCH_ATTENTION, Case, Item, LabSpec, Manual, randn
from qkv.grading.specs.contracts import bool_tensor, python_float

MASKS = ("qkv.causal_mask", "qkv.local_mask", "qkv.graph_mask", "qkv.padding_mask")
FORBID_MASKS = MASKS
# A ready-made softmax is forbidden too: qkv.softmax already returns zeros on a fully masked row, which is
# part of this exercise, and the grader's name matching cannot forbid qkv.softmax but allow torch.softmax.
FORBID_ATTENTION = MASKS + QKV_ATTENTION + TORCH_ATTENTION + SOFTMAX_FAMILY


def _int(g: torch.Generator, lo: int, hi: int) -> int:
    return int(torch.randint(lo, hi + 1, (1,), generator=g))


# --- exercises 1-3: the masks ----------------------------------------------------------------------------
def causal_cases(g: torch.Generator) -> list[Case]:
    return [Case((1,), label="L = 1"), Case((4,), label="L = 4"), Case((_int(g, 5, 12),), label="a random length")]


def causal_reference(L):
    return qkv.causal_mask(L).double()


def local_cases(g: torch.Generator) -> list[Case]:
    return [
        Case((6, 0), label="window 0 (only the key itself)"),
        Case((7, 2), label="L = 7, window 2"),
        Case((4, 9), label="a window wider than the sequence"),
        Case((_int(g, 8, 15), _int(g, 1, 4)), label="a random length and window"),
    ]


def local_reference(L, window):
    return qkv.local_mask(L, window).double()


def _adjacency(g: torch.Generator, n: int, p: float) -> torch.Tensor:
    edges = torch.rand(n, n, generator=g) < p
    weights = randn(g, n, n)  # nonzero weights of either sign: any nonzero entry is an edge
    return torch.where(edges, weights, torch.zeros_like(weights))


def graph_cases(g: torch.Generator) -> list[Case]:
    path = torch.tensor([[0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1], [0, 0, 0, 0]])  # directed: not symmetric
    return [
        Case((path,), label="a directed path of 4 nodes (integer adjacency), self-loops by default"),
        Case((path.bool(),), {"self_loops": False}, label="the same path as booleans, without self-loops"),
        Case((_adjacency(g, 7, 0.3),), label="a random directed graph with weights of either sign"),
        Case((_adjacency(g, 6, 0.4),), {"self_loops": False}, label="a random weighted graph without self-loops"),
    ]


def graph_reference(adjacency, self_loops=True):
    return qkv.graph_mask(adjacency, self_loops=self_loops).double()


# --- exercise 4: masked attention ------------------------------------------------------------------------
def _random_mask(g: torch.Generator, L: int, S: int, full_rows: tuple[int, ...] = ()) -> torch.Tensor:
    mask = torch.rand(L, S, generator=g) < 0.5
    mask[torch.arange(L), torch.randint(S, (L,), generator=g)] = True  # every other row sees at least one key
    for i in full_rows:
        mask[i] = False
    return mask


def attention_cases(g: torch.Generator) -> list[Case]:
    return [
        Case(
            (randn(g, 5, 16), randn(g, 7, 16), randn(g, 7, 3), None), label="no mask, L = 5, S = 7, d_k = 16, d_v = 3"
        ),
        Case((randn(g, 6, 8), randn(g, 6, 8), randn(g, 6, 4), qkv.causal_mask(6)), label="a causal mask"),
        Case(
            (randn(g, 5, 8, scale=3.0), randn(g, 9, 8), randn(g, 9, 2), _random_mask(g, 5, 9, (3,))),
            label="a random mask with one fully masked row",
        ),
        Case(
            (randn(g, 2, 3, 4, 8), randn(g, 2, 3, 6, 8), randn(g, 2, 3, 6, 5), _random_mask(g, 4, 6, (0, 2))),
            label="batch 2 x 3 heads under one (L, S) mask with two fully masked rows",
        ),
        Case(
            (randn(g, 4, 4), randn(g, 4, 4), randn(g, 4, 2), torch.zeros(4, 4, dtype=torch.bool)),
            label="every key masked for every query",
        ),
        # Scores of about +-1e3: exp overflows (in float32 above 88, in float64 above 709) without the
        # max-subtraction the lab asks for, and gives NaN weights.
        Case(
            (randn(g, 6, 8, scale=1000.0), randn(g, 7, 8), randn(g, 7, 3), _random_mask(g, 6, 7, (4,))),
            label="huge scores (exp overflows without the max-subtraction) and a fully masked row",
        ),
    ]


def attention_reference(q, k, v, mask=None):
    return qkv.scaled_dot_product_attention(q, k, v, mask, return_weights=True, impl="explicit")


# --- exercise 5: the future-leak experiment ----------------------------------------------------------------
def _leak_case(g: torch.Generator, L: int, d: int, t: int, mask, label: str) -> Case:
    return Case((randn(g, L, d), randn(g, L, d), t, mask), label=label)


def leak_cases(g: torch.Generator) -> list[Case]:
    L = _int(g, 8, 12)
    peek_one = qkv.causal_mask(L) | torch.diag(torch.ones(L - 1, dtype=torch.bool), 1)  # position i also sees i + 1
    t = _int(g, 1, L - 3)
    return [
        _leak_case(g, L, 4, t, qkv.causal_mask(L), "a causal mask (nothing may leak)"),
        _leak_case(g, L, 4, t, None, "no mask"),
        _leak_case(g, L, 4, t, peek_one, "a mask that lets each position see the next one"),
        _leak_case(g, L, 6, 0, qkv.local_mask(L, 1), "a local mask, t = 0"),
        _leak_case(g, L, 4, L - 1, None, "t at the last position (nothing after it changes)"),
    ]


def masked_attention(q, k, v, mask=None):
    """The stand-in for the student's ``masked_attention`` when it is wrong (it runs in the sandbox)."""
    import math

    import torch

    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., L, S)
    if mask is None:
        mask = torch.ones_like(scores, dtype=torch.bool)
    scores = scores.masked_fill(~mask, float("-inf"))
    has_key = mask.any(dim=-1, keepdim=True)
    m = scores.amax(dim=-1, keepdim=True)
    e = torch.exp(scores - torch.where(has_key, m, torch.zeros_like(m)))
    total = e.sum(dim=-1, keepdim=True)
    weights = torch.where(has_key, e / torch.where(has_key, total, torch.ones_like(total)), torch.zeros_like(e))
    return weights @ v, weights


def leak_reference(x, x_new, t, mask):
    changed = torch.cat([x[: t + 1], x_new[t + 1 :]])
    before = qkv.scaled_dot_product_attention(x, x, x, mask, impl="explicit")
    after = qkv.scaled_dot_product_attention(changed, changed, changed, mask, impl="explicit")
    return (after[: t + 1] - before[: t + 1]).abs().max()


SPEC = LabSpec(
    lab="masks",
    items=(
        Item(
            "test_causal_mask",
            2,
            "causal_mask",
            causal_cases,
            causal_reference,
            atol=0,
            rtol=0,
            forbid=FORBID_MASKS,
            call=bool_tensor,
            describe="a boolean (L, L) mask, True where j <= i",
        ),
        Item(
            "test_local_mask",
            2,
            "local_mask",
            local_cases,
            local_reference,
            atol=0,
            rtol=0,
            forbid=FORBID_MASKS,
            call=bool_tensor,
            describe="a boolean (L, L) mask, True where |i - j| <= window",
        ),
        Item(
            "test_graph_mask",
            2,
            "graph_mask",
            graph_cases,
            graph_reference,
            atol=0,
            rtol=0,
            forbid=FORBID_MASKS,
            call=bool_tensor,
            describe="a boolean mask, True where adjacency[i, j] is nonzero (not transposed), plus the diagonal if self_loops",
        ),
        Item(
            "test_masked_attention",
            4,
            "masked_attention",
            attention_cases,
            attention_reference,
            forbid=FORBID_ATTENTION,
            describe="(out, weights) with masked scores at -inf, scaled by 1/sqrt(d_k); a fully masked row gives zeros",
        ),
        Item(
            "test_future_leak",
            2,
            "future_leak",
            leak_cases,
            leak_reference,
            forbid=FORBID_ATTENTION,
            call=python_float,
            helpers=(masked_attention,),
            describe="as a Python float, the largest change of the outputs at positions 0..t when the tokens after t change",
        ),
        Manual("written_fully_masked", 2, title="Fully masked rows: -1e9, NaN or zero"),
    ),
)
