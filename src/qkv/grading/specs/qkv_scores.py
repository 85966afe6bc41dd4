"""Grading spec for the lab ``qkv_scores``: Q/K/V projections and attention in the row and column conventions.

Five autograded items and one written answer. ``test_conventions_agree`` grades only that the two
functions agree with each other (their correctness is graded by the two items before it). Every case uses ``L != S`` and ``d_k != d_v`` (so a missing
transpose or a swapped output changes a shape) and ``d_k`` of 16 or 64 (so scaling by ``d_k`` or not at all
changes the values); one case per attention item has large scores. ``torch.softmax`` is allowed in this lab
(the students built it in ``soft_lookup``); the attention functions of the library and PyTorch are not.
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


def rows_with_true_scores(attention_rows, q, k, v):
    """Runs in the sandbox: the student's attention with a correct ``score_matrix_rows`` in place of theirs (an
    error in exercise 2 costs exercise 2 only)."""

    def score_matrix_rows(q, k):
        return q @ k.T  # (L, S)

    helpers = {"score_matrix_rows": score_matrix_rows}
    scope = attention_rows.__globals__
    saved = {name: scope[name] for name in helpers if name in scope}
    scope.update(helpers)
    try:
        return attention_rows(q, k, v)
    finally:
        for name in helpers:
            scope.pop(name, None)
        scope.update(saved)


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
    """Runs in the sandbox: the student's column form on the transposes minus their row form transposed."""
    attention_rows = attention_columns.__globals__["attention_rows"]
    out_rows, _ = attention_rows(q, k, v)  # (L, d_v)
    out_cols = attention_columns(q.T, k.T, v.T)  # (d_v, L)
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
            call=rows_with_true_scores,
            describe="(out, weights) of softmax(q k^T / sqrt(d_k)) v, softmax along each row",
        ),
        Item(
            "test_attention_columns",
            3,
            "attention_columns",
            columns_cases,
            columns_reference,
            forbid=FORBID,
            describe="O = V softmax(K^T Q / sqrt(d_k)) with the softmax down each column, shape (d_v, L)",
        ),
        Item(
            "test_conventions_agree",
            1,
            "attention_columns",
            agree_cases,
            agree_reference,
            forbid=FORBID,
            call=both_conventions,
            title="the two conventions agree",
            describe="attention_columns on the transposed inputs equals attention_rows' output transposed",
        ),
        Manual("written_conventions", 2, title="Why K^T Q and Q K^T are one computation"),
    ),
)
