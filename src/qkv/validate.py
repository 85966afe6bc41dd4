"""Argument checks for the whole library: the one place that words its errors.

Every public function validates its inputs here, so an error always names the argument, what was
expected and what was received (never a bare ``assert``, which ``python -O`` removes, and never a
silent broadcast). Booleans are refused where a count is expected (``True`` is an ``int`` in Python).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import NoReturn

import torch

__all__ = [
    "check_mask",
    "check_qkv",
    "require",
    "require_choice",
    "require_int",
    "require_same_device_dtype",
    "require_scale",
    "require_tensor",
    "shape_of",
]


def shape_of(x: torch.Tensor) -> tuple[int, ...]:
    """The shape as a plain tuple, for error messages: ``(2, 6, 7)`` rather than ``torch.Size([2, 6, 7])``."""
    return tuple(x.shape)


def require(ok: bool, name: str, expected: str, got: object) -> None:
    """Raise ``ValueError("{name} must be {expected}; got {got}")`` unless ``ok``; a tensor is shown by its shape."""
    if not ok:
        _fail(name, expected, got)


def _fail(name: str, expected: str, got: object) -> NoReturn:
    if isinstance(got, torch.Tensor):
        got = f"shape {shape_of(got)}"
    raise ValueError(f"{name} must be {expected}; got {got}")


def require_tensor(
    name: str, x: object, *, min_dim: int = 0, floating: bool = False, form: str | None = None
) -> torch.Tensor:
    """Return ``x`` if it is a tensor with at least ``min_dim`` dimensions, else raise.

    Raises ``TypeError`` for anything that is not a ``torch.Tensor`` (with the advice to use
    ``torch.as_tensor``) and ``ValueError`` for too few dimensions or a non-float dtype. ``form``, the
    shape the argument takes (``"(..., L, d_k)"``), is added to the message about dimensions.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(
            f"{name} must be a torch.Tensor; got {type(x).__name__}. Convert it first with torch.as_tensor({name})."
        )
    if x.dim() < min_dim:
        plural = "" if min_dim == 1 else "s"
        hint = f" ({name} is {form})" if form else ""
        raise ValueError(f"{name} must have at least {min_dim} dimension{plural}; got shape {shape_of(x)}{hint}")
    if floating and not x.is_floating_point():
        raise ValueError(f"{name} must have a floating-point dtype; got {x.dtype}")
    return x


def require_int(name: str, n: object, *, minimum: int | None = 1) -> int:
    """Return ``n`` if it is an ``int`` (not a ``bool``) of at least ``minimum`` (``None``: any), else raise ``ValueError``."""
    expected = "an int" if minimum is None else "a positive int" if minimum == 1 else f"an int >= {minimum}"
    if isinstance(n, int) and not isinstance(n, bool) and (minimum is None or n >= minimum):
        return int(n)
    _fail(name, expected, repr(n))


def require_scale(scale: object) -> float:
    """Return ``scale`` as a float if it is a finite real number (not a bool), else raise ``ValueError``."""
    ok = isinstance(scale, numbers.Real) and not isinstance(scale, bool) and math.isfinite(scale)
    require(ok, "scale", "a finite number or None (1 / sqrt(d_k))", repr(scale))
    return float(scale)  # type: ignore[arg-type]


def require_choice(name: str, value: object, choices: Sequence[str]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise ``ValueError`` listing them."""
    if value not in choices:
        *rest, last = [repr(c) for c in choices]
        _fail(name, f"{', '.join(rest)} or {last}" if rest else last, repr(value))
    return value  # type: ignore[return-value]


def require_same_device_dtype(names: Sequence[str], tensors: Sequence[torch.Tensor]) -> None:
    """All ``tensors`` must share one device and one dtype; the error lists each one's."""
    if len({t.device for t in tensors}) > 1 or len({t.dtype for t in tensors}) > 1:
        found = ", ".join(f"{n}: {t.dtype} on {t.device}" for n, t in zip(names, tensors))
        raise ValueError(f"{', '.join(names)} must share one dtype and one device; got {found}")


def check_mask(mask: object, target: tuple[int, ...], *, name: str = "mask") -> torch.Tensor:
    """Check that ``mask`` is boolean (True = may attend) and broadcasts to ``target`` without enlarging it."""
    mask = require_tensor(name, mask)
    require(mask.dtype == torch.bool, name, "a boolean tensor (True = may attend)", f"dtype {mask.dtype}")
    try:
        ok = torch.broadcast_shapes(mask.shape, target) == torch.Size(target)
    except RuntimeError:
        ok = False
    require(ok and mask.dim() <= len(target), name, f"broadcastable to {target}", mask)
    return mask


def check_qkv(q: object, k: object, v: object) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Queries ``(..., L, d_k)``, keys ``(..., S, d_k)``, values ``(..., S, d_v)``: same leading dims, dtype, device.

    Leading (batch) dims are never broadcast: a key of shape ``(1, S, d_k)`` beside a query of shape
    ``(2, L, d_k)`` is an error, not a key shared by the batch. Any size may be 0.
    """
    q = require_tensor("query", q, min_dim=2, floating=True, form="(..., L, d_k); one query is query.unsqueeze(-2)")
    k = require_tensor("key", k, min_dim=2, floating=True, form="(..., S, d_k)")
    v = require_tensor("value", v, min_dim=2, floating=True, form="(..., S, d_v)")
    require_same_device_dtype(("query", "key", "value"), (q, k, v))
    batch, d_k = q.shape[:-2], q.shape[-1]
    # The messages are formatted only on failure: this runs on every attention call (about 15 us saved each).
    if not (k.dim() == q.dim() and k.shape[:-2] == batch and k.shape[-1] == d_k):
        _fail(
            "key",
            f"(..., S, d_k) with leading dims {tuple(batch)} and d_k={d_k} like query {shape_of(q)} "
            "(batch dims are not broadcast: expand them first)",
            k,
        )
    if not (v.dim() == k.dim() and v.shape[:-1] == k.shape[:-1]):
        _fail("value", f"(..., S, d_v) with (..., S) = {shape_of(k)[:-1]} like key {shape_of(k)}", v)
    return q, k, v
