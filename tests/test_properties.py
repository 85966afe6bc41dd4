"""Invariants checked with hypothesis on generated shapes, masks and data (no timing: deadline=None)."""

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import qkv

settings.register_profile("qkv", deadline=None, max_examples=40, derandomize=False)
settings.load_profile("qkv")

dims = st.integers(1, 6)
seeds = st.integers(0, 2**31 - 1)


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


@given(L=st.integers(1, 8), d=dims, seed=seeds)
def test_permutation_equivariance_without_positions(L, d, seed):
    g = torch.Generator().manual_seed(seed)
    x = randn(g, 2, L, 4 * d)
    mha = qkv.MultiHeadAttention(4 * d, 4).double()
    perm = torch.randperm(L, generator=g)
    with torch.no_grad():
        torch.testing.assert_close(mha(x[:, perm])[0], mha(x)[0][:, perm])


@given(L=st.integers(2, 9), t=st.integers(0, 8), seed=seeds)
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
    torch.testing.assert_close(
        qkv.chunked_attention(x, x, x, causal=True, block_size=3)[:, : t + 1],
        qkv.chunked_attention(y, y, y, causal=True, block_size=3)[:, : t + 1],
    )


@given(B=st.integers(1, 3), L=st.integers(1, 6), H=st.integers(1, 5), dh=st.integers(1, 5), seed=seeds)
def test_split_and_merge_are_inverses(B, L, H, dh, seed):
    g = torch.Generator().manual_seed(seed)
    x = randn(g, B, L, H * dh)
    assert torch.equal(qkv.merge_heads(qkv.split_heads(x, H)), x)
    y = randn(g, B, H, L, dh)
    assert torch.equal(qkv.split_heads(qkv.merge_heads(y), H), y)


@given(L=st.integers(1, 40), S=st.integers(1, 40), block=st.integers(1, 50), causal=st.booleans(), seed=seeds)
def test_chunked_equals_full_for_any_block_size(L, S, block, causal, seed):
    g = torch.Generator().manual_seed(seed)
    q, k, v = randn(g, 2, L, 4), randn(g, 2, S, 4), randn(g, 2, S, 3)
    mask = qkv.causal_mask(L, S) if causal else None
    full = qkv.scaled_dot_product_attention(q, k, v, mask, impl="explicit")
    torch.testing.assert_close(qkv.chunked_attention(q, k, v, block_size=block, causal=causal), full)


@given(x=st.lists(st.floats(-1e4, 1e4), min_size=1, max_size=20))
def test_softmax_stays_finite_and_normalised(x):
    w = qkv.softmax(torch.tensor(x, dtype=torch.float64))
    assert torch.isfinite(w).all() and (w >= 0).all()
    assert abs(w.sum().item() - 1) < 1e-9
