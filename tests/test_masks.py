"""Masks against their definitions, written independently with Python loops."""

import pytest
import torch
import torch.nn.functional as F

import qkv


@pytest.mark.parametrize("L,S", [(1, 1), (4, 4), (3, 6), (6, 3)])
def test_causal_mask_definition_and_torch_alignment(L, S):
    m = qkv.causal_mask(L, S)
    assert m.dtype == torch.bool and m.shape == (L, S)
    assert m.tolist() == [[j <= i for j in range(S)] for i in range(L)]
    q, k, v = (
        torch.randn(L, 4, dtype=torch.float64),
        torch.randn(S, 4, dtype=torch.float64),
        torch.randn(S, 2, dtype=torch.float64),
    )
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # top-left: every query sees key 0, even L > S
    for impl in ("explicit", "fused", "auto"):
        torch.testing.assert_close(qkv.scaled_dot_product_attention(q, k, v, m, impl=impl), ref)
        torch.testing.assert_close(qkv.scaled_dot_product_attention(q, k, v, is_causal=True, impl=impl), ref)
    torch.testing.assert_close(qkv.chunked_attention(q, k, v, causal=True, block_size=2), ref)


@pytest.mark.parametrize("L,window", [(1, 0), (5, 0), (5, 1), (7, 2), (4, 10)])
def test_local_mask_definition(L, window):
    m = qkv.local_mask(L, window)
    assert m.tolist() == [[abs(i - j) <= window for j in range(L)] for i in range(L)]
    assert m.sum(dim=1).max() <= 2 * window + 1


def test_padding_mask_definition_and_broadcast():
    m = qkv.padding_mask(torch.tensor([2, 4, 1]), max_len=5)
    assert m.shape == (3, 1, 1, 5) and m.dtype == torch.bool
    assert m[:, 0, 0].tolist() == [[j < n for j in range(5)] for n in (2, 4, 1)]
    assert qkv.padding_mask([3, 1]).shape == (2, 1, 1, 3)
    q = torch.randn(3, 2, 4, 8)  # (B, H, L, d)
    out = qkv.scaled_dot_product_attention(q, torch.randn(3, 2, 5, 8), torch.randn(3, 2, 5, 8), m)
    assert out.shape == (3, 2, 4, 8)


def test_padding_ignores_padded_keys():
    k, v = torch.randn(1, 6, 8), torch.randn(1, 6, 3)
    q = torch.randn(1, 4, 8)
    m = qkv.padding_mask([4], max_len=6)[:, 0]  # (1, 1, 6)
    padded = qkv.scaled_dot_product_attention(q, k, v, m)
    trimmed = qkv.scaled_dot_product_attention(q, k[:, :4], v[:, :4])
    torch.testing.assert_close(padded, trimmed)


def test_graph_mask_definition():
    adj = torch.tensor([[0, 1, 0], [0, 0, 1], [1, 0, 0]])
    assert qkv.graph_mask(adj, self_loops=False).tolist() == [
        [False, True, False],
        [False, False, True],
        [True, False, False],
    ]
    assert qkv.graph_mask(adj).tolist() == [[True, True, False], [False, True, True], [True, False, True]]
    assert qkv.graph_mask(adj.bool()).dtype == torch.bool


def test_graph_attention_is_neighbour_aggregation():
    g = torch.Generator().manual_seed(0)
    adj = torch.rand(6, 6, generator=g) < 0.4
    x = torch.randn(6, 5, generator=g, dtype=torch.float64)
    out, w = qkv.scaled_dot_product_attention(x, x, x, qkv.graph_mask(adj), return_weights=True)
    for i in range(6):
        nbrs = [j for j in range(6) if adj[i, j] or i == j]
        s = torch.stack([x[i] @ x[j] for j in nbrs]) / 5**0.5
        torch.testing.assert_close(out[i], torch.softmax(s, 0) @ x[nbrs])


@pytest.mark.parametrize("fn", [qkv.causal_mask, qkv.local_mask, qkv.padding_mask, qkv.graph_mask])
def test_masks_take_a_device(fn):
    # "meta" is never the default device, so ignoring `device` fails this test even on a machine without a GPU
    args = {
        qkv.causal_mask: (3,),
        qkv.local_mask: (3, 1),
        qkv.padding_mask: ([1, 2],),
        qkv.graph_mask: (torch.eye(3),),
    }[fn]
    assert fn(*args, device="meta").device.type == "meta"
