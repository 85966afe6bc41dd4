"""Sinusoidal positional encoding (Vaswani et al., 2017) and the linear map that shifts it.

``PE[p, 2i] = sin(p / base^(2i/d_model))`` and ``PE[p, 2i+1] = cos(p / base^(2i/d_model))``.
Each pair of columns is a point on a circle turning at its own frequency, so moving ``k`` positions
on is a rotation of every pair: ``PE[p + k] = PE[p] @ sinusoidal_shift_matrix(k, d_model).T`` for every ``p``.
"""

from __future__ import annotations

import torch

from .validate import require, require_int

__all__ = ["sinusoidal_positional_encoding", "sinusoidal_shift_matrix"]


def _frequencies(d_model: int, base: float, device, dtype) -> torch.Tensor:
    i2 = torch.arange(0, d_model, 2, device=device, dtype=torch.float64)  # 2i
    return (base ** (-i2 / d_model)).to(dtype)  # (ceil(d_model / 2),)


def sinusoidal_positional_encoding(
    num_positions: int,
    d_model: int,
    *,
    base: float = 10000.0,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    r"""The sinusoidal position table, one row per position.

    .. math:: PE_{p, 2i} = \sin(p\,\omega_i), \quad PE_{p, 2i+1} = \cos(p\,\omega_i),
              \quad \omega_i = \mathrm{base}^{-2i/d_{model}}

    Returns
    -------
    Tensor (num_positions, d_model). With an odd ``d_model`` the last column is a sine.

    Examples
    --------
    >>> import qkv
    >>> pe = qkv.sinusoidal_positional_encoding(50, 16)
    >>> pe.shape, pe[0, :4].tolist()
    (torch.Size([50, 16]), [0.0, 1.0, 0.0, 1.0])
    """
    require_int("num_positions", num_positions)
    require_int("d_model", d_model)
    require(base > 1, "base", "> 1", base)
    omega = _frequencies(d_model, base, device, torch.float64)  # (ceil(d/2),)
    angles = torch.arange(num_positions, device=device, dtype=torch.float64)[:, None] * omega  # (P, ceil(d/2))
    pe = torch.zeros(num_positions, d_model, device=device, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles[:, : d_model // 2])
    return pe.to(dtype)  # computed in float64 so large positions stay accurate


def sinusoidal_shift_matrix(
    offset: int,
    d_model: int,
    *,
    base: float = 10000.0,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    r"""The fixed matrix ``M_k`` with ``PE[p + k] = M_k PE[p]`` (as columns) for every position ``p``.

    It is block-diagonal with one 2x2 rotation per frequency,
    :math:`\begin{pmatrix} \cos k\omega_i & \sin k\omega_i \\ -\sin k\omega_i & \cos k\omega_i \end{pmatrix}`,
    and it does not depend on ``p``: relative position is a linear function of the encoding.
    In the row convention, ``pe[p + k] == pe[p] @ M_k.T``.

    Returns
    -------
    Tensor (d_model, d_model); ``d_model`` must be even.
    """
    require_int("offset", offset, minimum=None)
    require_int("d_model", d_model)
    require(d_model % 2 == 0, "d_model", "even (sin/cos pairs)", d_model)
    angle = offset * _frequencies(d_model, base, device, torch.float64)  # (d/2,)
    c, s = torch.cos(angle), torch.sin(angle)
    m = torch.zeros(d_model, d_model, device=device, dtype=torch.float64)
    even, odd = torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)
    m[even, even], m[even, odd] = c, s  # sin(a + b) = sin a cos b + cos a sin b
    m[odd, even], m[odd, odd] = -s, c  # cos(a + b) = cos a cos b - sin a sin b
    return m.to(dtype)
