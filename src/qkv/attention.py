"""Softmax and scaled dot-product attention, in the row convention and the notes' column convention.

Row convention (ours, PyTorch's, the paper's): each token is a row. With queries ``q`` of shape
``(..., L, d_k)``, keys ``k`` of shape ``(..., S, d_k)`` and values ``v`` of shape ``(..., S, d_v)``::

    scores  = q @ k.T / sqrt(d_k)        # (..., L, S)
    weights = softmax(scores, dim=-1)    # (..., L, S), each row sums to 1
    out     = weights @ v                # (..., L, d_v)

Column convention (the source notes): each token is a column, ``A = K^T Q``, softmax down each
column, ``O = V A'``. Both give the same numbers, transposed.
"""

from __future__ import annotations

import math
from typing import Literal, overload

import torch
import torch.nn.functional as F

from .masks import causal_mask
from .validate import (
    check_mask,
    check_qkv,
    require,
    require_choice,
    require_same_device_dtype,
    require_scale,
    require_tensor,
    shape_of,
)

__all__ = ["column_attention", "default_scale", "scaled_dot_product_attention", "softmax"]

Impl = Literal["auto", "explicit", "fused"]
IMPLS = ("auto", "explicit", "fused")
_LOW_PRECISION = (torch.float16, torch.bfloat16)


def default_scale(d_k: int) -> float:
    """The usual scale, ``1 / sqrt(d_k)``. With ``d_k = 0`` every score is an empty sum, 0, whatever the scale: 1."""
    return 1.0 / math.sqrt(d_k) if d_k > 0 else 1.0


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    r"""Numerically stable softmax along ``dim``.

    .. math:: \mathrm{softmax}(x)_j = \frac{e^{x_j - m}}{\sum_{j'} e^{x_{j'} - m}}, \quad m = \max_j x_j

    Subtracting the maximum changes nothing mathematically but keeps ``exp`` from overflowing, so
    logits of ``1e4`` give finite weights. A slice whose entries are all ``-inf`` (a query whose
    every key is masked) gives zeros rather than NaN. Half-precision inputs are computed in float32
    and returned in their own dtype. An empty ``dim`` gives an empty result, as ``torch.softmax`` does.

    Parameters
    ----------
    x : Tensor, any shape with at least one dimension
    dim : int
        The axis that is normalised to sum to 1.

    Returns
    -------
    Tensor, the shape and dtype of ``x``.

    Examples
    --------
    >>> import torch, qkv
    >>> qkv.softmax(torch.tensor([1e4, 0.0]))
    tensor([1., 0.])
    """
    require_tensor("x", x, min_dim=1, floating=True)
    require(-x.dim() <= dim < x.dim(), "dim", f"in [{-x.dim()}, {x.dim()}) for x of shape {shape_of(x)}", dim)
    if x.shape[dim] == 0:  # nothing to normalise (and no maximum to subtract)
        return x.clone()
    work = x.float() if x.dtype in _LOW_PRECISION else x
    m = work.amax(dim=dim, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))  # all -inf slice: keep exp() at 0, not NaN
    e = torch.exp(work - m)
    total = e.sum(dim=dim, keepdim=True)
    out = e / torch.where(total > 0, total, torch.ones_like(total))
    return out.to(x.dtype)


# What a type checker infers from ``return_weights``: the output alone, or (output, weights).
@overload
def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    scale: float | None = None,
    is_causal: bool = False,
    return_weights: Literal[False] = False,
    impl: Impl = "auto",
) -> torch.Tensor: ...
@overload
def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    scale: float | None = None,
    is_causal: bool = False,
    return_weights: Literal[True],
    impl: Impl = "auto",
) -> tuple[torch.Tensor, torch.Tensor]: ...
@overload
def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    scale: float | None = None,
    is_causal: bool = False,
    return_weights: bool = False,
    impl: Impl = "auto",
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]: ...
def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    scale: float | None = None,
    is_causal: bool = False,
    return_weights: bool = False,
    impl: Impl = "auto",
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    r"""Scaled dot-product attention, :math:`\mathrm{softmax}(QK^\top / \sqrt{d_k})\,V`.

    Parameters
    ----------
    q : Tensor (..., L, d_k)
        Queries, one row per query position.
    k : Tensor (..., S, d_k)
        Keys, one row per key position; the same leading dims as ``q``.
    v : Tensor (..., S, d_v)
        Values, one row per key position.
    mask : bool Tensor broadcastable to (..., L, S), optional
        ``True`` means "may attend", the meaning of a boolean ``attn_mask`` in
        ``torch.nn.functional.scaled_dot_product_attention`` (and the *inverse* of
        ``key_padding_mask`` / boolean ``attn_mask`` in ``torch.nn.MultiheadAttention``).
        Any rank up to that of ``q``: ``(S,)``, ``(L, S)``, ``(B, 1, 1, S)``, ... Masked scores
        become ``-inf``. A query whose every key is masked gets zero weights and a zero output,
        never NaN (PyTorch's CPU kernels give 0 there too).
    scale : float, optional
        Multiplies the scores; default ``1 / sqrt(d_k)``. Any finite number, negative too.
    is_causal : bool
        Query ``i`` sees keys ``j <= i``, aligned top-left as in PyTorch (with ``L > S`` the last
        queries see every key; with ``L < S`` the last keys are hidden from every query): the
        same as ``mask=qkv.causal_mask(L, S)``, but the fused path builds no mask.
    return_weights : bool
        Also return the attention weights.
    impl : {"auto", "explicit", "fused"}
        ``"explicit"`` runs the three steps the book teaches; ``"fused"`` calls PyTorch's kernel
        (which never materialises the weights); ``"auto"`` is fused unless weights are asked for.
        All three give the same numbers (to rounding) and gradients.

    Returns
    -------
    out : Tensor (..., L, d_v)
    weights : Tensor (..., L, S), only if ``return_weights``; each unmasked row sums to 1.

    Notes
    -----
    Any size may be 0, with PyTorch's answers: ``L = 0`` gives an empty ``(..., 0, d_v)``;
    ``S = 0`` gives zeros (every query has no key) and weights of shape ``(..., L, 0)``; ``d_k = 0``
    gives uniform weights (every score is an empty sum, 0). A ``ValueError`` naming the shapes it got
    refuses, on every path, what PyTorch's function takes but this one does not: leading dims that
    differ between ``q``, ``k`` and ``v`` (PyTorch broadcasts them; expand them first); a float
    (additive) mask; a mask together with ``is_causal`` (PyTorch refuses that too; pass
    ``mask & qkv.causal_mask(L, S)``); and, like PyTorch, inputs with fewer than two dims (a single
    query is ``q.unsqueeze(-2)``, shape ``(1, d_k)``). There is no dropout.

    Examples
    --------
    >>> import torch, qkv
    >>> q, k, v = torch.randn(2, 5, 8), torch.randn(2, 7, 8), torch.randn(2, 7, 3)
    >>> out, w = qkv.scaled_dot_product_attention(q, k, v, return_weights=True)
    >>> out.shape, w.shape
    (torch.Size([2, 5, 3]), torch.Size([2, 5, 7]))
    >>> causal = qkv.scaled_dot_product_attention(q, q, q, is_causal=True)
    >>> torch.allclose(causal, qkv.scaled_dot_product_attention(q, q, q, qkv.causal_mask(5)), atol=1e-6)
    True
    """
    q, k, v = check_qkv(q, k, v)
    require_choice("impl", impl, IMPLS)
    require(
        not (impl == "fused" and return_weights),
        "impl",
        "'explicit' or 'auto' when return_weights=True (the fused kernel never forms the weights)",
        repr(impl),
    )
    require(isinstance(is_causal, bool), "is_causal", "True or False", repr(is_causal))
    L, S = q.shape[-2], k.shape[-2]
    if mask is not None:
        require(not is_causal, "mask", f"None when is_causal=True (for both, pass mask & causal_mask({L}, {S}))", mask)
        mask = check_mask(mask, (*q.shape[:-2], L, S))
        require(mask.device == q.device, "mask", f"on the device of query ({q.device})", f"device {mask.device}")
    scale = default_scale(q.shape[-1]) if scale is None else require_scale(scale)

    # An empty sequence takes the explicit path too: there is nothing for a kernel to save, and some refuse it.
    if impl == "explicit" or return_weights or L == 0 or S == 0:
        if is_causal and L > 0 and S > 0:
            mask = causal_mask(L, S, device=q.device)  # (L, S)
        scores = (q @ k.transpose(-2, -1)) * scale  # (..., L, S)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = softmax(scores, dim=-1)  # (..., L, S)
        out = weights @ v  # (..., L, d_v)
        return (out, weights) if return_weights else out
    return _fused(q, k, v, mask, scale, is_causal)


def _fused(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, scale: float, is_causal: bool
) -> torch.Tensor:
    """PyTorch's kernel on inputs folded into the ``(B, H, L, d)`` layout its fast CPU kernels take."""
    batch, L, d_v = q.shape[:-2], q.shape[-2], v.shape[-1]
    if mask is not None:  # the rank of q: PyTorch's kernels fail on 0-D and 1-D masks
        mask = mask.reshape((1,) * (q.dim() - mask.dim()) + mask.shape)  # (..., L or 1, S or 1)
    if q.dim() != 4:  # fold the batch dims into B
        n = math.prod(batch)  # not -1, which a size of 0 leaves undefined
        q, k, v = (t.reshape(n, 1, *t.shape[-2:]) for t in (q, k, v))  # (B*, 1, L or S, d)
        if mask is not None:
            last = mask.shape[-2:]
            if any(m != 1 for m in mask.shape[:-2]):  # one mask per batch entry: (B*, 1, L or 1, S or 1)
                mask = mask.expand(*batch, *last).reshape(n, 1, *last)
            else:  # one mask for the whole batch, left to broadcast
                mask = mask.reshape(1, 1, *last)
    if mask is None:
        out = F.scaled_dot_product_attention(q, k, v, scale=scale, is_causal=is_causal)
    else:
        # A query with no allowed key: PyTorch's CPU kernels give 0, others (CUDA's, older releases) NaN. Let such
        # rows see every key, then zero them: the same 0 everywhere.
        has_key = mask.any(dim=-1, keepdim=True)  # (..., L or 1, 1)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask | ~has_key, scale=scale)
        out = out.masked_fill(~has_key, 0.0)
    return out.reshape(*batch, L, d_v)  # (..., L, d_v)


def column_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    scale: float | None = None,
    return_weights: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    r"""Attention in the source notes' column convention: every token is a *column*.

    .. math:: A = K^\top Q / \sqrt{d_k}, \qquad A' = \mathrm{softmax}_{\text{columns}}(A), \qquad O = V A'

    Column ``i`` of ``A'`` holds the weights of query ``i`` over all keys and sums to 1. The result
    equals the row form transposed: ``column_attention(q.mT, k.mT, v.mT) == scaled_dot_product_attention(q, k, v).mT``.

    Parameters
    ----------
    q : Tensor (..., d_k, L)
    k : Tensor (..., d_k, S)
    v : Tensor (..., d_v, S)
    scale : float, optional
        Default ``1 / sqrt(d_k)``.
    return_weights : bool
        Also return ``A'``.

    Returns
    -------
    out : Tensor (..., d_v, L)
    weights : Tensor (..., S, L), only if ``return_weights``; each column sums to 1.

    Examples
    --------
    >>> import torch, qkv
    >>> q, k, v = torch.randn(8, 5), torch.randn(8, 7), torch.randn(3, 7)
    >>> qkv.column_attention(q, k, v).shape
    torch.Size([3, 5])
    """
    q = require_tensor("query", q, min_dim=2, floating=True)
    k = require_tensor("key", k, min_dim=2, floating=True)
    v = require_tensor("value", v, min_dim=2, floating=True)
    require_same_device_dtype(("query", "key", "value"), (q, k, v))
    d_k = q.shape[-2]
    require(
        k.dim() == q.dim() and k.shape[:-2] == q.shape[:-2] and k.shape[-2] == d_k,
        "key",
        f"(..., d_k, S) with d_k={d_k} and leading dims like query {shape_of(q)}",
        k,
    )
    require(
        v.dim() == k.dim() and v.shape[:-2] == k.shape[:-2] and v.shape[-1] == k.shape[-1],
        "value",
        f"(..., d_v, S) with S={k.shape[-1]} like key {shape_of(k)}",
        v,
    )
    scale = default_scale(d_k) if scale is None else require_scale(scale)
    scores = (k.transpose(-2, -1) @ q) * scale  # A = K^T Q: (..., S, L)
    weights = softmax(scores, dim=-2)  # A': each column sums to 1
    out = v @ weights  # O = V A': (..., d_v, L)
    return (out, weights) if return_weights else out
