"""Comparing a student's results with the reference: float64 copies of the inputs, the reference's output as
plain arrays, and :func:`compare`, which says what is wrong in words a student can act on.

Layer: grader side, above ``messages`` (its words); imports numpy, torch, the standard library and ``messages``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .messages import (
    NOT_A_TENSOR,
    NOT_FINITE,
    THE_RESULT,
    VALUE_OF,
    WANT_ONE_GOT_TUPLE,
    WANT_TUPLE_GOT_N,
    WANT_TUPLE_GOT_ONE,
    WRONG_SHAPE,
    WRONG_VALUES,
    Msg,
)

__all__ = ["compare", "to_float64", "to_leaves"]


def to_float64(x: Any) -> Any:
    """Floating tensors (nested in tuples, lists, dicts) copied to float64; everything else unchanged."""
    if isinstance(x, torch.Tensor):
        return x.detach().to(torch.float64).clone() if x.is_floating_point() else x.clone()
    if isinstance(x, (tuple, list)):
        return type(x)(to_float64(v) for v in x)
    if isinstance(x, dict):
        return {k: to_float64(v) for k, v in x.items()}
    return x


def to_leaves(x: Any) -> Any:
    """The reference's output as nested lists of float64 numpy arrays (the form the sandbox sends back)."""
    if isinstance(x, torch.Tensor):
        return x.detach().to("cpu", torch.float64).numpy()
    if isinstance(x, np.ndarray):
        return x.astype(np.float64)
    if isinstance(x, (bool, int, float)):
        return np.asarray(float(x))
    if isinstance(x, (tuple, list)):
        return [to_leaves(v) for v in x]
    raise TypeError(f"a reference must return tensors, numbers or tuples of them; got {type(x).__name__}")


def _shape(a: np.ndarray) -> str:
    return "(" + ", ".join(str(n) for n in a.shape) + ("," if a.ndim == 1 else "") + ")"


def compare(got: Any, expected: Any, atol: float, rtol: float, where: Msg | None = None) -> Msg | None:
    """None when ``got`` matches ``expected`` (nested lists of float64 arrays), else a message for the student."""
    where = where or THE_RESULT()
    if isinstance(expected, list):
        if not isinstance(got, list):
            return WANT_TUPLE_GOT_ONE(where=where, count=len(expected))
        if len(got) != len(expected):
            return WANT_TUPLE_GOT_N(where=where, count=len(expected), got=len(got))
        for n, (g, e) in enumerate(zip(got, expected)):
            msg = compare(g, e, atol, rtol, VALUE_OF(n=n + 1, where=where))
            if msg:
                return msg
        return None
    if isinstance(got, list):
        return WANT_ONE_GOT_TUPLE(where=where, count=len(got))
    if not isinstance(got, np.ndarray):
        return NOT_A_TENSOR(where=where)
    if got.shape != expected.shape:
        return WRONG_SHAPE(where=where, got=_shape(got), expected=_shape(expected))
    fin_e, fin_g = np.isfinite(expected), np.isfinite(got)
    if (fin_e & ~fin_g).any():
        return NOT_FINITE(where=where)
    bad = ~np.isclose(got, expected, atol=atol, rtol=rtol, equal_nan=True)
    if bad.any():
        worst = float(np.nanmax(np.abs(np.where(bad, got - expected, 0.0))))
        return WRONG_VALUES(where=where, bad=int(bad.sum()), size=int(bad.size), largest=f"{worst:.3g}")
    return None
