"""qkv.softmax and qkv.scaled_dot_product_attention against PyTorch's own implementations."""

import math

import pytest
import torch
import torch.nn.functional as F
from tolerances import TOL

import qkv

SHAPES = [  # (batch dims, L, S, d_k, d_v)
    ((), 5, 5, 8, 8),
    ((3,), 4, 9, 16, 5),
    ((2, 4), 7, 3, 6, 10),
    ((1, 2, 3), 1, 12, 4, 4),
]


def rand(*shape, dtype=torch.float32, device="cpu", seed=None):
    g = torch.Generator().manual_seed(seed if seed is not None else int(torch.randint(2**31, ())))
    return torch.randn(*shape, generator=g, dtype=torch.float64).to(device=device, dtype=dtype)


def qkv_inputs(batch, L, S, d_k, d_v, **kw):
    return rand(*batch, L, d_k, **kw), rand(*batch, S, d_k, **kw), rand(*batch, S, d_v, **kw)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(7,), (3, 11), (2, 3, 4)])
def test_softmax_matches_torch(shape, dtype, device):
    x = 5 * rand(*shape, dtype=dtype, device=device)
    for dim in range(-len(shape), len(shape)):
        got = qkv.softmax(x, dim=dim)
        assert got.dtype == dtype and got.device.type == device.type
        torch.testing.assert_close(got, torch.softmax(x, dim=dim), **TOL[dtype])


def test_softmax_is_stable_for_huge_logits():
    x = torch.tensor([[1e4, 0.0, -1e4], [1e4, 1e4, 1e4], [-1e4, -1e4, -1e4]])
    w = qkv.softmax(x)
    assert torch.isfinite(w).all()
    torch.testing.assert_close(w, torch.tensor([[1.0, 0, 0], [1 / 3, 1 / 3, 1 / 3], [1 / 3, 1 / 3, 1 / 3]]))


def test_softmax_of_an_all_masked_row_is_zero():
    x = torch.tensor([[float("-inf")] * 3, [0.0, float("-inf"), 0.0]])
    torch.testing.assert_close(qkv.softmax(x), torch.tensor([[0.0, 0, 0], [0.5, 0, 0.5]]))


@pytest.mark.parametrize("impl", ["explicit", "fused", "auto"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("shape", SHAPES)
def test_sdpa_matches_torch(shape, dtype, impl, device):
    q, k, v = qkv_inputs(*shape, dtype=dtype, device=device)
    got = qkv.scaled_dot_product_attention(q, k, v, impl=impl)
    assert got.shape == (*shape[0], shape[1], shape[4]) and got.dtype == dtype and got.device.type == device.type
    torch.testing.assert_close(got, F.scaled_dot_product_attention(q, k, v), **TOL[dtype])


@pytest.mark.parametrize("impl", ["explicit", "fused"])
@pytest.mark.parametrize("shape", SHAPES)
def test_sdpa_with_random_mask_matches_torch(shape, impl, device):
    batch, L, S, d_k, d_v = shape
    q, k, v = qkv_inputs(*shape, dtype=torch.float64, device=device)
    g = torch.Generator().manual_seed(int(torch.randint(2**31, ())))
    mask = torch.rand(*batch, L, S, generator=g) < 0.6
    mask[..., 0] = True  # every query keeps a key, so torch's result is defined everywhere
    mask = mask.to(device)
    got = qkv.scaled_dot_product_attention(q, k, v, mask, impl=impl)
    torch.testing.assert_close(got, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), **TOL[torch.float64])


@pytest.mark.parametrize("impl", ["explicit", "fused"])
def test_sdpa_broadcast_mask_and_custom_scale(impl, device):
    q, k, v = qkv_inputs((2, 3), 6, 6, 8, 4, dtype=torch.float64, device=device)
    mask = qkv.causal_mask(6, device=device)  # (L, S) broadcast over (2, 3)
    got = qkv.scaled_dot_product_attention(q, k, v, mask, scale=0.3, impl=impl)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3)
    torch.testing.assert_close(got, ref, **TOL[torch.float64])


def test_sdpa_weights_are_the_softmax_of_scaled_scores():
    q, k, v = qkv_inputs((2,), 5, 7, 8, 3, dtype=torch.float64)
    out, w = qkv.scaled_dot_product_attention(q, k, v, return_weights=True)
    ref_w = torch.softmax(q @ k.mT / math.sqrt(8), dim=-1)  # (2, 5, 7)
    torch.testing.assert_close(w, ref_w)
    torch.testing.assert_close(out, ref_w @ v)


@pytest.mark.parametrize("impl", ["explicit", "fused", "auto"])
def test_fully_masked_query_gives_zero_output_and_weights(impl, device):
    q, k, v = qkv_inputs((2,), 4, 5, 8, 3, dtype=torch.float32, device=device)
    mask = torch.ones(4, 5, dtype=torch.bool, device=device)
    mask[2] = False  # query 2 may attend to nothing
    out = qkv.scaled_dot_product_attention(q, k, v, mask, impl=impl)
    assert torch.isfinite(out).all()
    assert (out[:, 2] == 0).all()
    keep = [0, 1, 3]
    ref = F.scaled_dot_product_attention(q[:, keep], k, v)
    torch.testing.assert_close(out[:, keep], ref, **TOL[torch.float32])
    if impl != "fused":
        _, w = qkv.scaled_dot_product_attention(q, k, v, mask, impl=impl, return_weights=True)
        assert (w[:, 2] == 0).all() and torch.isfinite(w).all()


def test_bfloat16_close_to_float64_reference(device):
    q, k, v = qkv_inputs((2, 2), 8, 8, 16, 16, dtype=torch.float64, device=device)
    ref = F.scaled_dot_product_attention(q, k, v)
    for impl in ("explicit", "fused"):
        got = qkv.scaled_dot_product_attention(q.bfloat16(), k.bfloat16(), v.bfloat16(), impl=impl)
        assert got.dtype == torch.bfloat16
        torch.testing.assert_close(got.double(), ref, **TOL[torch.bfloat16])


def test_explicit_and_fused_agree_and_both_backpropagate():
    q, k, v = (t.requires_grad_() for t in qkv_inputs((2, 2), 6, 9, 8, 4, dtype=torch.float64))
    mask = torch.rand(6, 9) < 0.7
    mask[:, 0] = True
    grads = []
    for impl in ("explicit", "fused"):
        out = qkv.scaled_dot_product_attention(q, k, v, mask, impl=impl)
        grads.append(torch.autograd.grad(out.square().sum(), (q, k, v)))
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("shape", SHAPES)
def test_column_form_is_the_row_form_transposed(shape, dtype, device):
    q, k, v = qkv_inputs(*shape, dtype=dtype, device=device)
    out, w = qkv.column_attention(q.mT, k.mT, v.mT, return_weights=True)
    ref_out, ref_w = qkv.scaled_dot_product_attention(q, k, v, return_weights=True)
    torch.testing.assert_close(out, ref_out.mT, **TOL[dtype])
    torch.testing.assert_close(w, ref_w.mT, **TOL[dtype])
    torch.testing.assert_close(w.sum(dim=-2), torch.ones_like(w.sum(dim=-2)), **TOL[dtype])
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v).mT, **TOL[dtype])


@pytest.mark.parametrize("impl", ["explicit", "fused", "auto"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("shape", SHAPES)
def test_is_causal_matches_torch_top_left(shape, dtype, impl, device):
    q, k, v = (t.requires_grad_() for t in qkv_inputs(*shape, dtype=dtype, device=device))
    got = qkv.scaled_dot_product_attention(q, k, v, is_causal=True, impl=impl)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # L != S in SHAPES: top-left alignment
    torch.testing.assert_close(got, ref, **TOL[dtype])
    upstream = torch.randn_like(ref)
    for g, r in zip(torch.autograd.grad(got, (q, k, v), upstream), torch.autograd.grad(ref, (q, k, v), upstream)):
        torch.testing.assert_close(g, r, **TOL[dtype])


@pytest.mark.parametrize("impl", ["explicit", "fused", "auto"])
@pytest.mark.parametrize(("L", "S", "d_k"), [(0, 5, 8), (4, 0, 8), (0, 0, 8), (4, 5, 0)])
def test_empty_sizes_give_torchs_answer(L, S, d_k, impl, device):
    """L = 0: an empty output; S = 0: zeros (no key); d_k = 0: uniform weights. Gradients flow as in PyTorch."""
    q, k, v = (t.requires_grad_() for t in qkv_inputs((2, 3), L, S, d_k, 4, dtype=torch.float64, device=device))
    got = qkv.scaled_dot_product_attention(q, k, v, impl=impl)
    ref = F.scaled_dot_product_attention(q, k, v)
    assert got.shape == (2, 3, L, 4)
    torch.testing.assert_close(got, ref, **TOL[torch.float64])
    upstream = torch.randn_like(ref)
    for g, r in zip(torch.autograd.grad(got, (q, k, v), upstream), torch.autograd.grad(ref, (q, k, v), upstream)):
        torch.testing.assert_close(g, r, **TOL[torch.float64])
    if impl != "fused":
        _, w = qkv.scaled_dot_product_attention(q, k, v, return_weights=True, impl=impl)
        assert w.shape == (2, 3, L, S)


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4), (2, 0, 3)])
def test_softmax_over_an_empty_dim_is_empty_like_torch(shape):
    x = torch.randn(shape, dtype=torch.float64)
    for dim in range(len(shape)):
        got = qkv.softmax(x, dim=dim)
        assert got.shape == x.shape
        torch.testing.assert_close(got, torch.softmax(x, dim=dim))
