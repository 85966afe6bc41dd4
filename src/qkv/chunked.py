"""Attention over key blocks with the online softmax: the full result without the (L, S) matrix.

The idea behind FlashAttention (Dao et al., 2022), written for clarity rather than speed. For
each query row keep a running maximum ``m``, a running normaliser ``l`` and an unnormalised output
``acc``. A new block of scores ``s`` updates them as::

    m_new = max(m, max_j s_j)
    l     = l * exp(m - m_new) + sum_j exp(s_j - m_new)
    acc   = acc * exp(m - m_new) + exp(s - m_new) @ v_block

and at the end ``out = acc / l``. Only an ``(L, block_size)`` block of scores exists at a time.
With ``causal=True`` a block of keys starting at ``start`` is invisible to queries before
``start``, so those rows are skipped (about half the work) and only the diagonal rows are masked.
Differentiable: with inputs that require grad the updates build new tensors instead of writing
in place, and autograd then keeps every block's probabilities (memory like ``L * S`` again).
"""

from __future__ import annotations

import torch

from .attention import default_scale
from .validate import check_qkv, require, require_int, require_scale

__all__ = ["chunked_attention"]


def chunked_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    block_size: int = 512,
    causal: bool = False,
    scale: float | None = None,
) -> torch.Tensor:
    """Scaled dot-product attention computed one block of keys at a time.

    Equal (to rounding) to ``scaled_dot_product_attention(q, k, v)``, or with
    ``mask=causal_mask(L, S)`` when ``causal``; peak extra memory grows with ``L * block_size``,
    not ``L * S``.

    Parameters
    ----------
    q : Tensor (..., L, d_k)
    k : Tensor (..., S, d_k)
    v : Tensor (..., S, d_v)
    block_size : int
        Keys per block; need not divide ``S``. The default, 512, keeps the number of PyTorch calls
        (each a synchronisation point for the CPU's threads) small while one block of scores,
        ``L * block_size`` numbers, stays a few percent of the full ``(L, S)`` matrix at long lengths.
    causal : bool
        Query ``i`` sees keys ``j <= i`` (top-left aligned, like ``qkv.causal_mask`` and
        ``is_causal=True`` in ``scaled_dot_product_attention``).
    scale : float, optional
        Default ``1 / sqrt(d_k)``.

    Returns
    -------
    Tensor (..., L, d_v)

    Notes
    -----
    Inputs, sizes of 0 and errors as in :func:`qkv.scaled_dot_product_attention` (``S = 0`` gives zeros);
    there is no ``mask`` argument.

    Examples
    --------
    >>> import torch, qkv
    >>> q, k, v = torch.randn(64, 8), torch.randn(100, 8), torch.randn(100, 4)
    >>> torch.allclose(qkv.chunked_attention(q, k, v, block_size=16), qkv.scaled_dot_product_attention(q, k, v), atol=1e-6)
    True
    """
    q, k, v = check_qkv(q, k, v)
    require_int("block_size", block_size)
    require(isinstance(causal, bool), "causal", "True or False", repr(causal))
    scale = default_scale(q.shape[-1]) if scale is None else require_scale(scale)
    L, S = q.shape[-2], k.shape[-2]
    work = torch.float32 if q.dtype in (torch.float16, torch.bfloat16) else q.dtype
    q = (q * scale).to(work)  # scale once: (..., L, d_k)
    if L == 0 or S == 0:  # no block to visit: an empty output, or zeros (no key), from products autograd can follow
        return (q @ k.to(work).transpose(-2, -1) @ v.to(work)).to(v.dtype)  # (..., L, d_v)
    m = torch.full((*q.shape[:-1], 1), float("-inf"), device=q.device, dtype=work)  # running max (..., L, 1)
    l = torch.zeros_like(m)  # running sum of exp (..., L, 1)
    acc = torch.zeros((*q.shape[:-1], v.shape[-1]), device=q.device, dtype=work)  # (..., L, d_v)
    # In-place updates are faster, but autograd needs the tensors it saved unchanged: build new ones then.
    grad = torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad)

    for start in range(0, S, block_size):
        if causal and start > L - 1:
            break  # every later key is in every query's future
        stop = min(start + block_size, S)
        # Causal: queries before `start` see none of these keys, so only rows r0: take part (half the work).
        r0 = start if causal else 0
        s = q[..., r0:, :] @ k[..., start:stop, :].to(work).transpose(-2, -1)  # (..., L - r0, b)
        if causal:  # only the diagonal rows start .. stop-1 have future keys in this block
            n_diag = min(stop, L) - start
            rows = torch.arange(start, start + n_diag, device=q.device)[:, None]  # (n_diag, 1)
            future = torch.arange(start, stop, device=q.device)[None, :] > rows  # (n_diag, b)
            s[..., :n_diag, :].masked_fill_(future, float("-inf"))
        m_old, l_old, acc_old = m[..., r0:, :], l[..., r0:, :], acc[..., r0:, :]  # views: updated in place
        m_new = torch.maximum(m_old, s.amax(dim=-1, keepdim=True))  # (..., L - r0, 1)
        m_safe = torch.where(torch.isfinite(m_new), m_new, torch.zeros_like(m_new))  # rows with no key yet
        correction = torch.exp(m_old - m_safe)  # (..., L - r0, 1); 0 on a row's first block
        v_block = v[..., start:stop, :].to(work)  # (..., b, d_v)
        if grad:
            p = torch.exp(s - m_safe)  # (..., L - r0, b)
            l_new = l_old * correction + p.sum(dim=-1, keepdim=True)
            acc_new = acc_old * correction + p @ v_block  # (..., L - r0, d_v)
            m, l, acc = (torch.cat([x[..., :r0, :], y], dim=-2) for x, y in ((m, m_new), (l, l_new), (acc, acc_new)))
        else:
            p = s.sub_(m_safe).exp_()  # p = exp(s - m_new), in place: (..., L - r0, b)
            l_old.mul_(correction).add_(p.sum(dim=-1, keepdim=True))
            acc_old.mul_(correction).add_(p @ v_block)  # (..., L - r0, d_v)
            m_old.copy_(m_new)

    out = acc / torch.where(l > 0, l, torch.ones_like(l))  # (..., L, d_v); a row with no key stays 0
    return out.to(v.dtype)
