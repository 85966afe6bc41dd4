"""The encoder block and the tiny Transformer, checked against PyTorch's own encoder with copied weights."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

import qkv


def _torch_layer_from(ours: qkv.TransformerEncoderLayer, d_ff: int) -> nn.TransformerEncoderLayer:
    """PyTorch's encoder layer carrying exactly our weights (the independent reference)."""
    mha = ours.self_attn
    ref = nn.TransformerEncoderLayer(
        mha.d_model,
        mha.num_heads,
        dim_feedforward=d_ff,
        dropout=0.0,
        activation="relu",
        batch_first=True,
        norm_first=ours.norm_first,
    ).to(torch.float64)
    with torch.no_grad():
        ref.self_attn.in_proj_weight.copy_(torch.cat([mha.q_proj.weight, mha.k_proj.weight, mha.v_proj.weight]))
        ref.self_attn.in_proj_bias.copy_(torch.cat([mha.q_proj.bias, mha.k_proj.bias, mha.v_proj.bias]))
        ref.self_attn.out_proj.weight.copy_(mha.out_proj.weight)
        ref.self_attn.out_proj.bias.copy_(mha.out_proj.bias)
        for name in ("linear1", "linear2", "norm1", "norm2"):
            ref.get_submodule(name).load_state_dict(ours.get_submodule(name).state_dict())
    return ref.eval()


def _randomise_norms(module: nn.Module, gen: torch.Generator) -> None:
    """LayerNorm starts at weight 1, bias 0; random values make the comparison see them."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.copy_(1 + 0.3 * torch.randn(m.weight.shape, generator=gen, dtype=m.weight.dtype))
                m.bias.copy_(0.3 * torch.randn(m.bias.shape, generator=gen, dtype=m.bias.dtype))


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("impl", ["explicit", "fused"])
@pytest.mark.parametrize("seed,B,L,d_model,H,d_ff", [(0, 2, 5, 8, 2, 16), (1, 3, 7, 12, 3, 20), (2, 1, 1, 6, 1, 6)])
def test_layer_matches_torch(norm_first, impl, seed, B, L, d_model, H, d_ff):
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    ours = qkv.TransformerEncoderLayer(d_model, H, d_ff, norm_first=norm_first, impl=impl).double().eval()
    _randomise_norms(ours, gen)
    ref = _torch_layer_from(ours, d_ff)
    x = torch.randn(B, L, d_model, generator=gen, dtype=torch.float64)
    out, weights = ours(x)
    assert weights is None
    torch.testing.assert_close(out, ref(x), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("norm_first", [True, False])
def test_layer_with_mask_matches_torch(norm_first):
    gen = torch.Generator().manual_seed(3)
    torch.manual_seed(3)
    L = 6
    ours = qkv.TransformerEncoderLayer(8, 2, 12, norm_first=norm_first, impl="explicit").double().eval()
    _randomise_norms(ours, gen)
    ref = _torch_layer_from(ours, 12)
    x = torch.randn(2, L, 8, generator=gen, dtype=torch.float64)
    mask = qkv.causal_mask(L)  # True = may attend; PyTorch's boolean src_mask means True = blocked
    out, weights = ours(x, mask=mask, need_weights=True)
    torch.testing.assert_close(out, ref(x, src_mask=~mask), rtol=1e-10, atol=1e-10)
    assert weights.shape == (2, 2, L, L)
    assert torch.all(weights[..., ~mask] == 0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 2, L, dtype=torch.float64))


def test_layer_causal_mask_hides_the_future():
    torch.manual_seed(4)
    layer = qkv.TransformerEncoderLayer(8, 2).double().eval()
    x = torch.randn(1, 6, 8, dtype=torch.float64)
    y = x.clone()
    y[:, 4:] = torch.randn(1, 2, 8, dtype=torch.float64)  # change only the last two positions
    mask = qkv.causal_mask(6)
    out_x, _ = layer(x, mask=mask)
    out_y, _ = layer(y, mask=mask)
    torch.testing.assert_close(out_x[:, :4], out_y[:, :4], rtol=0, atol=0)
    assert not torch.allclose(out_x[:, 4:], out_y[:, 4:])


def _closed_form_pe(L: int, d_model: int) -> torch.Tensor:
    pe = torch.zeros(L, d_model, dtype=torch.float64)
    for p in range(L):
        for i in range(0, d_model, 2):
            pe[p, i] = math.sin(p / 10000 ** (i / d_model))
            if i + 1 < d_model:
                pe[p, i + 1] = math.cos(p / 10000 ** (i / d_model))
    return pe


@pytest.mark.parametrize("norm_first", [True, False])
def test_tiny_transformer_matches_torch_stack(norm_first):
    torch.manual_seed(5)
    gen = torch.Generator().manual_seed(5)
    V, d_model, H, N, d_ff, C = 11, 8, 2, 2, 16, 4
    model = qkv.TinyTransformer(V, d_model, H, N, d_ff, num_classes=C, norm_first=norm_first).double().eval()
    _randomise_norms(model, gen)
    tokens = torch.randint(V, (3, 9), generator=gen)
    logits, weights = model(tokens, need_weights=True)
    assert logits.shape == (3, 9, C) and weights.shape == (N, 3, H, 9, 9)
    plain_logits, no_weights = model(tokens)  # always a tuple, like the other modules
    assert no_weights is None
    torch.testing.assert_close(plain_logits, logits)

    # The table is computed in float64 and stored in float32 (the default dtype), hence 1e-7 here.
    torch.testing.assert_close(model.pe[:9], _closed_form_pe(9, d_model), rtol=0, atol=1e-7)
    h = model.embed.weight[tokens] + model.pe[:9]  # (B, L, d_model)
    for layer in model.layers:
        h = _torch_layer_from(layer, d_ff)(h)
    if norm_first:
        h = model.final_norm(h)
    expected = h @ model.head.weight.T + model.head.bias  # (B, L, C)
    torch.testing.assert_close(logits, expected, rtol=1e-10, atol=1e-10)


def test_accuracy_counts_argmax_hits():
    torch.manual_seed(6)
    model = qkv.TinyTransformer(5, 8, 2, 1)
    tokens = torch.randint(5, (4, 6))
    pred = model(tokens)[0].argmax(-1)
    targets = pred.clone()
    targets[0, :3] = (pred[0, :3] + 1) % 5  # three of 24 positions wrong
    assert model.accuracy(tokens, targets) == pytest.approx(21 / 24)


def test_tiny_transformer_learns_reversal():
    """A few hundred steps on the CPU are enough to reverse short sequences almost perfectly."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: one thread is faster than two busy ones
    try:
        _train_reversal_and_check()
    finally:
        torch.set_num_threads(threads)


def _train_reversal_and_check():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    model = qkv.TinyTransformer(vocab_size=8, d_model=32, num_heads=2, num_layers=1, d_ff=64)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(250):
        x, y = qkv.reversal_batch(64, 6, 8, generator=gen)
        loss = nn.functional.cross_entropy(model(x)[0].flatten(0, 1), y.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
    x, y = qkv.reversal_batch(512, 6, 8, generator=gen)
    assert model.accuracy(x, y) > 0.95


def test_layer_shape_errors():
    layer = qkv.TransformerEncoderLayer(8, 2)
    with pytest.raises(ValueError, match=r"x must be \(B, L, d_model=8\); got shape \(2, 5, 6\)"):
        layer(torch.randn(2, 5, 6))
    with pytest.raises(ValueError, match=r"x must be \(B, L, d_model=8\); got shape \(5, 8\)"):
        layer(torch.randn(5, 8))
    with pytest.raises(ValueError, match="x must have a floating-point dtype"):
        layer(torch.ones(2, 5, 8, dtype=torch.long))
    with pytest.raises(ValueError, match=r"num_heads must be a divisor of d_model=8; got 3"):
        qkv.TransformerEncoderLayer(8, 3)
    with pytest.raises(ValueError, match=r"dropout must be a float in \[0, 1\); got 1.5"):
        qkv.TransformerEncoderLayer(8, 2, dropout=1.5)
    with pytest.raises(ValueError, match="d_ff must be a positive int; got 0"):
        qkv.TransformerEncoderLayer(8, 2, d_ff=0)


def test_tiny_transformer_input_errors():
    model = qkv.TinyTransformer(5, 8, 2, 1, max_len=6)
    with pytest.raises(
        ValueError, match=r"tokens must be an integer tensor \(B, L\); got shape \(2, 3\), dtype torch.float32"
    ):
        model(torch.zeros(2, 3))
    with pytest.raises(ValueError, match=r"tokens must be an integer tensor \(B, L\); got shape \(3,\)"):
        model(torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match=r"tokens must be \(B, L\) with 0 < L <= max_len=6; got shape \(1, 7\)"):
        model(torch.zeros(1, 7, dtype=torch.long))
    with pytest.raises(ValueError, match=r"tokens must be ids in \[0, 5\); got ids in \[0, 5\]"):
        model(torch.tensor([[0, 5]]))
    with pytest.raises(ValueError, match=r"tokens must be ids in \[0, 5\); got ids in \[-1, 2\]"):
        model(torch.tensor([[-1, 2]]))
    with pytest.raises(TypeError, match=r"tokens must be a torch\.Tensor"):
        model([[1, 2]])
    with pytest.raises(ValueError, match=r"targets must be the shape of tokens \(1, 2\); got shape \(2,\)"):
        model.accuracy(torch.tensor([[0, 1]]), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="num_layers must be a positive int; got 0"):
        qkv.TinyTransformer(5, 8, 2, 0)
