"""PyTorch's own attention tests, ported to qkv's API and compared with PyTorch in the same run.

Read in pytorch/pytorch through the course's code search and rewritten here for qkv (nothing is copied):

- ``test/test_transformers.py`` at commit 00030eb8e81f911c48c4d7634fa6b8bb2fae1a1b:
  ``TestTransformers.test_scaled_dot_product_attention`` (3-D and 4-D inputs, masks of rank 2 and of the inputs'
  rank, causal, and the error for a mask with ``is_causal``), ``is_causal_kernels`` and ``test_incompatible_mask``;
  ``TestSDPA.test_sdp_math_gradcheck`` (packed, contiguous or not, float64 gradcheck),
  ``test_scaled_dot_product_fused_attention_vs_math_cpu`` (four dtypes, causal, training),
  ``test_scaled_dot_product_fused_attention_mask_vs_math_cpu`` (every broadcast mask shape of rank 2 and 4; here
  of every rank 0 to 4), ``test_scaled_dot_product_fused_attention_with_inf`` (a band mask),
  ``test_scaled_dot_product_attention_math_with_negative_scale``;
  ``TestSDPAFailureModes.test_invalid_inputs_different_datatypes``, ``test_invalid_inputs_1_dimensional_inputs``,
  ``test_invalid_sequence_lengths`` (zero lengths, which PyTorch's CPU path answers), ``test_invalid_last_dim_stride``,
  ``test_invalid_fused_inputs_broadcast``, ``test_invalid_fused_inputs_dim_3``, ``test_invalid_fused_inputs_head_dim``;
  ``TestAttnBias.test_is_causal_equals_upper_left``, ``test_causal_variants`` (lower right, through a mask) and
  ``test_is_causal_and_mask_fails``.
- ``test/nn/test_multihead_attention.py`` at commit 03f76200b7b3eccc1be6d93f2841dcfea04d972e:
  ``test_multihead_attention`` (no masking, ``key_padding_mask``, ``kdim``/``vdim``, ``average_attn_weights``;
  ``add_bias_kv`` and ``add_zero_attn``), ``test_multihead_attn_3d_attn_mask``, ``test_multihead_attn_no_bias``,
  ``test_multihead_attn_invalid_shape``, ``test_multihead_self_attn_two_masks_fast_path``,
  ``test_multihead_attention_dtype`` (on the CPU), ``test_multihead_attn_in_proj_weight_none``,
  ``test_multihead_attn_in_proj_bias_none``.

Every case runs on every path that takes it (``impl="explicit"``, ``"fused"``, ``"auto"`` and
``qkv.chunked_attention``, which takes no mask) and must give PyTorch's answer, computed in the same run by
PyTorch's math backend in float64, or the ``ValueError`` that qkv documents. Where qkv deliberately differs the case
checks the difference: it refuses 1-D inputs (so does PyTorch), batch dims that would broadcast, float (additive)
masks and a mask together with ``is_causal``; it has no dropout, no ``add_bias_kv``/``add_zero_attn``, no
sequence-first or unbatched layout; ``MultiHeadAttention`` takes one boolean ``mask`` (True = may attend, so
PyTorch's ``key_padding_mask`` is ``~kpm[:, None, None, :]``), a 3-D mask is ``(B, L, S)`` (PyTorch's is
``(B * H, L, S)``), a 1-D mask ``(S,)`` broadcasts, and a query with no key gives ``out_proj.bias`` where PyTorch's
module gives NaN (qkv's SDPA and PyTorch's both give 0 there).

Run as a script, the module prints how many cases each path answers as PyTorch does, refuses with a ValueError,
answers wrongly or crashes on (``PYTHONPATH=other/src python tests/test_pytorch_ported.py`` measures another copy)::

    python tests/test_pytorch_ported.py
"""

from __future__ import annotations

import copy
import itertools
import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.bias import CausalBias, causal_lower_right, causal_upper_left

import qkv

SDPA_PATHS = ("explicit", "fused", "auto", "chunked")
MHA_PATHS = ("explicit", "fused", "auto")
TRANSFORMERS = "test_transformers.py"
MHA_TESTS = "test_multihead_attention.py"

# The tolerances of PyTorch's CPU tests for float32 (and float64), float16 and bfloat16.
TOLERANCE = {
    torch.float64: dict(atol=1e-10, rtol=1e-9),
    torch.float32: dict(atol=1e-5, rtol=5e-6),
    torch.float16: dict(atol=1e-2, rtol=1e-2),
    torch.bfloat16: dict(atol=5e-2, rtol=5e-2),
}
GRAD_TOLERANCE = {**TOLERANCE, torch.float32: dict(atol=2e-5, rtol=1e-4)}


def rand(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.float64).to(dtype)


def packed(B: int, H: int, L: int, d: int, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    """PyTorch's packed layout: one (B, L, 3 * H * d) projection split into q, k, v, each a (B, H, L, d) view."""
    x = rand(B, L, 3 * H * d, dtype=dtype)
    return tuple(t.view(B, L, H, d).transpose(1, 2) for t in x.split(H * d, dim=-1))


# -- scaled dot-product attention ------------------------------------------------------------------------------------


@dataclass
class Sdpa:
    """One call of scaled dot-product attention: qkv's arguments, and PyTorch's where they differ."""

    source: str
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    mask: torch.Tensor | None = None  # qkv's: boolean, True = may attend
    torch_mask: torch.Tensor | None = None  # what PyTorch is given when not `mask` (its float form, or 2-D)
    scale: float | None = None
    is_causal: bool = False
    error: str | None = None  # the documented ValueError (a regex); None: PyTorch's answer
    torch_raises: bool = False  # with `error`: PyTorch refuses the case too (else it answers, and qkv differs)
    grad: bool = False  # compare the gradients too

    def paths(self) -> tuple[str, ...]:
        return SDPA_PATHS if self.mask is None else SDPA_PATHS[:3]


SDPA: dict[str, Callable[[], Sdpa]] = {}


def register(name: str, build: Callable[[], Sdpa]) -> None:
    assert name not in SDPA, name
    SDPA[name] = build


def call_sdpa(case: Sdpa, path: str, **kw: object) -> torch.Tensor:
    """qkv's answer on one path; keywords are passed only when set, so that an older qkv can be measured too."""
    if case.scale is not None:
        kw["scale"] = case.scale
    if path == "chunked":
        if case.is_causal:
            kw["causal"] = True
        return qkv.chunked_attention(case.q, case.k, case.v, **kw)  # type: ignore[arg-type]
    if case.is_causal:
        kw["is_causal"] = True
    return qkv.scaled_dot_product_attention(case.q, case.k, case.v, case.mask, impl=path, **kw)  # type: ignore[arg-type, call-overload]


def torch_inputs(case: Sdpa, grad: bool = False) -> tuple[torch.Tensor, ...]:
    q, k, v = (t.detach().double().requires_grad_(grad) for t in (case.q, case.k, case.v))
    mask = case.mask if case.torch_mask is None else case.torch_mask
    if mask is not None and not isinstance(mask, CausalBias) and mask.is_floating_point():
        mask = mask.double()
    return q, k, v, mask


def torch_sdpa(q, k, v, mask, case: Sdpa) -> torch.Tensor:
    """PyTorch's answer: its math backend, in float64."""
    with sdpa_kernel([SDPBackend.MATH]):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=case.is_causal, scale=case.scale)


def torch_weights(case: Sdpa) -> torch.Tensor:
    """PyTorch's softmax of the float64 scores; a row with no allowed key is 0, where PyTorch's SDPA outputs 0."""
    q, k, v, _ = torch_inputs(case)
    mask = case.mask
    L, S = q.shape[-2], k.shape[-2]
    d_k = q.shape[-1]
    scale = case.scale if case.scale is not None else 1 / math.sqrt(d_k) if d_k else 1.0  # d_k = 0: scores are 0
    scores = q @ k.transpose(-2, -1) * scale
    if case.is_causal:
        mask = torch.ones(L, S, dtype=torch.bool).tril()
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1).nan_to_num(0.0)


def compare_sdpa(case: Sdpa, path: str) -> None:
    """qkv on ``path`` gives PyTorch's output (and gradients): raises AssertionError if not."""
    grad = case.grad
    q, k, v = (t.detach().clone().requires_grad_(grad) for t in (case.q, case.k, case.v))
    mine = Sdpa(**{**case.__dict__, "q": q, "k": k, "v": v})
    got = call_sdpa(mine, path)
    tq, tk, tv, tmask = torch_inputs(case, grad)
    want = torch_sdpa(tq, tk, tv, tmask, case)
    assert got.shape == want.shape, f"shape {tuple(got.shape)}, PyTorch's {tuple(want.shape)}"
    assert got.dtype == case.q.dtype, f"dtype {got.dtype} for inputs of {case.q.dtype}"
    torch.testing.assert_close(got, want.to(got.dtype), **TOLERANCE[got.dtype])
    if grad:
        upstream = torch.randn_like(want)
        got_grads = torch.autograd.grad(got, (q, k, v), upstream.to(got.dtype))
        want_grads = torch.autograd.grad(want, (tq, tk, tv), upstream)
        for name, g, w in zip("qkv", got_grads, want_grads):
            torch.testing.assert_close(g, w.to(g.dtype), **GRAD_TOLERANCE[g.dtype], msg=lambda m, n=name: f"d{n}: {m}")


# test_scaled_dot_product_attention: (input dims, mask dims, causal); causal is PyTorch's flag (a tril mask in its
# reference). qkv takes the flag, and the tril mask of that rank, and refuses both at once as PyTorch does.
REFERENCE_VARIANTS = [(3, None, False), (3, 2, False), (3, 2, True), (3, 3, False), (3, 3, True)]
REFERENCE_VARIANTS += [(4, None, False), (4, 2, False), (4, 2, True), (4, 4, False), (4, 4, True)]
for (input_dim, mask_dim, causal), dtype in itertools.product(REFERENCE_VARIANTS, [torch.float64, torch.float32]):

    def build(input_dim=input_dim, mask_dim=mask_dim, causal=causal, dtype=dtype, form="mask") -> Sdpa:
        N, N_prime, L, S, E = 5, 2, 4, 3, 6
        batch = (N,) if input_dim == 3 else (N, N_prime)
        q, k, v = rand(*batch, L, E, dtype=dtype), rand(*batch, S, E, dtype=dtype), rand(*batch, S, E, dtype=dtype)
        source = f"{TRANSFORMERS} test_scaled_dot_product_attention"
        if form == "flag":
            return Sdpa(source, q, k, v, is_causal=True, grad=dtype == torch.float64)
        size = (L, S) if mask_dim == 2 else (*batch, L, S)
        mask = torch.ones(size, dtype=torch.bool).tril() if causal else torch.randint(0, 2, size).bool()
        if form == "flag+mask":
            return Sdpa(
                source, q, k, v, mask, is_causal=True, error=r"mask must be None when is_causal=True", torch_raises=True
            )
        return Sdpa(source, q, k, v, mask, grad=dtype == torch.float64)

    tag = f"sdpa-{input_dim}d-mask{mask_dim}{'-causal' if causal else ''}-{str(dtype)[6:]}"
    if mask_dim is not None:
        register(tag, build)
    if causal:
        register(tag + "-flag", lambda build=build: build(form="flag"))
        register(tag + "-flag+mask", lambda build=build: build(form="flag+mask"))


# test_scaled_dot_product_fused_attention_vs_math_cpu: packed (non-contiguous) inputs, four dtypes, causal or not,
# with gradients ("train"); one longer sequence too (more than one of chunked attention's blocks).
for dtype, causal, L in [
    *itertools.product([torch.float64, torch.float32, torch.bfloat16, torch.float16], [False, True], [267]),
    (torch.float32, True, 1030),
]:

    def build(dtype=dtype, causal=causal, L=L) -> Sdpa:
        q, k, v = packed(2, 3, L, 8, dtype)
        return Sdpa(
            f"{TRANSFORMERS} test_scaled_dot_product_fused_attention_vs_math_cpu", q, k, v, is_causal=causal, grad=True
        )

    register(f"fused-vs-math-{str(dtype)[6:]}-L{L}{'-causal' if causal else ''}", build)


# test_scaled_dot_product_fused_attention_mask_vs_math_cpu: boolean masks of every shape that broadcasts to
# (B, H, L, S), each dim full or 1. PyTorch's test draws ranks 2 and 4; qkv takes every rank from 0 to 4 (a 0-D or
# 1-D mask is given to PyTorch as 2-D: its fused kernel fails on 1-D masks with an IndexError).
B, H, L_MASK, S_MASK = 2, 3, 267, 514
MASK_SHAPES = [
    tuple(full if keep else 1 for full, keep in zip((B, H, L_MASK, S_MASK)[4 - rank :], keeps))
    for rank in range(5)
    for keeps in itertools.product([True, False], repeat=rank)
]
for shape, dtype in [(s, torch.float32) for s in MASK_SHAPES] + [
    (s, d) for s in [(L_MASK, S_MASK), (B, H, L_MASK, S_MASK)] for d in (torch.float64, torch.bfloat16, torch.float16)
]:

    def build(shape=shape, dtype=dtype) -> Sdpa:
        q, k, v = (rand(B, H, n, 8, dtype=dtype) for n in (L_MASK, S_MASK, S_MASK))
        mask = torch.randint(0, 2, shape).bool()
        torch_mask = mask.reshape((1,) * (2 - mask.dim()) + mask.shape) if mask.dim() < 2 else None
        source = f"{TRANSFORMERS} test_scaled_dot_product_fused_attention_mask_vs_math_cpu"
        return Sdpa(source, q, k, v, mask, torch_mask, grad=dtype in (torch.float32, torch.float64))

    register(f"mask-{'x'.join(map(str, shape)) or 'scalar'}-{str(dtype)[6:]}", build)

for rank in (2, 4):

    def build(rank=rank) -> Sdpa:
        q, k, v = (rand(B, H, n, 8) for n in (L_MASK, S_MASK, S_MASK))
        additive = torch.randn((B, H, L_MASK, S_MASK)[4 - rank :])  # PyTorch adds a float mask to the scores
        source = f"{TRANSFORMERS} test_scaled_dot_product_fused_attention_mask_vs_math_cpu (float mask)"
        return Sdpa(source, q, k, v, additive, error=r"mask must be a boolean tensor \(True = may attend\)")

    register(f"mask-float-{rank}d", build)


def band_mask_case() -> Sdpa:
    """test_scaled_dot_product_fused_attention_with_inf: a band of 10 keys, given to PyTorch as -inf outside it."""
    q, k, v = (rand(1, 2, 600, 8) for _ in range(3))
    i, j = torch.arange(600)[:, None], torch.arange(600)[None, :]
    band = (j <= i) & (j > i - 10)
    full = torch.full((600, 600), float("-inf"))
    additive = torch.triu(full, diagonal=1) + torch.tril(full, diagonal=-10)
    return Sdpa(f"{TRANSFORMERS} test_scaled_dot_product_fused_attention_with_inf", q, k, v, band, additive)


def negative_scale_case() -> Sdpa:
    """test_scaled_dot_product_attention_math_with_negative_scale (float64 here: the scale is -1e4)."""
    x = rand(1, 3, 64, 64, dtype=torch.float64)
    return Sdpa(f"{TRANSFORMERS} test_..._math_with_negative_scale", x, x, x, scale=-1.0 / 0.0001)


register("band-mask", band_mask_case)
register("negative-scale", negative_scale_case)

# TestAttnBias.test_is_causal_equals_upper_left (batch and heads smaller than PyTorch's 16 x 16), float16 with
# gradients: qkv's flag against PyTorch's, and qkv.causal_mask against PyTorch's causal_upper_left bias;
# test_causal_variants' lower-right variant, which qkv expresses as a mask (its flag is top-left).
CAUSAL_SHAPES = [(2, 2, 128, 128, 16), (2, 2, 128, 256, 32), (2, 2, 256, 128, 32), (1, 1, 23, 56, 15)]
for shape, variant in itertools.product(CAUSAL_SHAPES, ["flag", "upper_left", "lower_right"]):

    def build(shape=shape, variant=variant) -> Sdpa:
        b, h, L, S, d = shape
        q, k, v = (rand(b, h, n, d, dtype=torch.float16) for n in (L, S, S))
        source = f"{TRANSFORMERS} TestAttnBias.test_is_causal_equals_upper_left"
        if variant == "flag":
            return Sdpa(source, q, k, v, is_causal=True, grad=True)
        if variant == "upper_left":
            return Sdpa(source, q, k, v, qkv.causal_mask(L, S), causal_upper_left(L, S), grad=True)
        lower_right = torch.ones(L, S, dtype=torch.bool).tril(S - L)
        source = f"{TRANSFORMERS} TestAttnBias.test_causal_variants"
        return Sdpa(source, q, k, v, lower_right, causal_lower_right(L, S), grad=True)

    if variant != "lower_right" or shape[2] <= shape[3]:  # PyTorch leaves out L > S: lower-right rows with no key
        register(f"causal-{variant}-{'x'.join(map(str, shape))}", build)


def causal_and_mask_case() -> Sdpa:
    q, k, v = (rand(2, 2, 16, 16, dtype=torch.float16) for _ in range(3))
    mask = qkv.causal_mask(16)
    return Sdpa(
        f"{TRANSFORMERS} test_is_causal_and_mask_fails",
        q,
        k,
        v,
        mask,
        is_causal=True,
        error=r"mask must be None when is_causal=True",
        torch_raises=True,
    )


register("causal-and-mask", causal_and_mask_case)


def different_dtypes_case() -> Sdpa:
    shape = (1, 4, 8, 16)
    q, k, v = rand(*shape), rand(*shape, dtype=torch.float16), rand(*shape, dtype=torch.float16)
    return Sdpa(
        f"{TRANSFORMERS} test_invalid_inputs_different_datatypes",
        q,
        k,
        v,
        error=r"share one dtype.*query: torch.float32.*key: torch.float16",
        torch_raises=True,
    )


register("different-dtypes", different_dtypes_case)

# test_invalid_inputs_1_dimensional_inputs (PyTorch raises RuntimeError), and the 1-D mixes a user tries: a single
# query (d,) against (S, d) keys, 1-D keys or values beside 2-D, 4-D and 5-D tensors.
ONE_D = {
    "q4-k1x4": ((4,), (1, 4), (1, 4), "query"),
    "q8-k5x8": ((8,), (5, 8), (5, 3), "query"),
    "all-1d": ((8,), (8,), (8,), "query"),
    "q4d-k1d": ((2, 2, 5, 8), (8,), (2, 2, 7, 3), "key"),
    "q5d-v1d": ((1, 2, 2, 5, 8), (1, 2, 2, 7, 8), (7,), "value"),
    "q1d-k4d": ((8,), (2, 2, 7, 8), (2, 2, 7, 3), "query"),
}
for name, (qs, ks, vs, culprit) in ONE_D.items():

    def build(qs=qs, ks=ks, vs=vs, culprit=culprit) -> Sdpa:
        got = {"query": qs, "key": ks, "value": vs}[culprit]
        error = rf"{culprit} must have at least 2 dimensions; got shape {re.escape(str(got))}"
        return Sdpa(
            f"{TRANSFORMERS} test_invalid_inputs_1_dimensional_inputs",
            rand(*qs),
            rand(*ks),
            rand(*vs),
            error=error,
            torch_raises=True,
        )

    register(f"one-d-{name}", build)

# test_invalid_fused_inputs_broadcast (PyTorch's math path broadcasts (1, 4, 3, 8) against (2, 4, 3, 8)), and the mixed
# ranks PyTorch's matmul would broadcast: qkv refuses to broadcast batch dims, with the shapes in the message.
BROADCAST = {
    "q1x4x3x8-kv2x4x3x8": ((1, 4, 3, 8), (2, 4, 3, 8), (2, 4, 3, 8)),
    "q4x8-kv2x5x8": ((4, 8), (2, 5, 8), (2, 5, 3)),
    "q2x4x8-kv5x8": ((2, 4, 8), (5, 8), (5, 3)),
    "q2x2x4x8-kv2x5x8": ((2, 2, 4, 8), (2, 5, 8), (2, 5, 3)),
}
for name, (qs, ks, vs) in BROADCAST.items():

    def build(qs=qs, ks=ks, vs=vs) -> Sdpa:
        error = rf"key must be \(\.\.\., S, d_k\) with leading dims {re.escape(str(qs[:-2]))}.*got shape {re.escape(str(ks))}"
        return Sdpa(f"{TRANSFORMERS} test_invalid_fused_inputs_broadcast", rand(*qs), rand(*ks), rand(*vs), error=error)

    register(f"broadcast-{name}", build)


def strided_case() -> Sdpa:
    """test_invalid_last_dim_stride: a query whose last dim has stride 2 (overlapping), which PyTorch's math path takes."""
    q, k, v = (rand(2, 2, 8, 8) for _ in range(3))
    q = q.as_strided((2, 2, 8, 8), (2, 2, 2, 2))
    return Sdpa(f"{TRANSFORMERS} test_invalid_last_dim_stride", q, k, v)


register("last-dim-stride", strided_case)
register("dim-3", lambda: Sdpa(f"{TRANSFORMERS} test_invalid_fused_inputs_dim_3", *(rand(2, 3, 8) for _ in range(3))))
for d in (9, 257):
    register(
        f"head-dim-{d}",
        lambda d=d: Sdpa(f"{TRANSFORMERS} test_invalid_fused_inputs_head_dim", *(rand(2, 2, 3, d) for _ in range(3))),
    )

# test_invalid_sequence_lengths: PyTorch's fused CUDA kernels refuse L = S = 0, its CPU path answers (an empty
# output for L = 0, zeros for S = 0); every rank, with no mask, a full mask or the causal flag; an empty batch,
# d_k = 0 (every score an empty sum, 0: uniform weights) and d_v = 0.
ZERO = [(batch, L, S, 8, 3) for batch in ((), (2,), (2, 2)) for L, S in ((0, 5), (4, 0), (0, 0))]
ZERO += [((0,), 4, 5, 8, 3), ((2, 2), 4, 5, 0, 3), ((2,), 4, 5, 8, 0), ((0, 2), 0, 0, 8, 3)]
for (batch, L, S, d_k, d_v), form in itertools.product(ZERO, ["none", "mask", "causal"]):

    def build(batch=batch, L=L, S=S, d_k=d_k, d_v=d_v, form=form) -> Sdpa:
        q, k, v = (
            rand(*batch, L, d_k, dtype=torch.float64),
            rand(*batch, S, d_k, dtype=torch.float64),
            rand(*batch, S, d_v, dtype=torch.float64),
        )
        mask = torch.rand(*batch, L, S) < 0.5 if form == "mask" else None
        return Sdpa(
            f"{TRANSFORMERS} test_invalid_sequence_lengths", q, k, v, mask, is_causal=form == "causal", grad=True
        )

    register(f"zero-{'x'.join(map(str, batch)) or 'unbatched'}-L{L}-S{S}-dk{d_k}-dv{d_v}-{form}", build)


@pytest.mark.parametrize(("name", "path"), [(n, p) for n, b in SDPA.items() for p in b().paths()])
def test_sdpa_gives_pytorchs_answer_or_the_documented_error(name, path):
    case = SDPA[name]()
    if case.error is None:
        compare_sdpa(case, path)
        return
    with pytest.raises(ValueError, match=case.error):
        call_sdpa(case, path)


@pytest.mark.parametrize("name", [n for n, b in SDPA.items() if b().error is None])
def test_sdpa_weights_are_pytorchs_softmax(name):
    case = SDPA[name]()
    out, weights = call_sdpa(case, "explicit", return_weights=True)
    want = torch_weights(case)
    assert weights.shape == want.shape and weights.dtype == case.q.dtype
    torch.testing.assert_close(weights, want.to(weights.dtype), **TOLERANCE[weights.dtype])


@pytest.mark.parametrize("name", [n for n, b in SDPA.items() if b().error is not None])
def test_what_qkv_refuses_pytorch_answers_or_refuses_too(name):
    """A documented difference is a real one: PyTorch's math backend answers (qkv refuses on purpose) or raises too."""
    case = SDPA[name]()
    call = lambda: torch_sdpa(case.q, case.k, case.v, case.mask, case)
    if case.torch_raises:
        with pytest.raises(RuntimeError):
            call()
    else:
        assert call().shape[-2:] == (case.q.shape[-2], case.v.shape[-1])


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("path", SDPA_PATHS)
@pytest.mark.parametrize("contiguous", [True, False])
def test_float64_gradcheck(contiguous, path, causal):
    """test_sdp_math_gradcheck: packed float64 inputs, contiguous or not, every path, causal or not; in gradcheck's
    fast mode (a random projection of the Jacobian), the mode of PyTorch's own gradcheck helper."""
    q, k, v = packed(4, 2, 4, 16, torch.float64)
    inputs = tuple((t.contiguous() if contiguous else t).detach().requires_grad_() for t in (q, k, v))
    assert all(t.is_contiguous() == contiguous for t in inputs)
    attend = lambda q, k, v: call_sdpa(Sdpa("gradcheck", q, k, v, is_causal=causal), path)
    assert torch.autograd.gradcheck(attend, inputs, fast_mode=True)


# -- qkv.softmax ---------------------------------------------------------------------------------------------------


SOFTMAX_SHAPES = [(3, 0), (0, 3), (0,), (2, 0, 4), (1,), (1, 1), (4, 1)]


@pytest.mark.parametrize("shape", SOFTMAX_SHAPES)
def test_softmax_of_empty_and_size_one_dims_is_torchs(shape):
    x = rand(*shape, dtype=torch.float64)
    for dim in range(-len(shape), len(shape)):
        got = qkv.softmax(x, dim=dim)
        assert got.shape == x.shape
        torch.testing.assert_close(got, torch.softmax(x, dim=dim))


# -- MultiHeadAttention ---------------------------------------------------------------------------------------------


@dataclass
class Mha:
    """One call of multi-head attention: a torch module, batch-first inputs, qkv's mask and PyTorch's masks."""

    source: str
    module: nn.MultiheadAttention
    query: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor
    mask: torch.Tensor | None = None
    torch_kwargs: dict = field(default_factory=dict)  # attn_mask / key_padding_mask in PyTorch's convention
    is_causal: bool = False
    average: bool = False  # compare with PyTorch's averaged weights (w.mean(1) of qkv's)
    error: str | None = None
    reference_dtype: torch.dtype | None = None  # compare with a float64 copy of the module (low-precision cases)


MHA: dict[str, Callable[[], Mha]] = {}


def torch_module(d_model: int, H: int, dtype: torch.dtype = torch.float64, **kw: object) -> nn.MultiheadAttention:
    m = nn.MultiheadAttention(d_model, H, **kw).to(dtype).eval()
    with torch.no_grad():  # PyTorch starts its biases at zero: make them count
        for b in (m.in_proj_bias, m.out_proj.bias):
            if b is not None:
                b.normal_()
    return m


def call_mha(case: Mha, path: str) -> tuple[torch.Tensor, torch.Tensor | None]:
    mine = qkv.MultiHeadAttention.from_torch(case.module, impl=path)
    kw: dict[str, object] = {"need_weights": path != "fused"}
    if case.mask is not None:
        kw["mask"] = case.mask
    if case.is_causal:
        kw["is_causal"] = True
    with torch.no_grad():
        return mine(case.query, case.key, case.value, **kw)


def torch_mha(case: Mha) -> tuple[torch.Tensor, torch.Tensor]:
    module = case.module if case.reference_dtype is None else copy.deepcopy(case.module).to(case.reference_dtype)
    dtype = next(module.parameters()).dtype
    q, k, v = (
        x.to(dtype) if module.batch_first else x.to(dtype).transpose(0, 1) for x in (case.query, case.key, case.value)
    )
    with torch.no_grad():
        out, w = module(q, k, v, need_weights=True, average_attn_weights=case.average, **case.torch_kwargs)
    return (out if module.batch_first else out.transpose(0, 1)), w


def compare_mha(case: Mha, path: str) -> None:
    out, w = call_mha(case, path)
    want, want_w = torch_mha(case)
    assert out.shape == want.shape and out.dtype == case.query.dtype
    tol = TOLERANCE[out.dtype]
    no_key = want.isnan().any(dim=-1)  # (B, L): PyTorch's module gives NaN where a query has no key
    bias = case.module.out_proj.bias
    empty = torch.zeros(out.shape[-1], dtype=out.dtype) if bias is None else bias.detach().to(out.dtype)
    torch.testing.assert_close(out[~no_key], want[~no_key].to(out.dtype), **tol)
    torch.testing.assert_close(out[no_key], empty.expand(int(no_key.sum()), -1), **tol)  # qkv: zero heads, the bias
    if w is not None:
        w = w.mean(dim=1) if case.average else w  # (B, L, S) or (B, H, L, S)
        torch.testing.assert_close(w, want_w.nan_to_num(0.0).to(w.dtype), **tol)


def kpm_case(key_padding: bool, same_embed_dim: bool, average: bool) -> Mha:
    """test_multihead_attention's helper: one decoder state (L = 1) against S encoder states, sequence-first."""
    B, S = (int(torch.randint(2, 11, ())) for _ in range(2))
    d_head, H = int(torch.randint(3, 11, ())), 2 * int(torch.randint(2, 6, ()))
    d_model = d_head * H
    kv_dim = d_model if same_embed_dim else int(torch.randint(5, 21, ()))
    module = torch_module(d_model, H, kdim=kv_dim, vdim=kv_dim)
    query, kv = rand(B, 1, d_model, dtype=torch.float64), rand(B, S, kv_dim, dtype=torch.float64)
    allowed = torch.randint(0, 2, (1, S)).bool()  # (L, S)
    torch_kwargs = {"attn_mask": torch.zeros(1, S, dtype=torch.float64).masked_fill(~allowed, float("-inf"))}
    mask = allowed
    if key_padding:  # the same padding in every row of the batch, as there; -inf like the attn_mask (one type)
        pad = torch.randint(0, 2, (1, S)).bool().expand(B, S)
        torch_kwargs["key_padding_mask"] = torch.zeros(B, S, dtype=torch.float64).masked_fill(pad, float("-inf"))
        mask = allowed & ~pad[:, None, None, :]  # (B, 1, 1, S)
    source = f"{MHA_TESTS} test_multihead_attention"
    error = (
        None if kv_dim == d_model else rf"module must be kdim == vdim == embed_dim; got kdim={kv_dim}, vdim={kv_dim}"
    )
    return Mha(source, module, query, kv, kv, mask, torch_kwargs, average=average, error=error)


for key_padding, same, average in itertools.product([False, True], repeat=3):
    for repeat in range(3):  # PyTorch's test draws 100 sizes; three draws here, each a fresh seed per test
        name = f"helper-{'kpm' if key_padding else 'nomask'}-{'same' if same else 'kvdim'}-{'avg' if average else 'heads'}-{repeat}"
        MHA[name] = lambda k=key_padding, s=same, a=average: kpm_case(k, s, a)


def unsupported_module_case(option: str) -> Mha:
    module = torch_module(8, 2, **{option: True})
    x = rand(2, 3, 8, dtype=torch.float64)
    return Mha(
        f"{MHA_TESTS} test_multihead_attention ({option})", module, x, x, x, error="add_bias_kv or add_zero_attn"
    )


MHA["add-bias-kv"] = lambda: unsupported_module_case("add_bias_kv")
MHA["add-zero-attn"] = lambda: unsupported_module_case("add_zero_attn")


def mask_3d_case() -> Mha:
    """test_multihead_attn_3d_attn_mask: a (B, L, S) mask; PyTorch takes it repeated per head as (B * H, L, S)."""
    B, H, E, L, S = 8, 4, 8, 2, 3
    module = torch_module(E, H)
    query, key = rand(B, L, E, dtype=torch.float64), rand(B, S, E, dtype=torch.float64)
    allowed = torch.randint(0, 2, (B, L, S)).bool()
    additive = torch.zeros(B, L, S, dtype=torch.float64).masked_fill(~allowed, float("-inf"))
    kw = {"attn_mask": additive.repeat_interleave(H, dim=0)}
    return Mha(f"{MHA_TESTS} test_multihead_attn_3d_attn_mask", module, query, key, key, allowed, kw)


def no_bias_case() -> Mha:
    module = torch_module(8, 4, bias=False)
    x = rand(2, 5, 8, dtype=torch.float64)
    assert module.in_proj_bias is None and module.out_proj.bias is None
    return Mha(f"{MHA_TESTS} test_multihead_attn_no_bias", module, x, x, x)


def two_masks_case() -> Mha:
    """test_multihead_self_attn_two_masks_fast_path: an (L, S) mask and a key padding mask at once."""
    B, H, E, S = 8, 7, 14, 5
    module = torch_module(E, H, batch_first=True)
    x = rand(B, S, E, dtype=torch.float64)
    blocked = torch.randint(0, 2, (S, S)).bool()
    pad = torch.randint(0, 2, (B, S)).bool()
    kw = {"attn_mask": blocked, "key_padding_mask": pad}
    return Mha(
        f"{MHA_TESTS} test_multihead_self_attn_two_masks_fast_path",
        module,
        x,
        x,
        x,
        ~blocked & ~pad[:, None, None, :],
        kw,
    )


def one_d_mask_case() -> Mha:
    """test_multihead_attn_invalid_shape: PyTorch refuses a 1-D attn_mask; qkv broadcasts (S,) over every query."""
    module = torch_module(4, 4)
    x = rand(4, 4, 4, dtype=torch.float64)
    allowed = torch.tensor([True, True, False, False])
    kw = {"attn_mask": ~allowed.expand(4, 4)}
    return Mha(f"{MHA_TESTS} test_multihead_attn_invalid_shape (1-D mask)", module, x, x, x, allowed, kw)


INVALID_SHAPES = {  # test_multihead_attn_invalid_shape: (query, key, value, mask) shapes, and qkv's error
    "q3d-k2d": ((4, 4, 4), (4, 4), (4, 4, 4), None, r"key must be \(B, \*, d_model=4\); got shape \(4, 4\)"),
    "q3d-v2d": ((4, 4, 4), (4, 4, 4), (4, 4), None, r"value must be \(B, \*, d_model=4\); got shape \(4, 4\)"),
    "unbatched": ((4, 4), (4, 4), (4, 4), None, r"query must be \(B, \*, d_model=4\); got shape \(4, 4\)"),
    "mask-5x4x4": (
        (4, 4, 4),
        (4, 4, 4),
        (4, 4, 4),
        (5, 4, 4),
        r"mask must be broadcastable to \(4, 4, 4\); got shape \(5, 4, 4\)",
    ),
    "mask-5d": (
        (4, 4, 4),
        (4, 4, 4),
        (4, 4, 4),
        (1, 4, 4, 4, 4),
        r"mask must be broadcastable to \(4, 4, 4, 4\); got shape",
    ),
}
for name, (qs, ks, vs, ms, error) in INVALID_SHAPES.items():

    def build(qs=qs, ks=ks, vs=vs, ms=ms, error=error) -> Mha:
        mask = None if ms is None else torch.ones(ms, dtype=torch.bool)
        args = (rand(*qs, dtype=torch.float64), rand(*ks, dtype=torch.float64), rand(*vs, dtype=torch.float64))
        return Mha(f"{MHA_TESTS} test_multihead_attn_invalid_shape", torch_module(4, 4), *args, mask, error=error)

    MHA[f"invalid-{name}"] = build


def kdim_case() -> Mha:
    """test_multihead_attn_in_proj_weight_none: kdim = vdim = 2 != embed_dim, which qkv's module does not have."""
    module = torch_module(4, 4, kdim=2, vdim=2)
    query, key = rand(4, 4, 4, dtype=torch.float64), rand(4, 4, 2, dtype=torch.float64)
    error = r"module must be kdim == vdim == embed_dim; got kdim=2, vdim=2"
    return Mha(f"{MHA_TESTS} test_multihead_attn_in_proj_weight_none", module, query, key, key, error=error)


def in_proj_bias_none_case() -> Mha:
    module = torch_module(2, 2, bias=False)
    x = rand(2, 2, 2, dtype=torch.float64)
    return Mha(f"{MHA_TESTS} test_multihead_attn_in_proj_bias_none", module, x, x, x)


def incompatible_mask_case() -> Mha:
    """test_incompatible_mask: PyTorch refuses a float key_padding_mask beside a bool attn_mask; qkv takes one bool mask."""
    x = rand(1, 2, 4, dtype=torch.float64)
    mask = torch.full((1, 1, 1, 2), float("-inf"))
    return Mha(
        f"{TRANSFORMERS} test_incompatible_mask",
        torch_module(4, 1),
        x,
        x,
        x,
        mask,
        error=r"mask must be a boolean tensor",
    )


def causal_kernels_case(form: str) -> Mha:
    """is_causal_kernels: weights of ones, inputs of ones: every output is 16, with the causal flag or its mask."""
    module = torch_module(4, 1, batch_first=True)
    with torch.no_grad():
        module.in_proj_weight.fill_(1.0)
        module.out_proj.weight.fill_(1.0)
        module.in_proj_bias.zero_()
        module.out_proj.bias.zero_()
    x = torch.ones(1, 2, 4, dtype=torch.float64)
    causal = qkv.causal_mask(2)
    kw = {"attn_mask": ~causal, "is_causal": True}  # PyTorch's is_causal is a hint that needs its mask
    if form == "flag":
        return Mha(f"{TRANSFORMERS} is_causal_kernels", module, x, x, x, None, kw, is_causal=True)
    if form == "flag+mask":
        return Mha(
            f"{TRANSFORMERS} is_causal_kernels",
            module,
            x,
            x,
            x,
            causal,
            kw,
            is_causal=True,
            error=r"mask must be None when is_causal=True",
        )
    return Mha(f"{TRANSFORMERS} is_causal_kernels", module, x, x, x, causal, kw)


def dtype_case(dtype: torch.dtype) -> Mha:
    """test_multihead_attention_dtype (CUDA there, the CPU here), compared with a float64 copy of the module."""
    module = torch_module(128, 8, dtype=dtype)
    q, k, v = (rand(8, 10, 128, dtype=dtype) for _ in range(3))
    return Mha(f"{MHA_TESTS} test_multihead_attention_dtype", module, q, k, v, reference_dtype=torch.float64)


def zero_length_case(L: int, S: int) -> Mha:
    """test_invalid_sequence_lengths for the module: an empty output for L = 0, the bias alone for S = 0."""
    module = torch_module(8, 2, batch_first=True)
    return Mha(
        f"{TRANSFORMERS} test_invalid_sequence_lengths (module)",
        module,
        rand(2, L, 8, dtype=torch.float64),
        *(rand(2, S, 8, dtype=torch.float64),) * 2,
    )


MHA["mask-3d"] = mask_3d_case
MHA["no-bias"] = no_bias_case
MHA["two-masks"] = two_masks_case
MHA["one-d-mask"] = one_d_mask_case
MHA["kdim-vdim"] = kdim_case
MHA["in-proj-bias-none"] = in_proj_bias_none_case
MHA["incompatible-mask"] = incompatible_mask_case
for form in ("flag", "mask", "flag+mask"):
    MHA[f"causal-ones-{form}"] = lambda form=form: causal_kernels_case(form)
for dtype in (torch.float16, torch.bfloat16, torch.float32):
    MHA[f"dtype-{str(dtype)[6:]}"] = lambda dtype=dtype: dtype_case(dtype)
for L, S in ((0, 3), (4, 0), (0, 0)):
    MHA[f"zero-L{L}-S{S}"] = lambda L=L, S=S: zero_length_case(L, S)


@pytest.mark.parametrize(("name", "path"), list(itertools.product(MHA, MHA_PATHS)))
def test_multihead_gives_pytorchs_answer_or_the_documented_error(name, path):
    case = MHA[name]()
    if case.error is None:
        compare_mha(case, path)
        return
    with pytest.raises(ValueError, match=case.error):
        call_mha(case, path)


def test_causal_ones_give_sixteen_everywhere():
    """is_causal_kernels' closed form: the flag, its mask and PyTorch all give 16 in every output."""
    for form in ("flag", "mask"):
        for path in MHA_PATHS:
            out, _ = call_mha(causal_kernels_case(form), path)
            assert torch.equal(out, torch.full((1, 2, 4), 16.0, dtype=torch.float64))


# -- the table: what each path does with the ported cases -----------------------------------------------------------


def outcome(call: Callable[[], object], compare: Callable[[], None], documented_error: bool) -> str:
    try:
        call()
    except ValueError:
        return "clear error"
    except Exception:
        return "crash"
    if documented_error:
        return "wrong"  # answered where qkv documents an error
    try:
        compare()
    except AssertionError:
        return "wrong"
    except Exception:
        return "crash"
    return "agree"


def table() -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = {}
    for name, build in SDPA.items():
        torch.manual_seed(sum(map(ord, name)))
        case = build()
        for path in case.paths():
            kind = outcome(lambda: call_sdpa(case, path), lambda: compare_sdpa(case, path), case.error is not None)
            row = counts.setdefault(
                f"scaled_dot_product_attention {path}" if path != "chunked" else "chunked_attention", {}
            )
            row[kind] = row.get(kind, 0) + 1
    for name, build_mha in MHA.items():
        torch.manual_seed(sum(map(ord, name)))
        case_mha = build_mha()
        for path in MHA_PATHS:
            kind = outcome(
                lambda: call_mha(case_mha, path), lambda: compare_mha(case_mha, path), case_mha.error is not None
            )
            row = counts.setdefault(f"MultiHeadAttention {path}", {})
            row[kind] = row.get(kind, 0) + 1
    for shape in SOFTMAX_SHAPES:
        x = rand(*shape, dtype=torch.float64)
        for dim in range(-len(shape), len(shape)):
            kind = outcome(
                lambda: qkv.softmax(x, dim=dim),
                lambda: torch.testing.assert_close(qkv.softmax(x, dim=dim), torch.softmax(x, dim=dim)),
                False,
            )
            counts.setdefault("softmax", {})[kind] = counts.setdefault("softmax", {}).get(kind, 0) + 1
    return counts


if __name__ == "__main__":
    import warnings

    warnings.simplefilter("ignore")
    kinds = ("agree", "clear error", "wrong", "crash")
    print(f"qkv from {qkv.__file__}")
    print(f"{'path':40s} " + " ".join(f"{k:>11s}" for k in kinds) + "  total")
    for path, row in table().items():
        print(f"{path:40s} " + " ".join(f"{row.get(k, 0):11d}" for k in kinds) + f"  {sum(row.values()):5d}")
    sys.exit(0)
