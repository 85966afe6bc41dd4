"""Multi-head attention: split the model dimension into heads, attend in each, merge, project.

Shapes (batch-first, as in PyTorch's docs): ``B`` batch, ``H`` heads, ``L`` query positions,
``S`` key positions, ``d_model = H * d_head``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .attention import IMPLS, Impl, scaled_dot_product_attention
from .validate import (
    check_mask,
    require,
    require_choice,
    require_int,
    require_same_device_dtype,
    require_tensor,
    shape_of,
)

__all__ = ["MultiHeadAttention", "merge_heads", "split_heads"]


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """``(B, L, d_model)`` -> ``(B, H, L, d_model // H)``: head ``h`` gets features ``h*d_head : (h+1)*d_head``.

    The transpose matters: reshaping straight to ``(B, H, L, d_head)`` would mix positions
    across heads. :func:`merge_heads` is the exact inverse.

    Examples
    --------
    >>> import torch, qkv
    >>> qkv.split_heads(torch.zeros(2, 5, 12), num_heads=3).shape
    torch.Size([2, 3, 5, 4])
    """
    x = require_tensor("x", x)
    require_int("num_heads", num_heads)
    require(x.dim() == 3, "x", "(B, L, d_model)", x)
    B, L, d_model = x.shape
    require(d_model % num_heads == 0, "x", f"(B, L, d_model) with d_model divisible by num_heads={num_heads}", x)
    return x.view(B, L, num_heads, d_model // num_heads).transpose(1, 2)  # (B, H, L, d_head)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """``(B, H, L, d_head)`` -> ``(B, L, H * d_head)``, the inverse of :func:`split_heads`."""
    x = require_tensor("x", x)
    require(x.dim() == 4, "x", "(B, H, L, d_head)", x)
    B, H, L, d_head = x.shape
    return x.transpose(1, 2).reshape(B, L, H * d_head)  # (B, L, d_model)


class MultiHeadAttention(nn.Module):
    r"""Multi-head attention with learned projections, batch-first.

    .. math:: \mathrm{MHA}(X_q, X_k, X_v) = \mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_H)\,W^O,
              \quad \mathrm{head}_h = \mathrm{softmax}\Big(\frac{Q_h K_h^\top}{\sqrt{d_k}}\Big) V_h

    where :math:`Q = X_q W^Q`, :math:`K = X_k W^K`, :math:`V = X_v W^V` are split into ``H`` heads of
    ``d_k = d_model / H`` features each. The parameter count equals one head of width ``d_model``.

    Parameters
    ----------
    d_model : int
        Width of the inputs and the output.
    num_heads : int
        Number of heads ``H``; must divide ``d_model``.
    bias : bool
        Biases on the four projections.
    impl : {"auto", "explicit", "fused"}
        Passed to :func:`qkv.scaled_dot_product_attention`.

    Notes
    -----
    ``mask`` uses our convention, True = may attend. ``torch.nn.MultiheadAttention``'s boolean
    ``attn_mask`` and ``key_padding_mask`` mean the opposite (True = blocked): PyTorch's
    ``key_padding_mask=kpm`` is ``mask=~kpm[:, None, None, :]`` here, and its 3-D ``attn_mask`` is
    ``(B * H, L, S)`` where ours is ``(B, L, S)``. ``need_weights=True`` returns per-head weights
    ``(B, H, L, S)``, like PyTorch's ``average_attn_weights=False``; ``weights.mean(dim=1)`` is its
    default average. A query with no allowed key gets zero heads, so its output is ``out_proj``'s bias
    (PyTorch's module gives NaN there). Queries, keys and values all have ``d_model`` features (no
    ``kdim``/``vdim``); there is no dropout, ``add_bias_kv`` or ``add_zero_attn``, and no sequence-first or
    unbatched layout: inputs are ``(B, L, d_model)``.

    Examples
    --------
    >>> import torch, qkv
    >>> mha = qkv.MultiHeadAttention(d_model=16, num_heads=4)
    >>> out, w = mha(torch.randn(2, 5, 16), need_weights=True)
    >>> out.shape, w.shape
    (torch.Size([2, 5, 16]), torch.Size([2, 4, 5, 5]))
    """

    def __init__(self, d_model: int, num_heads: int, bias: bool = True, impl: Impl = "auto") -> None:
        super().__init__()
        require_int("d_model", d_model)
        require_int("num_heads", num_heads)
        require(d_model % num_heads == 0, "num_heads", f"a divisor of d_model={d_model}", num_heads)
        require_choice("impl", impl, IMPLS)
        self.d_model, self.num_heads, self.impl = d_model, num_heads, impl
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)  # W^Q
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)  # W^K
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)  # W^V
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)  # W^O

    def project_packed(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Self-attention's Q, K, V from one ``(B, L, d_model) @ (d_model, 3 * d_model)`` product.

        The same numbers as ``q_proj(x), k_proj(x), v_proj(x)``, as PyTorch's ``in_proj_weight`` computes
        them: one wide matrix product reads ``x`` once instead of three times. The stacked weight is
        rebuilt on each call (3 * d_model^2 numbers copied, small beside the product's B * L * 3 * d_model^2
        multiply-adds), so that training ``q_proj``, ``k_proj`` and ``v_proj`` needs no bookkeeping.
        """
        weight = torch.cat([self.q_proj.weight, self.k_proj.weight, self.v_proj.weight])  # (3*d_model, d_model)
        bias = None
        if self.q_proj.bias is not None:
            bias = torch.cat([self.q_proj.bias, self.k_proj.bias, self.v_proj.bias])  # (3*d_model,)
        q, k, v = F.linear(x, weight, bias).chunk(3, dim=-1)  # 3 x (B, L, d_model)
        return q, k, v

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor | None = None,
        value: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        need_weights: bool = False,
        *,
        is_causal: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attend from ``query`` (B, L, d_model) to ``key`` (B, S, d_model) and ``value`` (B, S, d_model).

        ``key`` defaults to ``query`` and ``value`` to ``key`` (self-attention). ``mask`` is boolean,
        True = may attend, broadcastable to ``(B, H, L, S)``; a 3-D mask is ``(B, L, S)``, applied to
        every head, and a 2-D ``(L, S)`` or 1-D ``(S,)`` mask to every batch entry and head.
        ``is_causal=True`` lets query ``i`` see keys ``j <= i`` without a mask (not with one). Returns
        ``(out, weights)``: out ``(B, L, d_model)``, weights ``(B, H, L, S)`` if ``need_weights`` else ``None``.
        """
        key = query if key is None else key
        value = key if value is None else value
        for name, x in (("query", query), ("key", key), ("value", value)):
            require_tensor(name, x, floating=True)
            require(x.dim() == 3 and x.shape[-1] == self.d_model, name, f"(B, *, d_model={self.d_model})", x)
        require_same_device_dtype(("query", "key", "value"), (query, key, value))
        weight = self.q_proj.weight  # under autocast the projections choose their dtype themselves
        same_dtype = query.dtype == weight.dtype or torch.is_autocast_enabled(query.device.type)
        require(
            same_dtype and query.device == weight.device,
            "query",
            f"{weight.dtype} on {weight.device} like the module's weights (or move the module: module.to(query.dtype))",
            f"{query.dtype} on {query.device}",
        )
        require(
            not (need_weights and self.impl == "fused"),
            "need_weights",
            "False in a module built with impl='fused' (the fused kernel never forms the weights)",
            need_weights,
        )
        B, L, _ = query.shape
        S = key.shape[1]
        require(key.shape[0] == B, "key", f"batch size {B} like query {shape_of(query)}", key)
        require(value.shape[:2] == key.shape[:2], "value", f"(B, S) = {shape_of(key)[:2]} like key", value)
        if mask is not None:
            mask = require_tensor("mask", mask)
            if mask.dim() == 3:
                mask = check_mask(mask, (B, L, S)).unsqueeze(1)  # (B, 1, L, S)
            mask = check_mask(mask, (B, self.num_heads, L, S))

        if query is key and key is value:  # self-attention: one packed product (see project_packed)
            q, k, v = self.project_packed(query)  # each (B, L, d_model)
        else:
            q, k, v = self.q_proj(query), self.k_proj(key), self.v_proj(value)  # (B, L|S|S, d_model)
        q = split_heads(q, self.num_heads)  # (B, H, L, d_k)
        k = split_heads(k, self.num_heads)  # (B, H, S, d_k)
        v = split_heads(v, self.num_heads)  # (B, H, S, d_k)
        weights: torch.Tensor | None = None
        if need_weights:
            out, weights = scaled_dot_product_attention(
                q, k, v, mask, is_causal=is_causal, return_weights=True, impl=self.impl
            )
        else:
            out = scaled_dot_product_attention(q, k, v, mask, is_causal=is_causal, impl=self.impl)  # (B, H, L, d_k)
        return self.out_proj(merge_heads(out)), weights  # (B, L, d_model)

    @classmethod
    def from_torch(cls, module: nn.MultiheadAttention, impl: Impl = "auto") -> MultiHeadAttention:
        """Build a ``MultiHeadAttention`` with the same weights as a ``torch.nn.MultiheadAttention``.

        PyTorch stores W^Q, W^K, W^V stacked in ``in_proj_weight`` (3 * d_model, d_model); they are
        copied into ``q_proj``, ``k_proj`` and ``v_proj``. Modules with ``kdim``/``vdim`` different
        from ``embed_dim``, ``add_bias_kv``, ``add_zero_attn`` or dropout have no counterpart here.
        PyTorch's ``batch_first`` only changes the layout of its inputs: ours are always batch-first.
        """
        require(
            isinstance(module, nn.MultiheadAttention), "module", "a torch.nn.MultiheadAttention", type(module).__name__
        )
        require(
            module._qkv_same_embed_dim, "module", "kdim == vdim == embed_dim", f"kdim={module.kdim}, vdim={module.vdim}"
        )
        require(
            module.bias_k is None and not module.add_zero_attn,
            "module",
            "without add_bias_kv or add_zero_attn",
            "one of them set",
        )
        require(module.dropout == 0.0, "module", "dropout=0.0", f"dropout={module.dropout}")
        has_bias = module.in_proj_bias is not None
        new = cls(module.embed_dim, module.num_heads, bias=has_bias, impl=impl)
        new = new.to(device=module.in_proj_weight.device, dtype=module.in_proj_weight.dtype)
        with torch.no_grad():
            for proj, w in zip((new.q_proj, new.k_proj, new.v_proj), module.in_proj_weight.chunk(3)):
                proj.weight.copy_(w)
            new.out_proj.weight.copy_(module.out_proj.weight)
            if has_bias:
                for proj, b in zip((new.q_proj, new.k_proj, new.v_proj), module.in_proj_bias.chunk(3)):
                    proj.bias.copy_(b)
                new.out_proj.bias.copy_(module.out_proj.bias)
        return new
