"""Bad input raises a clear error naming the argument, what was expected and what was received."""

import pytest
import torch

import qkv

q, k, v = torch.randn(2, 5, 8), torch.randn(2, 7, 8), torch.randn(2, 7, 3)


def test_non_tensor_input_says_to_use_as_tensor():
    with pytest.raises(TypeError, match=r"query must be a torch.Tensor; got list.*torch.as_tensor"):
        qkv.scaled_dot_product_attention([[1.0]], k, v)
    with pytest.raises(TypeError, match=r"x must be a torch.Tensor; got ndarray"):
        import numpy as np

        qkv.softmax(np.zeros(3))


def test_key_width_must_match_query():
    with pytest.raises(ValueError, match=r"key must be \(\.\.\., S, d_k\) .*d_k=8.*got shape \(2, 7, 6\)"):
        qkv.scaled_dot_product_attention(q, torch.randn(2, 7, 6), v)


def test_key_batch_must_match_query_no_silent_broadcast():
    with pytest.raises(ValueError, match=r"key must be .*leading dims \(2,\).*got shape \(1, 7, 8\)"):
        qkv.scaled_dot_product_attention(q, torch.randn(1, 7, 8), v)


def test_value_length_must_match_key():
    with pytest.raises(ValueError, match=r"value must be \(\.\.\., S, d_v\) .*got shape \(2, 6, 3\)"):
        qkv.scaled_dot_product_attention(q, k, torch.randn(2, 6, 3))


def test_mask_must_be_boolean():
    with pytest.raises(
        ValueError, match=r"mask must be a boolean tensor \(True = may attend\); got dtype torch.float32"
    ):
        qkv.scaled_dot_product_attention(q, k, v, torch.zeros(5, 7))


def test_mask_must_broadcast_without_growing():
    with pytest.raises(ValueError, match=r"mask must be broadcastable to \(2, 5, 7\); got shape \(5, 6\)"):
        qkv.scaled_dot_product_attention(q, k, v, torch.ones(5, 6, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"mask must be broadcastable to \(2, 5, 7\); got shape \(3, 2, 5, 7\)"):
        qkv.scaled_dot_product_attention(q, k, v, torch.ones(3, 2, 5, 7, dtype=torch.bool))


def test_mixed_dtypes_are_named():
    with pytest.raises(ValueError, match=r"share one dtype.*query: torch.float32.*key: torch.float64"):
        qkv.scaled_dot_product_attention(q, k.double(), v)


def test_integer_inputs_rejected():
    with pytest.raises(ValueError, match=r"query must have a floating-point dtype; got torch.int64"):
        qkv.scaled_dot_product_attention(torch.ones(2, 3, dtype=torch.long), k, v)


def test_too_few_dims():
    with pytest.raises(ValueError, match=r"query must have at least 2 dimensions; got shape \(8,\)"):
        qkv.scaled_dot_product_attention(torch.randn(8), k, v)


def test_fused_cannot_return_weights():
    with pytest.raises(ValueError, match=r"impl must be 'explicit' or 'auto' when return_weights=True"):
        qkv.scaled_dot_product_attention(q, k, v, return_weights=True, impl="fused")


def test_unknown_impl():
    with pytest.raises(ValueError, match=r"impl must be 'auto', 'explicit' or 'fused'; got 'flash'"):
        qkv.scaled_dot_product_attention(q, k, v, impl="flash")


def test_column_form_shapes():
    with pytest.raises(ValueError, match=r"key must be \(\.\.\., d_k, S\) with d_k=8.*got shape \(6, 7\)"):
        qkv.column_attention(torch.randn(8, 5), torch.randn(6, 7), torch.randn(3, 7))
    with pytest.raises(ValueError, match=r"value must be \(\.\.\., d_v, S\) with S=7.*got shape \(3, 5\)"):
        qkv.column_attention(torch.randn(8, 5), torch.randn(8, 7), torch.randn(3, 5))


def test_softmax_dim_out_of_range():
    with pytest.raises(ValueError, match=r"dim must be in \[-2, 2\) for x of shape \(3, 4\); got 2"):
        qkv.softmax(torch.zeros(3, 4), dim=2)


def test_mask_sizes():
    with pytest.raises(ValueError, match=r"L must be a positive int; got 0"):
        qkv.causal_mask(0)
    with pytest.raises(ValueError, match=r"window must be an int >= 0; got -1"):
        qkv.local_mask(4, -1)
    with pytest.raises(ValueError, match=r"max_len must be >= the longest length 5; got 3"):
        qkv.padding_mask([5, 2], max_len=3)
    with pytest.raises(ValueError, match=r"adjacency must be square \(N, N\); got shape \(2, 3\)"):
        qkv.graph_mask(torch.ones(2, 3))


def test_split_heads_divisibility():
    with pytest.raises(
        ValueError, match=r"x must be \(B, L, d_model\) with d_model divisible by num_heads=3; got shape \(2, 5, 8\)"
    ):
        qkv.split_heads(torch.randn(2, 5, 8), 3)
    with pytest.raises(ValueError, match=r"x must be \(B, H, L, d_head\); got shape \(5, 8\)"):
        qkv.merge_heads(torch.randn(5, 8))


def test_multihead_shapes():
    with pytest.raises(ValueError, match=r"num_heads must be a divisor of d_model=10; got 4"):
        qkv.MultiHeadAttention(10, 4)
    mha = qkv.MultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match=r"query must be \(B, \*, d_model=8\); got shape \(2, 5, 6\)"):
        mha(torch.randn(2, 5, 6))
    with pytest.raises(ValueError, match=r"key must be batch size 2 like query \(2, 5, 8\); got shape \(3, 4, 8\)"):
        mha(torch.randn(2, 5, 8), torch.randn(3, 4, 8))
    with pytest.raises(ValueError, match=r"mask must be broadcastable to \(2, 2, 5, 5\); got shape \(4, 4\)"):
        mha(torch.randn(2, 5, 8), mask=torch.ones(4, 4, dtype=torch.bool))


def test_positional_sizes():
    with pytest.raises(ValueError, match=r"d_model must be a positive int; got 0"):
        qkv.sinusoidal_positional_encoding(4, 0)


def test_chunked_block_size():
    with pytest.raises(ValueError, match=r"block_size must be a positive int; got 0"):
        qkv.chunked_attention(q, k, v, block_size=0)


# A bool is an int in Python: every count refuses True/False instead of reading them as 1/0.
BOOL_AS_COUNT = [
    ("L", lambda: qkv.causal_mask(True)),
    ("window", lambda: qkv.local_mask(4, True)),
    ("num_heads", lambda: qkv.split_heads(torch.randn(2, 5, 8), True)),
    ("num_heads", lambda: qkv.MultiHeadAttention(8, True)),
    ("d_model", lambda: qkv.MultiHeadAttention(True, 1)),
    ("d_model", lambda: qkv.sinusoidal_positional_encoding(4, True)),
    ("offset", lambda: qkv.sinusoidal_shift_matrix(True, 4)),
    ("block_size", lambda: qkv.chunked_attention(q, k, v, block_size=True)),
    ("num_layers", lambda: qkv.TinyTransformer(10, 8, 2, True)),
    ("seq_len", lambda: qkv.reversal_batch(2, True, 10)),
]


@pytest.mark.parametrize(("name", "call"), BOOL_AS_COUNT, ids=[f"{n}-{i}" for i, (n, _) in enumerate(BOOL_AS_COUNT)])
def test_booleans_are_not_counts(name, call):
    with pytest.raises(ValueError, match=rf"^{name} must be (a positive int|an int >= 0|an int); got True$"):
        call()


def test_one_dim_inputs_say_the_form():
    with pytest.raises(
        ValueError,
        match=r"query must have at least 2 dimensions; got shape \(8,\) \(query is \(\.\.\., L, d_k\); one query is query.unsqueeze\(-2\)\)",
    ):
        qkv.scaled_dot_product_attention(torch.randn(8), k, v)
    with pytest.raises(
        ValueError, match=r"key must have at least 2 dimensions; got shape \(8,\) \(key is \(\.\.\., S, d_k\)\)"
    ):
        qkv.chunked_attention(q, torch.randn(8), v)
    with pytest.raises(ValueError, match=r"x must have at least 1 dimension; got shape \(\)"):
        qkv.softmax(torch.tensor(1.0))


def test_batch_dims_are_not_broadcast():
    with pytest.raises(
        ValueError,
        match=r"like query \(5, 8\) \(batch dims are not broadcast: expand them first\); got shape \(2, 7, 8\)",
    ):
        qkv.scaled_dot_product_attention(torch.randn(5, 8), k, v)


def test_mask_and_is_causal_together():
    with pytest.raises(
        ValueError,
        match=r"mask must be None when is_causal=True \(for both, pass mask & causal_mask\(5, 7\)\); got shape \(5, 7\)",
    ):
        qkv.scaled_dot_product_attention(q, k, v, torch.ones(5, 7, dtype=torch.bool), is_causal=True)
    with pytest.raises(ValueError, match=r"mask must be None when is_causal=True"):
        qkv.MultiHeadAttention(8, 2)(torch.randn(2, 5, 8), mask=qkv.causal_mask(5), is_causal=True)


@pytest.mark.parametrize("flag", [1, None, "yes"])
def test_causal_flags_are_booleans(flag):
    with pytest.raises(ValueError, match=rf"^is_causal must be True or False; got {flag!r}$"):
        qkv.scaled_dot_product_attention(q, k, v, is_causal=flag)
    with pytest.raises(ValueError, match=rf"^causal must be True or False; got {flag!r}$"):
        qkv.chunked_attention(q, k, v, causal=flag)


@pytest.mark.parametrize("scale", [float("nan"), float("inf"), True, "0.5", torch.tensor(0.5)])
def test_scale_is_a_finite_number(scale):
    for call in (qkv.scaled_dot_product_attention, qkv.chunked_attention, qkv.column_attention):
        with pytest.raises(ValueError, match=r"^scale must be a finite number or None \(1 / sqrt\(d_k\)\); got "):
            call(q, k, v, scale=scale) if call is not qkv.column_attention else call(q.mT, k.mT, v.mT, scale=scale)


def test_multihead_inputs_must_match_the_module():
    mha = qkv.MultiHeadAttention(8, 2)
    with pytest.raises(
        ValueError, match=r"^query must be torch.float32 on cpu like the module's weights .*; got torch.float64 on cpu$"
    ):
        mha(torch.randn(2, 5, 8, dtype=torch.float64))
    with pytest.raises(
        ValueError, match=r"^need_weights must be False in a module built with impl='fused' .*; got True$"
    ):
        qkv.MultiHeadAttention(8, 2, impl="fused")(torch.randn(2, 5, 8), need_weights=True)
