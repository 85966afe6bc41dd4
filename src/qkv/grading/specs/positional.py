"""Grading spec for the lab ``positional``: sinusoidal encoding, its shift matrix, and permutation equivariance.

Four autograded items and one written answer. The references are the library's float64 table and shift
matrix and a closed form for the offset dot product. The encoding's tolerance, 1e-4, admits angles computed
in float32 up to position 300 (error about 2e-5) and nothing else: sin and cos swapped, a frequency with
``i/d`` instead of ``2i/d`` or positions from 1 are off by O(1). The permutation experiment is compared, on
the same inputs, with the gap the library's attention and encoding give, with and without positions.
"""

from __future__ import annotations

import math

import torch

import qkv
from qkv.grading.spec import Case, Item, LabSpec, Manual, randn
from qkv.grading.specs.contracts import float32_tensor, python_float

FORBID = ("qkv.sinusoidal_positional_encoding", "qkv.sinusoidal_shift_matrix")


def encoding_cases(g: torch.Generator) -> list[Case]:
    return [
        Case((P, d), label=f"{P} positions, d_model = {d}") for P, d in ((50, 8), (100, 64), (7, 2), (300, 16), (1, 4))
    ]


def encoding_reference(num_positions, d_model):
    return qkv.sinusoidal_positional_encoding(num_positions, d_model, dtype=torch.float64)


def shift_cases(g: torch.Generator) -> list[Case]:
    return [
        Case((k, d), label=f"k = {k}, d_model = {d}") for k, d in ((1, 2), (7, 32), (-11, 8), (0, 4), (40, 64), (3, 16))
    ]


def shift_reference(k, d_model):
    return qkv.sinusoidal_shift_matrix(k, d_model, dtype=torch.float64)


def offset_cases(g: torch.Generator) -> list[Case]:
    return [
        Case((k, d), label=f"k = {k}, d_model = {d}")
        for k, d in ((13, 64), (2, 4), (100, 128), (-5, 32), (0, 16), (1, 2))
    ]


def offset_reference(k, d_model):
    omega = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)  # (d/2,)
    return torch.cos(k * omega).sum()  # PE[p] . PE[p + k], the same for every p


def permutation_cases(g: torch.Generator) -> list[Case]:
    cases = []
    for L, d, d_k, d_v in ((8, 16, 8, 4), (6, 8, 4, 3), (12, 32, 16, 8)):
        x = randn(g, L, d)
        W = (randn(g, d, d_k, scale=2 / math.sqrt(d)), randn(g, d, d_k, scale=2 / math.sqrt(d)), randn(g, d, d_v))
        perm = torch.randperm(L, generator=g)
        for use in (False, True):
            cases.append(
                Case((x, perm, *W, use), label=f"L = {L}, d_model = {d}, {'with' if use else 'without'} positions")
            )
    return cases


def sinusoidal_encoding(num_positions, d_model):
    """The stand-in for the student's ``sinusoidal_encoding`` when it is wrong (it runs in the sandbox)."""
    import torch

    omega = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)  # (d/2,)
    angles = torch.arange(num_positions, dtype=torch.float64)[:, None] * omega  # (P, d/2)
    pe = torch.zeros(num_positions, d_model, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(angles), torch.cos(angles)
    return pe.float()  # (P, d_model), float32 as the lab asks


def permutation_reference(x, perm, W_q, W_k, W_v, use_positions):
    L, d_model = x.shape
    pe = qkv.sinusoidal_positional_encoding(L, d_model, dtype=x.dtype) if use_positions else torch.zeros_like(x)

    def f(inp):
        h = inp + pe  # positions belong to the slots, added after shuffling
        return qkv.scaled_dot_product_attention(h @ W_q, h @ W_k, h @ W_v, impl="explicit")  # (L, d_v)

    return (f(x[perm]) - f(x)[perm]).abs().max()


SPEC = LabSpec(
    lab="positional",
    items=(
        Item(
            "test_sinusoidal_encoding",
            3,
            "sinusoidal_encoding",
            encoding_cases,
            encoding_reference,
            atol=1e-4,
            rtol=0.0,
            forbid=FORBID,
            call=float32_tensor,
            describe="the float32 (num_positions, d_model) table: sin on even columns, cos on odd, w_i = 10000^(-2i/d_model)",
        ),
        Item(
            "test_shift_matrix",
            3,
            "shift_matrix",
            shift_cases,
            shift_reference,
            atol=1e-5,
            rtol=0.0,
            forbid=FORBID,
            call=float32_tensor,
            describe="the float32 block-diagonal rotation M_k with pe[p + k] = pe[p] @ M_k.T",
        ),
        Item(
            "test_offset_dot",
            2,
            "offset_dot",
            offset_cases,
            offset_reference,
            atol=1e-4,
            rtol=1e-6,
            forbid=FORBID,
            call=python_float,
            describe="PE[p] . PE[p + k] = sum_i cos(k w_i) as a Python float",
        ),
        Item(
            "test_permutation_test",
            3,
            "permutation_test",
            permutation_cases,
            permutation_reference,
            atol=1e-4,
            rtol=1e-3,
            forbid=FORBID,
            call=python_float,
            helpers=(sinusoidal_encoding,),
            describe="as a Python float, the largest gap |f(h(x[perm])) - f(h(x))[perm]|, with positions added after shuffling",
        ),
        Manual("written_add_vs_concat", 2, title="Adding versus concatenating positions"),
    ),
)
