"""Grading spec for the lab ``conv_attention``: a convolution rebuilt from attention heads (Cordonnier et al., 2020).

Five autograded items and one written answer. Scores and shift patterns are compared with closed forms; the two
convolutions with PyTorch's own ``conv1d``/``conv2d`` in float64, on cases with ``C_in != C_out`` (a weight
matrix used untransposed changes a shape), random asymmetric kernels (a flipped kernel changes the values),
images with ``H != W`` and a kernel that reads across the left and right edges (a shift of the flattened
sequence wraps into the neighbouring row instead of reading zero padding). The receptive field is compared
with a float64 path count, on stacks of different, asymmetric layers (the order of the product matters).
Every convolution and unfolding routine of PyTorch is forbidden: the point is to get the convolution out of
attention.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from qkv.grading.spec import Case, Item, LabSpec, Manual, randn
from qkv.grading.specs.contracts import float_tensor, integer_tensor

FORBID = (
    "torch.nn.functional.conv1d",
    "torch.nn.functional.conv2d",
    "torch.conv1d",
    "torch.conv2d",
    "torch.nn.Conv1d",
    "torch.nn.Conv2d",
    "torch.nn.functional.conv_transpose1d",
    "torch.nn.functional.conv_transpose2d",
    "torch.nn.functional.unfold",
    "torch.nn.Unfold",
    "torch.Tensor.unfold",
)


def _int(g: torch.Generator, lo: int, hi: int) -> int:
    return int(torch.randint(lo, hi + 1, (1,), generator=g))


# --- exercise 1: relative-position scores ------------------------------------------------------------------
def scores_cases(g: torch.Generator) -> list[Case]:
    alpha = 0.1 + 4 * float(torch.rand(1, generator=g))
    return [
        Case((4, 1, 1.0), label="L = 4, shift 1, alpha 1"),
        Case((6, -2, 0.5), label="a negative shift"),
        Case((5, 0, 3.0), label="shift 0"),
        Case((_int(g, 6, 12), _int(g, -3, 3), alpha), label="a random length, shift and alpha"),
    ]


def scores_reference(L, shift, alpha):
    pos = torch.arange(L, dtype=torch.float64)
    return -alpha * ((pos[None, :] - pos[:, None]) - shift) ** 2  # (L, L), s[i, j] = -alpha (j - i - shift)^2


# --- exercise 2: the hard shift pattern --------------------------------------------------------------------
def shift_cases(g: torch.Generator) -> list[Case]:
    return [
        Case((4, 1), label="L = 4, shift 1"),
        Case((6, -2), label="a negative shift"),
        Case((3, 0), label="shift 0"),
        Case((3, 5), label="a shift longer than the sequence"),
        Case((_int(g, 5, 10), _int(g, -4, 4)), label="a random length and shift"),
    ]


def shift_reference(L, shift):
    pos = torch.arange(L)
    return ((pos[None, :] - pos[:, None]) == shift).double()  # (L, L)


# --- exercises 3-4: the convolutions -----------------------------------------------------------------------
def shift_weights(L, shift):
    """The stand-in for the student's ``shift_weights`` when it is wrong (it runs in the sandbox)."""
    import torch

    pos = torch.arange(L)
    return ((pos[None, :] - pos[:, None]) == shift).float()  # (L, L)


def conv1d_cases(g: torch.Generator) -> list[Case]:
    return [
        Case((randn(g, 3, 10), randn(g, 2, 3, 5)), label="C_in = 3, C_out = 2, L = 10, K = 5"),
        Case((randn(g, 1, 7), randn(g, 4, 1, 1)), label="a kernel of size 1"),
        Case((randn(g, 2, 3), randn(g, 2, 2, 7)), label="a kernel longer than the sequence"),
        Case((randn(g, 4, 8), randn(g, 5, 4, 3)), label="C_in = 4, C_out = 5, K = 3"),
    ]


def conv1d_reference(x, weight):
    return F.conv1d(x[None], weight, padding=weight.shape[-1] // 2)[0]  # (C_out, L)


def conv2d_cases(g: torch.Generator) -> list[Case]:
    left = torch.zeros(1, 1, 3, 3)
    left[0, 0, 1, 0] = 1.0  # read the left neighbour: wraps into the previous row if done on the flat sequence
    return [
        Case((torch.arange(12.0).reshape(1, 3, 4), left), label="a kernel that reads the left neighbour"),
        Case((randn(g, 2, 4, 5), randn(g, 3, 2, 3, 3)), label="C_in = 2, C_out = 3, a 4 x 5 image, K = 3"),
        Case((randn(g, 1, 3, 6), randn(g, 2, 1, 1, 1)), label="a kernel of size 1"),
        Case((randn(g, 3, 5, 4), randn(g, 2, 3, 5, 5)), label="K = 5 on a 5 x 4 image"),
    ]


def conv2d_reference(img, weight):
    return F.conv2d(img[None], weight, padding=weight.shape[-1] // 2)[0]  # (C_out, H, W)


# --- exercise 5: receptive field ---------------------------------------------------------------------------
def _local(L: int, w: int) -> torch.Tensor:
    pos = torch.arange(L)
    return ((pos[:, None] - pos[None, :]).abs() <= w).float()


def _sparse(g: torch.Generator, n: int, L: int, p: float) -> torch.Tensor:
    keep = torch.rand(n, L, L, generator=g) < p
    return torch.where(keep, torch.rand(n, L, L, generator=g), torch.zeros(n, L, L))


def field_cases(g: torch.Generator) -> list[Case]:
    L = 7
    causal = torch.ones(L, L).tril()
    nxt = torch.diag(torch.ones(L - 1), 1)  # read the next position
    return [
        Case((_local(9, 1)[None],), label="one size-3 layer"),
        Case((torch.stack([_local(12, 1)] * 4),), label="four size-3 layers"),
        Case((torch.stack([nxt, causal]),), label="a shift, then a causal layer"),
        Case((torch.stack([causal, nxt, nxt]),), label="a causal layer, then two shifts"),
        Case((_sparse(g, 3, 10, 0.15),), label="three random sparse layers"),
        Case((torch.softmax(randn(g, 1, 6, 6), dim=-1),), label="one global attention layer"),
    ]


def field_reference(patterns):
    L = patterns.shape[-1]
    reach = torch.eye(L, dtype=torch.float64)
    for P in patterns:  # output = P_n ... P_1 x
        reach = ((P > 0).double() @ reach > 0).double()
    return reach.sum(dim=-1)  # (L,)


SPEC = LabSpec(
    lab="conv_attention",
    items=(
        Item(
            "test_relative_scores",
            2,
            "relative_scores",
            scores_cases,
            scores_reference,
            forbid=FORBID,
            describe="the (L, L) scores -alpha ((j - i) - shift)^2, rows i, columns j",
        ),
        Item(
            "test_shift_weights",
            2,
            "shift_weights",
            shift_cases,
            shift_reference,
            atol=0,
            rtol=0,
            forbid=FORBID,
            call=float_tensor,
            describe="a float tensor with ones at (i, i + shift) where that key exists, zero rows elsewhere (no wrap-around)",
        ),
        Item(
            "test_attention_conv1d",
            3,
            "attention_conv1d",
            conv1d_cases,
            conv1d_reference,
            forbid=FORBID,
            helpers=(shift_weights,),
            describe="the sum of K shift-heads equals conv1d with zero padding K // 2",
        ),
        Item(
            "test_attention_conv2d",
            4,
            "attention_conv2d",
            conv2d_cases,
            conv2d_reference,
            forbid=FORBID,
            helpers=(shift_weights,),
            describe="K * K shift-heads over the pixel sequence equal conv2d with zero padding K // 2",
        ),
        Item(
            "test_receptive_field",
            2,
            "receptive_field",
            field_cases,
            field_reference,
            atol=0,
            rtol=0,
            forbid=FORBID,
            call=integer_tensor,
            describe="an integer tensor: the number of inputs that reach each output of the last layer",
        ),
        Manual("written_cordonnier", 3, title="What Cordonnier et al. proved, and what they did not"),
    ),
)
