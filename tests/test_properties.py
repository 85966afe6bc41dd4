"""Invariants checked with hypothesis on generated shapes, masks and data (no timing: deadline=None)."""

import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn.attention import SDPBackend, sdpa_kernel

import qkv

settings.register_profile("qkv", deadline=None, max_examples=40, derandomize=False)
settings.load_profile("qkv")

dims = st.integers(0, 6)  # 0 and 1 too: an empty sequence, a single token, d_k = 0 (every score 0)
seeds = st.integers(0, 2**31 - 1)
IMPLS = ("explicit", "fused", "auto")


def randn(g, *shape):
    return torch.randn(*shape, generator=g, dtype=torch.float64)


@given(L=dims, S=dims, d=dims, dv=dims, seed=seeds, p=st.floats(0.0, 1.0))
def test_weights_are_a_distribution_over_allowed_keys(L, S, d, dv, seed, p):
    g = torch.Generator().manual_seed(seed)
    q, k, v = randn(g, L, d), randn(g, S, d), randn(g, S, dv)
    mask = torch.rand(L, S, generator=g) < p
    out, w = qkv.scaled_dot_product_attention(q, k, v, mask, return_weights=True)
    assert (w >= 0).all()
    assert (w[~mask] == 0).all()
    has_key = mask.any(dim=-1)
    torch.testing.assert_close(w.sum(-1)[has_key], torch.ones(int(has_key.sum()), dtype=torch.float64))
    assert (w[~has_key] == 0).all() and (out[~has_key] == 0).all()
    fused = qkv.scaled_dot_product_attention(q, k, v, mask, impl="fused")
    torch.testing.assert_close(fused, out)


@given(L=st.integers(0, 8), d=st.integers(1, 6), seed=seeds)
def test_permutation_equivariance_without_positions(L, d, seed):
    g = torch.Generator().manual_seed(seed)
    x = randn(g, 2, L, 4 * d)
    mha = qkv.MultiHeadAttention(4 * d, 4).double()
    perm = torch.randperm(L, generator=g)
    with torch.no_grad():
        torch.testing.assert_close(mha(x[:, perm])[0], mha(x)[0][:, perm])


@given(L=st.integers(1, 9), t=st.integers(0, 8), seed=seeds)
def test_causal_output_ignores_the_future(L, t, seed):
    t = t % L
    g = torch.Generator().manual_seed(seed)
    x = randn(g, 1, L, 8)
    y = x.clone()
    y[:, t + 1 :] = randn(g, 1, L - t - 1, 8)  # change every token after t
    mha = qkv.MultiHeadAttention(8, 2).double()
    mask = qkv.causal_mask(L)
    with torch.no_grad():
        torch.testing.assert_close(mha(x, mask=mask)[0][:, : t + 1], mha(y, mask=mask)[0][:, : t + 1])
    for impl in ("explicit", "fused"):
        a = qkv.scaled_dot_product_attention(x, x, x, mask, impl=impl)
        b = qkv.scaled_dot_product_attention(y, y, y, mask, impl=impl)
        torch.testing.assert_close(a[:, : t + 1], b[:, : t + 1])
        a = qkv.scaled_dot_product_attention(x, x, x, is_causal=True, impl=impl)
        b = qkv.scaled_dot_product_attention(y, y, y, is_causal=True, impl=impl)
        torch.testing.assert_close(a[:, : t + 1], b[:, : t + 1])
    torch.testing.assert_close(
        qkv.chunked_attention(x, x, x, causal=True, block_size=3)[:, : t + 1],
        qkv.chunked_attention(y, y, y, causal=True, block_size=3)[:, : t + 1],
    )


@given(B=st.integers(0, 3), L=st.integers(0, 6), H=st.integers(1, 5), dh=st.integers(0, 5), seed=seeds)
def test_split_and_merge_are_inverses(B, L, H, dh, seed):
    g = torch.Generator().manual_seed(seed)
    x = randn(g, B, L, H * dh)
    assert torch.equal(qkv.merge_heads(qkv.split_heads(x, H)), x)
    y = randn(g, B, H, L, dh)
    assert torch.equal(qkv.split_heads(qkv.merge_heads(y), H), y)


@given(L=st.integers(0, 40), S=st.integers(0, 40), block=st.integers(1, 50), causal=st.booleans(), seed=seeds)
def test_chunked_equals_full_for_any_block_size(L, S, block, causal, seed):
    g = torch.Generator().manual_seed(seed)
    q, k, v = randn(g, 2, L, 4), randn(g, 2, S, 4), randn(g, 2, S, 3)
    full = qkv.scaled_dot_product_attention(q, k, v, is_causal=causal, impl="explicit")
    torch.testing.assert_close(qkv.chunked_attention(q, k, v, block_size=block, causal=causal), full)


@st.composite
def batched_shapes(draw):
    """Leading dims (none, one or two, each of size 0 to 3), L, S, d_k, d_v of 0 to 6, and a mask shape of every rank
    from 0 (a scalar) to that of the queries, each of its dims full or 1 (broadcast)."""
    batch = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
    L, S, d_k, d_v = (draw(dims) for _ in range(4))
    full = (*batch, L, S)
    rank = draw(st.integers(0, len(full)))
    keep = draw(st.lists(st.booleans(), min_size=rank, max_size=rank))
    mask_shape = tuple(n if k else 1 for n, k in zip(full[len(full) - rank :], keep))
    return batch, L, S, d_k, d_v, mask_shape


def torch_sdpa(q, k, v, **kw):
    """PyTorch's answer, its math backend (a query with no allowed key gives 0 there, as in qkv)."""
    with sdpa_kernel([SDPBackend.MATH]):
        return F.scaled_dot_product_attention(q, k, v, **kw)


@given(shapes=batched_shapes(), seed=seeds, p=st.floats(0.0, 1.0))
def test_a_mask_of_any_rank_is_its_broadcast(shapes, seed, p):
    batch, L, S, d_k, d_v, mask_shape = shapes
    g = torch.Generator().manual_seed(seed)
    q, k, v = randn(g, *batch, L, d_k), randn(g, *batch, S, d_k), randn(g, *batch, S, d_v)
    mask = torch.rand(mask_shape, generator=g) < p
    full = mask.expand(*batch, L, S)  # (..., L, S)
    ref = torch_sdpa(q, k, v, attn_mask=full)
    for impl in IMPLS:
        out = qkv.scaled_dot_product_attention(q, k, v, mask, impl=impl)
        assert out.shape == (*batch, L, d_v)
        torch.testing.assert_close(out, ref)
    _, w = qkv.scaled_dot_product_attention(q, k, v, mask, return_weights=True)
    has_key = full.any(dim=-1)  # (..., L)
    assert w.shape == full.shape and (w >= 0).all() and (w[~full] == 0).all() and (w[~has_key] == 0).all()
    torch.testing.assert_close(w.sum(-1)[has_key], torch.ones(int(has_key.sum()), dtype=torch.float64))


@given(shapes=batched_shapes(), seed=seeds, block=st.integers(1, 8))
def test_is_causal_is_pytorchs_top_left_causal_attention(shapes, seed, block):
    batch, L, S, d_k, d_v, _ = shapes
    g = torch.Generator().manual_seed(seed)
    q, k, v = randn(g, *batch, L, d_k), randn(g, *batch, S, d_k), randn(g, *batch, S, d_v)
    ref = torch_sdpa(q, k, v, is_causal=True)
    for impl in IMPLS:
        torch.testing.assert_close(qkv.scaled_dot_product_attention(q, k, v, is_causal=True, impl=impl), ref)
    torch.testing.assert_close(qkv.chunked_attention(q, k, v, causal=True, block_size=block), ref)
    if L and S:  # the flag is the mask (causal_mask needs sizes of at least 1)
        torch.testing.assert_close(qkv.scaled_dot_product_attention(q, k, v, qkv.causal_mask(L, S)), ref)


@given(x=st.lists(st.floats(-1e4, 1e4), min_size=1, max_size=20))
def test_softmax_stays_finite_and_normalised(x):
    w = qkv.softmax(torch.tensor(x, dtype=torch.float64))
    assert torch.isfinite(w).all() and (w >= 0).all()
    assert abs(w.sum().item() - 1) < 1e-9
