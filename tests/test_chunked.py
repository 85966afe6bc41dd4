"""qkv.chunked_attention equals the full computation (PyTorch's SDPA as the reference)."""

import pytest
import torch
import torch.nn.functional as F
from tolerances import TOL

import qkv


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("block", [1, 3, 16, 64, 1000])
@pytest.mark.parametrize("batch,L,S,d_k,d_v", [((), 33, 33, 8, 8), ((2, 3), 10, 45, 16, 4), ((2,), 40, 17, 4, 6)])
def test_equals_torch(batch, L, S, d_k, d_v, block, causal, device):
    q = torch.randn(*batch, L, d_k, dtype=torch.float64, device=device)
    k = torch.randn(*batch, S, d_k, dtype=torch.float64, device=device)
    v = torch.randn(*batch, S, d_v, dtype=torch.float64, device=device)
    got = qkv.chunked_attention(q, k, v, block_size=block, causal=causal)
    if causal:  # top-left aligned; every query has key 0, so torch is defined everywhere
        ref = F.scaled_dot_product_attention(q, k, v, attn_mask=qkv.causal_mask(L, S, device=device))
    else:
        ref = F.scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(got, ref, **TOL[torch.float64])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_low_precision_dtypes(dtype):
    q, k, v = (torch.randn(2, 50, 16, dtype=torch.float64) for _ in range(3))
    got = qkv.chunked_attention(q.to(dtype), k.to(dtype), v.to(dtype), block_size=7)
    assert got.dtype == dtype
    torch.testing.assert_close(got.double(), F.scaled_dot_product_attention(q, k, v), **TOL[dtype])


def test_custom_scale_and_large_logits():
    q, k, v = 100 * torch.randn(20, 8), 100 * torch.randn(30, 8), torch.randn(30, 3)
    got = qkv.chunked_attention(q, k, v, block_size=4, scale=0.5)
    assert torch.isfinite(got).all()
    torch.testing.assert_close(got, F.scaled_dot_product_attention(q, k, v, scale=0.5), **TOL[torch.float32])


@pytest.mark.parametrize("causal", [False, True])
def test_gradients_equal_torch(causal):
    L, S = (20, 20) if causal else (20, 13)
    q = torch.randn(2, L, 8, dtype=torch.float64, requires_grad=True)
    k = torch.randn(2, S, 8, dtype=torch.float64, requires_grad=True)
    v = torch.randn(2, S, 5, dtype=torch.float64, requires_grad=True)
    grad_out = torch.randn(2, L, 5, dtype=torch.float64)
    got = torch.autograd.grad(qkv.chunked_attention(q, k, v, block_size=6, causal=causal), (q, k, v), grad_out)
    ref = torch.autograd.grad(F.scaled_dot_product_attention(q, k, v, is_causal=causal), (q, k, v), grad_out)
    for g, r in zip(got, ref):
        torch.testing.assert_close(g, r, **TOL[torch.float64])


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("L", "S"), [(0, 9), (6, 0), (0, 0)])
def test_empty_sequences_equal_torch_with_gradients(L, S, causal):
    q = torch.randn(2, L, 8, dtype=torch.float64, requires_grad=True)
    k = torch.randn(2, S, 8, dtype=torch.float64, requires_grad=True)
    v = torch.randn(2, S, 5, dtype=torch.float64, requires_grad=True)
    got = qkv.chunked_attention(q, k, v, block_size=4, causal=causal)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    assert got.shape == (2, L, 5)
    torch.testing.assert_close(got, ref, **TOL[torch.float64])
    upstream = torch.randn_like(ref)
    for g, r in zip(torch.autograd.grad(got, (q, k, v), upstream), torch.autograd.grad(ref, (q, k, v), upstream)):
        torch.testing.assert_close(g, r, **TOL[torch.float64])
