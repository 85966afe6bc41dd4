"""Grading spec for the lab ``qkv_scores``: Q/K/V projections and attention in the row and column conventions.

Five autograded items and one written answer; one bug costs one item. The attention items run with the
student's ``score_matrix_rows`` and ``attention_rows`` when those pass their own items' cases, and with correct
stand-ins when not. ``test_conventions_agree`` grades only
that the two functions agree with each other (their correctness is graded by the two items before it): it
forbids nothing (those items judge the calls), and a difference that one of the two causes alone is charged to
that function's item only, so it costs this point only when both are wrong and still disagree.

Every case uses ``L != S`` and ``d_k != d_v`` (so a missing transpose or a swapped output changes a shape) and
``d_k`` of 16 or 64 (so scaling by ``d_k`` or not at all changes the values); one case per attention item has
large scores. ``torch.softmax`` is allowed in this lab (the students built it in ``soft_lookup``); the
attention functions of the library and PyTorch are not.
"""

from __future__ import annotations

import torch

import qkv
from qkv.grading.spec import QKV_ATTENTION, TORCH_ATTENTION, Case, Item, LabSpec, Manual, randn

FORBID = QKV_ATTENTION + TORCH_ATTENTION


def project_cases(g: torch.Generator) -> list[Case]:
    return [
        Case(
            (randn(g, 7, 6), randn(g, 6, 4), randn(g, 6, 4), randn(g, 6, 5)),
            label="7 tokens of width 6, d_k = 4, d_v = 5",
        ),
        Case(
            (randn(g, 1, 3), randn(g, 3, 2), randn(g, 3, 2), randn(g, 3, 7)),
            label="a single token, d_model = 3, d_k = 2, d_v = 7",
        ),
        Case(
            (randn(g, 5, 8, scale=3.0), randn(g, 8, 8), randn(g, 8, 8), randn(g, 8, 3)),
            label="5 tokens of width 8, d_k = d_model = 8, d_v = 3",
        ),
    ]


def project_reference(x, W_q, W_k, W_v):
    return x @ W_q, x @ W_k, x @ W_v  # (L, d_k), (L, d_k), (L, d_v)


def score_cases(g: torch.Generator) -> list[Case]:
    return [
        Case((randn(g, 5, 8), randn(g, 9, 8)), label="5 queries against 9 keys, d_k = 8"),
        Case((randn(g, 1, 3), randn(g, 4, 3)), label="one query against 4 keys"),
        Case((randn(g, 6, 16, scale=3.0), randn(g, 6, 16)), label="self-attention: 6 queries, 6 keys, d_k = 16"),
    ]


def score_reference(q, k):
    return torch.einsum("ld,sd->ls", q, k)  # (L, S), unscaled


def _qkv(g: torch.Generator, L: int, S: int, d_k: int, d_v: int, scale: float = 1.0):
    return randn(g, L, d_k, scale=scale), randn(g, S, d_k), randn(g, S, d_v)


def rows_cases(g: torch.Generator) -> list[Case]:
    return [
        Case(_qkv(g, 5, 7, 16, 3), label="L = 5 queries, S = 7 keys, d_k = 16, d_v = 3"),
        Case(_qkv(g, 4, 4, 64, 8), label="self-attention, d_k = 64"),
        Case(_qkv(g, 1, 9, 2, 5), label="one query, d_k = 2"),
        Case(_qkv(g, 6, 3, 32, 2, scale=4.0), label="large scores (nearly one-hot weights)"),
    ]


def score_matrix_rows(q, k):
    """The stand-in for the student's ``score_matrix_rows`` when it is wrong (it runs in the sandbox)."""
    return q @ k.T  # (L, S)


def attention_rows(q, k, v):
    """The stand-in for the student's ``attention_rows`` when it is wrong (it runs in the sandbox)."""
    import math

    import torch

    weights = torch.softmax(score_matrix_rows(q, k) / math.sqrt(q.shape[-1]), dim=-1)  # (L, S)
    return weights @ v, weights  # (L, d_v), (L, S)


def rows_reference(q, k, v):
    return qkv.scaled_dot_product_attention(q, k, v, return_weights=True, impl="explicit")  # (L, d_v), (L, S)


def columns_cases(g: torch.Generator) -> list[Case]:
    cases = []
    for L, S, d_k, d_v, scale, label in (
        (5, 7, 16, 3, 1.0, "L = 5 queries, S = 7 keys as columns, d_k = 16, d_v = 3"),
        (6, 6, 64, 2, 1.0, "self-attention as columns, d_k = 64"),
        (1, 9, 2, 5, 1.0, "one query column, d_k = 2"),
        (6, 3, 32, 2, 4.0, "large scores (nearly one-hot columns)"),
    ):
        q, k, v = _qkv(g, L, S, d_k, d_v, scale)
        cases.append(Case((q.T.contiguous(), k.T.contiguous(), v.T.contiguous()), label=label))
    return cases


def columns_reference(Q, K, V):
    return qkv.column_attention(Q, K, V)  # (d_v, L)


def agree_cases(g: torch.Generator) -> list[Case]:
    return [
        Case(_qkv(g, 6, 6, 4, 3), label="6 tokens, d_k = 4, d_v = 3, given to both functions"),
        Case(_qkv(g, 3, 9, 32, 5), label="3 queries, 9 keys, d_k = 32, d_v = 5, given to both functions"),
    ]


def both_conventions(attention_columns, q, k, v):
    """Runs in the sandbox: the student's column form on the transposes minus their row form transposed, zero
    when they agree. A difference that one of the two functions causes alone (the other one is right) is that
    function's item's loss, not this one's: then it returns zero too."""
    import math

    import torch

    def run(function, *args):
        try:
            return function(*args), None
        except Exception as err:  # a failing function is its own item's loss, unless the other one fails too
            return None, err

    def right(out, true):
        return (
            isinstance(out, torch.Tensor)
            and tuple(out.shape) == tuple(true.shape)
            and torch.allclose(out.double(), true, atol=1e-5, rtol=1e-4)
        )

    scores = q.double() @ k.double().T / math.sqrt(q.shape[-1])  # (L, S)
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    true = (e / e.sum(dim=-1, keepdim=True)) @ v.double()  # (L, d_v)
    out_cols, err = run(attention_columns, q.T, k.T, v.T)  # (d_v, L)
    if right(out_cols, true.T):
        return torch.zeros(tuple(true.T.shape), dtype=q.dtype)
    rows, rows_err = run(attention_columns.__globals__.get("attention_rows"), q, k, v)
    out_rows = rows[0] if isinstance(rows, (tuple, list)) and rows else rows  # (L, d_v)
    if right(out_rows, true):
        return torch.zeros(tuple(true.T.shape), dtype=q.dtype)
    if err or rows_err:
        raise err or rows_err
    if tuple(out_cols.shape) != tuple(out_rows.T.shape):
        raise ValueError(f"shapes: columns {tuple(out_cols.shape)}, rows transposed {tuple(out_rows.T.shape)}")
    return out_cols - out_rows.T  # (d_v, L): zero when the two conventions agree


def agree_reference(q, k, v):
    # The item checks agreement only: two functions that agree earn the point even if both are wrong (the
    # attention items grade correctness), as the lab's self-check and the item's description say.
    return torch.zeros(v.shape[-1], q.shape[0], dtype=q.dtype)  # (d_v, L)


SPEC = LabSpec(
    lab="qkv_scores",
    items=(
        Item(
            "test_project",
            2,
            "project",
            project_cases,
            project_reference,
            forbid=FORBID,
            describe="the tuple (q, k, v) = (x W_q, x W_k, x W_v) with shapes (L, d_k), (L, d_k), (L, d_v)",
        ),
        Item(
            "test_score_matrix_rows",
            2,
            "score_matrix_rows",
            score_cases,
            score_reference,
            forbid=FORBID,
            describe="the unscaled scores q k^T, shape (L, S)",
        ),
        Item(
            "test_attention_rows",
            3,
            "attention_rows",
            rows_cases,
            rows_reference,
            forbid=FORBID,
            helpers=(score_matrix_rows, attention_rows),
            describe="(out, weights) of softmax(q k^T / sqrt(d_k)) v, softmax along each row",
        ),
        Item(
            "test_attention_columns",
            3,
            "attention_columns",
            columns_cases,
            columns_reference,
            forbid=FORBID,
            helpers=(score_matrix_rows, attention_rows),
            describe="O = V softmax(K^T Q / sqrt(d_k)) with the softmax down each column, shape (d_v, L)",
        ),
        Item(
            "test_conventions_agree",
            1,
            "attention_columns",
            agree_cases,
            agree_reference,
            call=both_conventions,
            title="the two conventions agree",
            describe="attention_columns on the transposed inputs equals attention_rows' output transposed",
        ),
        Manual("written_conventions", 2, title="Why K^T Q and Q K^T are one computation"),
    ),
)
