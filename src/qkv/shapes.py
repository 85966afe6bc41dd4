"""The one place that checks arguments and words the errors.

Every public function validates its inputs through these helpers, so an error always names the
argument, what was expected and what was received (never a bare ``assert``, which ``python -O``
removes, and never a silent broadcast).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = ["require_tensor", "require", "shape_of", "require_same_device_dtype"]


def shape_of(x: torch.Tensor) -> tuple[int, ...]:
    """The shape as a plain tuple, for error messages: ``(2, 6, 7)`` rather than ``torch.Size([2, 6, 7])``."""
    return tuple(x.shape)


def require_tensor(name: str, x: object, *, min_dim: int = 0, floating: bool = False) -> torch.Tensor:
    """Return ``x`` if it is a tensor with at least ``min_dim`` dimensions, else raise.

    Raises ``TypeError`` for anything that is not a ``torch.Tensor`` (with the advice to use
    ``torch.as_tensor``) and ``ValueError`` for too few dimensions or a non-float dtype.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(
            f"{name} must be a torch.Tensor; got {type(x).__name__}. "
            f"Convert it first with torch.as_tensor({name})."
        )
    if x.dim() < min_dim:
        raise ValueError(f"{name} must have at least {min_dim} dimensions; got shape {shape_of(x)}")
    if floating and not x.is_floating_point():
        raise ValueError(f"{name} must have a floating-point dtype; got {x.dtype}")
    return x


def require(ok: bool, name: str, expected: str, got: object) -> None:
    """Raise ``ValueError("{name} must be {expected}; got {got}")`` unless ``ok``."""
    if not ok:
        if isinstance(got, torch.Tensor):
            got = f"shape {shape_of(got)}"
        raise ValueError(f"{name} must be {expected}; got {got}")


def require_same_device_dtype(names: Sequence[str], tensors: Sequence[torch.Tensor]) -> None:
    """All ``tensors`` must share one device and one dtype; the error lists each one's."""
    devices = {t.device for t in tensors}
    dtypes = {t.dtype for t in tensors}
    if len(devices) > 1 or len(dtypes) > 1:
        found = ", ".join(f"{n}: {t.dtype} on {t.device}" for n, t in zip(names, tensors))
        raise ValueError(f"{', '.join(names)} must share one dtype and one device; got {found}")
