"""Grading spec for the lab ``multihead``: multi-head attention from scratch, checked against PyTorch's layer.

Four autograded items and one written answer. The references build a ``torch.nn.MultiheadAttention`` in
float64 (batch-first) and copy the case's weights into it, so the student's layer is compared with PyTorch's
on fresh random inputs: several head counts (1 to 8), ``L != S`` for cross-attention, biases that are not
zero. ``split_heads``/``merge_heads`` cases use ``L != H`` and several heads, so a reshape without the
transpose gives the right shape and wrong numbers.
"""

from __future__ import annotations

import math

import torch

from qkv.grading.spec import QKV_ATTENTION, TORCH_ATTENTION, Case, Item, LabSpec, Manual, randn

FORBID = TORCH_ATTENTION + QKV_ATTENTION + ("qkv.split_heads", "qkv.merge_heads")


def split_cases(g: torch.Generator) -> list[Case]:
    return [
        Case((randn(g, B, L, d), H), label=f"(B, L, d_model) = ({B}, {L}, {d}) into {H} heads")
        for B, L, d, H in ((3, 5, 24, 4), (2, 7, 12, 3), (1, 4, 16, 8), (2, 3, 6, 1))
    ]


def split_reference(x, num_heads):
    B, L, d_model = x.shape
    return x.reshape(B, L, num_heads, d_model // num_heads).permute(0, 2, 1, 3)  # (B, H, L, d_k)


def merge_cases(g: torch.Generator) -> list[Case]:
    return [
        Case((randn(g, B, H, L, d_k),), label=f"(B, H, L, d_k) = ({B}, {H}, {L}, {d_k})")
        for B, H, L, d_k in ((3, 4, 7, 4), (2, 2, 5, 3), (1, 8, 3, 2), (2, 1, 4, 6))
    ]


def merge_reference(x):
    B, H, L, d_k = x.shape
    return x.permute(0, 2, 1, 3).reshape(B, L, H * d_k)  # (B, L, d_model)


def _torch_layer(d_model: int, num_heads: int, bias: bool) -> torch.nn.MultiheadAttention:
    return torch.nn.MultiheadAttention(d_model, num_heads, bias=bias, batch_first=True, dtype=torch.float64)


def mha_cases(g: torch.Generator) -> list[Case]:
    cases = []
    for B, L, d, H in ((2, 5, 12, 3), (3, 7, 16, 4), (1, 2, 24, 6), (2, 5, 8, 1), (2, 6, 32, 8)):
        weights = tuple(randn(g, d, d, scale=2.0 / math.sqrt(d)) for _ in range(4))  # W_q, W_k, W_v, W_o
        cases.append(Case((randn(g, B, L, d), *weights, H), label=f"B = {B}, L = {L}, d_model = {d}, {H} heads"))
    return cases


def split_heads(x, num_heads):
    """The stand-in for the student's ``split_heads`` when it is wrong (it runs in the sandbox)."""
    B, L, d_model = x.shape
    return x.reshape(B, L, num_heads, d_model // num_heads).transpose(1, 2)  # (B, H, L, d_k)


def merge_heads(x):
    """The stand-in for the student's ``merge_heads`` when it is wrong (it runs in the sandbox)."""
    B, H, L, d_k = x.shape
    return x.transpose(1, 2).reshape(B, L, H * d_k)  # (B, L, d_model)


def mha_reference(x, W_q, W_k, W_v, W_o, num_heads):
    layer = _torch_layer(x.shape[-1], num_heads, bias=False)
    with torch.no_grad():
        layer.in_proj_weight.copy_(torch.cat([W_q.T, W_k.T, W_v.T]))  # nn.Linear stores W transposed
        layer.out_proj.weight.copy_(W_o.T)
        return layer(x, x, x, need_weights=True, average_attn_weights=False)  # (B, L, d), (B, H, L, L)


def module_cases(g: torch.Generator) -> list[Case]:
    cases = []
    for B, L, S, d, H in ((2, 6, None, 16, 4), (3, 5, 8, 24, 6), (1, 1, 4, 8, 2), (2, 7, 7, 32, 8), (2, 4, 9, 12, 1)):
        state = {}
        for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            state[f"{name}.weight"] = randn(g, d, d, scale=2.0 / math.sqrt(d))
            state[f"{name}.bias"] = randn(g, d)
        query = randn(g, B, L, d)
        if S is None:
            cases.append(Case((d, H, state, query), label=f"self-attention (key and value left out), {H} heads"))
        else:
            key, value = randn(g, B, S, d), randn(g, B, S, d)  # distinct: v_proj(key) must not pass
            cases.append(
                Case(
                    (d, H, state, query, key, value),
                    label=f"cross-attention, L = {L} queries, S = {S} keys, {H} heads",
                )
            )
    return cases


def build_and_run(cls, d_model, num_heads, state, query, key=None, value=None):
    """Runs in the sandbox: the student's class, built and loaded with the case's weights, called once."""
    import torch

    module = cls(d_model, num_heads)
    module.load_state_dict(state)
    module.eval()
    with torch.no_grad():
        return module(query) if key is None else module(query, key, value)


def module_reference(d_model, num_heads, state, query, key=None, value=None):
    layer = _torch_layer(d_model, num_heads, bias=True)
    key = query if key is None else key
    value = key if value is None else value
    with torch.no_grad():
        layer.in_proj_weight.copy_(torch.cat([state[f"{n}.weight"] for n in ("q_proj", "k_proj", "v_proj")]))
        layer.in_proj_bias.copy_(torch.cat([state[f"{n}.bias"] for n in ("q_proj", "k_proj", "v_proj")]))
        layer.out_proj.weight.copy_(state["out_proj.weight"])
        layer.out_proj.bias.copy_(state["out_proj.bias"])
        return layer(query, key, value, need_weights=True, average_attn_weights=False)  # (B, L, d), (B, H, L, S)


SPEC = LabSpec(
    lab="multihead",
    items=(
        Item(
            "test_split_heads",
            2,
            "split_heads",
            split_cases,
            split_reference,
            atol=0.0,
            rtol=0.0,
            forbid=FORBID,
            describe="(B, L, d_model) to (B, H, L, d_k), head h holding features h*d_k to (h+1)*d_k of each token",
        ),
        Item(
            "test_merge_heads",
            2,
            "merge_heads",
            merge_cases,
            merge_reference,
            atol=0.0,
            rtol=0.0,
            forbid=FORBID,
            describe="(B, H, L, d_k) to (B, L, H*d_k), the exact inverse of split_heads",
        ),
        Item(
            "test_multihead_attention",
            3,
            "multihead_attention",
            mha_cases,
            mha_reference,
            forbid=FORBID,
            helpers=(split_heads, merge_heads),
            describe="(out, weights) equal to torch.nn.MultiheadAttention's (no bias) with the same weights",
        ),
        Item(
            "test_MultiHead",
            3,
            "MultiHead",
            module_cases,
            module_reference,
            forbid=FORBID,
            call=build_and_run,
            helpers=(split_heads, merge_heads),
            describe="a module with q_proj, k_proj, v_proj, out_proj that matches torch.nn.MultiheadAttention",
        ),
        Manual("written_heads", 3, title="Parameters, heads and the transpose"),
    ),
)
