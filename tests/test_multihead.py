"""qkv.MultiHeadAttention against torch.nn.MultiheadAttention with copied weights."""

import pytest
import torch
from tolerances import TOL

import qkv

CASES = [  # (B, L, S, d_model, H)
    (1, 5, 5, 8, 1),
    (2, 4, 7, 12, 3),
    (3, 6, 2, 16, 4),
    (2, 9, 9, 32, 8),
]


def torch_mha(d_model, H, bias=True, dtype=torch.float64, device="cpu"):
    m = torch.nn.MultiheadAttention(d_model, H, bias=bias, batch_first=True).to(device=device, dtype=dtype)
    if bias:  # PyTorch initialises the biases to zero; make them count
        torch.nn.init.normal_(m.in_proj_bias)
        torch.nn.init.normal_(m.out_proj.bias)
    return m.eval()


@pytest.mark.parametrize("impl", ["explicit", "fused", "auto"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", CASES)
def test_matches_torch_cross_attention(case, bias, impl, device):
    B, L, S, d, H = case
    ref = torch_mha(d, H, bias, device=device)
    mine = qkv.MultiHeadAttention.from_torch(ref, impl=impl)
    q, kv = (
        torch.randn(B, L, d, dtype=torch.float64, device=device),
        torch.randn(B, S, d, dtype=torch.float64, device=device),
    )
    v = torch.randn(B, S, d, dtype=torch.float64, device=device)
    out, w = mine(q, kv, v, need_weights=impl != "fused")
    ref_out, ref_w = ref(q, kv, v, need_weights=True, average_attn_weights=False)
    torch.testing.assert_close(out, ref_out, **TOL[torch.float64])
    if impl != "fused":
        assert w.shape == (B, H, L, S)
        torch.testing.assert_close(w, ref_w, **TOL[torch.float64])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_self_attention_defaults_and_float32(dtype, device):
    ref = torch_mha(24, 6, dtype=dtype, device=device)
    mine = qkv.MultiHeadAttention.from_torch(ref)
    x = torch.randn(3, 10, 24, dtype=dtype, device=device)
    out, w = mine(x)
    assert w is None and out.dtype == dtype
    torch.testing.assert_close(out, ref(x, x, x, need_weights=False)[0], **TOL[dtype])


@pytest.mark.parametrize("impl", ["explicit", "fused"])
def test_masks_match_torch_with_inverted_convention(impl, device):
    B, L, S, d, H = 3, 5, 6, 16, 4
    ref = torch_mha(d, H, device=device)
    mine = qkv.MultiHeadAttention.from_torch(ref, impl=impl)
    q, kv = (
        torch.randn(B, L, d, dtype=torch.float64, device=device),
        torch.randn(B, S, d, dtype=torch.float64, device=device),
    )
    allowed = torch.rand(L, S, device=device) < 0.6
    allowed[:, 0] = True
    pad = qkv.padding_mask([6, 4, 2], device=device)  # (B, 1, 1, S)
    # torch's boolean masks mean "blocked": pass the complement
    ref_out, _ = ref(q, kv, kv, attn_mask=~allowed, key_padding_mask=~pad[:, 0, 0], need_weights=False)
    out, _ = mine(q, kv, mask=allowed & pad)
    torch.testing.assert_close(out, ref_out, **TOL[torch.float64])
    out3, _ = mine(q, kv, mask=(allowed & pad[:, 0]))  # (B, L, S) form
    torch.testing.assert_close(out3, ref_out, **TOL[torch.float64])


def test_fully_masked_rows_are_zero_before_out_proj():
    ref = torch_mha(8, 2)
    mine = qkv.MultiHeadAttention.from_torch(ref)
    x = torch.randn(2, 4, 8, dtype=torch.float64)
    mask = torch.ones(4, 4, dtype=torch.bool)
    mask[1] = False
    out, w = mine(x, mask=mask, need_weights=True)
    assert torch.isfinite(out).all() and (w[:, :, 1] == 0).all()
    torch.testing.assert_close(out[:, 1], mine.out_proj.bias.expand(2, 8))  # zero heads -> only the bias
    keep = [0, 2, 3]
    ref_out, _ = ref(x, x, x, attn_mask=~mask, need_weights=False)  # NaN in row 1: left out
    torch.testing.assert_close(out[:, keep], ref_out[:, keep], **TOL[torch.float64])


def test_gradients_match_torch():
    ref = torch_mha(16, 4, dtype=torch.float64)
    mine = qkv.MultiHeadAttention.from_torch(ref)
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    ref(x, x, x, need_weights=False)[0].square().sum().backward()
    mine(x)[0].square().sum().backward()
    w_q, w_k, w_v = ref.in_proj_weight.grad.chunk(3)
    torch.testing.assert_close(mine.q_proj.weight.grad, w_q)
    torch.testing.assert_close(mine.k_proj.weight.grad, w_k)
    torch.testing.assert_close(mine.v_proj.weight.grad, w_v)
    torch.testing.assert_close(mine.out_proj.weight.grad, ref.out_proj.weight.grad)


def test_parameter_count_equals_one_wide_head():
    d = 64
    counts = [sum(p.numel() for p in qkv.MultiHeadAttention(d, h).parameters()) for h in (1, 2, 8, 64)]
    assert counts == [4 * (d * d + d)] * 4
    assert counts[0] == sum(p.numel() for p in torch.nn.MultiheadAttention(d, 1).parameters())


@pytest.mark.parametrize("shape,heads", [((2, 5, 12), 3), ((1, 1, 8), 8), ((4, 7, 6), 1)])
def test_split_heads_layout_and_inverse(shape, heads):
    x = torch.randn(*shape)
    s = qkv.split_heads(x, heads)
    B, L, d = shape
    assert s.shape == (B, heads, L, d // heads)
    for h in range(heads):  # head h holds features h*d_head:(h+1)*d_head of every position
        torch.testing.assert_close(s[:, h], x[..., h * (d // heads) : (h + 1) * (d // heads)])
    assert torch.equal(qkv.merge_heads(s), x)


def test_from_torch_refuses_what_it_cannot_copy():
    with pytest.raises(ValueError, match="kdim"):
        qkv.MultiHeadAttention.from_torch(torch.nn.MultiheadAttention(8, 2, kdim=4, vdim=4))
    with pytest.raises(ValueError, match="dropout"):
        qkv.MultiHeadAttention.from_torch(torch.nn.MultiheadAttention(8, 2, dropout=0.1))
    with pytest.raises(ValueError, match="add_bias_kv"):
        qkv.MultiHeadAttention.from_torch(torch.nn.MultiheadAttention(8, 2, add_bias_kv=True))


@pytest.mark.parametrize("impl", ["explicit", "fused", "auto"])
def test_is_causal_matches_torch_with_a_causal_mask(impl, device):
    ref = torch_mha(16, 4, device=device)
    mine = qkv.MultiHeadAttention.from_torch(ref, impl=impl)
    x = torch.randn(3, 7, 16, dtype=torch.float64, device=device)
    blocked = ~qkv.causal_mask(7, device=device)  # PyTorch's is_causal is a hint that needs its mask
    ref_out, ref_w = ref(x, x, x, attn_mask=blocked, is_causal=True, need_weights=True, average_attn_weights=False)
    out, w = mine(x, is_causal=True, need_weights=impl != "fused")
    torch.testing.assert_close(out, ref_out, **TOL[torch.float64])
    if impl != "fused":
        torch.testing.assert_close(w, ref_w, **TOL[torch.float64])


@pytest.mark.parametrize("impl", ["explicit", "fused"])
def test_masks_of_every_rank_broadcast(impl, device):
    """(S,), (L, S), (B, L, S) (qkv's 3-D form) and (B, H, L, S) masks against PyTorch given the (B*H, L, S) mask."""
    B, L, S, d, H = 2, 4, 5, 8, 2
    ref = torch_mha(d, H, device=device)
    mine = qkv.MultiHeadAttention.from_torch(ref, impl=impl)
    q, kv = (torch.randn(B, n, d, dtype=torch.float64, device=device) for n in (L, S))
    for shape in [(S,), (L, S), (B, L, S), (B, H, L, S), (B, 1, 1, S)]:
        allowed = torch.rand(shape, device=device) < 0.7
        allowed[..., 0] = True  # PyTorch's module gives NaN for a query with no key
        full = (allowed.unsqueeze(1) if allowed.dim() == 3 else allowed).expand(B, H, L, S)
        ref_out, _ = ref(q, kv, kv, attn_mask=~full.reshape(B * H, L, S), need_weights=False)
        torch.testing.assert_close(mine(q, kv, mask=allowed)[0], ref_out, **TOL[torch.float64])
