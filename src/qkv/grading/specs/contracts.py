"""Calls that check a lab's stated return type before the grader compares values.

Each is an ``Item.call``: a top-level function that imports what it needs inside its body (its source is
sent into the sandbox, where ``qkv_grader`` is the sandbox's copy of the grader's sandbox side). It calls the
student's function and raises a ``TypeError`` carrying the message (``messages.WANT_*``) that says what the lab
asked for when the result has the wrong type or dtype, so the feedback names the broken promise instead of
a wrong value. The labs' visible self-checks make the same promises (``isinstance(x, float)``, a dtype).
"""

from __future__ import annotations


def python_float(function, *args, **kwargs):
    """The student's result, which must be a Python ``float`` (the lab says "use .item()")."""
    from qkv_grader.messages import WANT_PYTHON_FLOAT  # type: ignore[import-not-found]

    value = function(*args, **kwargs)
    if not isinstance(value, float):
        raise TypeError(WANT_PYTHON_FLOAT(got=type(value).__name__))
    return value


def bool_tensor(function, *args, **kwargs):
    """The student's result, which must be a boolean tensor (a mask)."""
    import torch
    from qkv_grader.messages import WANT_BOOL_MASK

    value = function(*args, **kwargs)
    if not isinstance(value, torch.Tensor) or value.dtype != torch.bool:
        got = str(value.dtype) if isinstance(value, torch.Tensor) else type(value).__name__
        raise TypeError(WANT_BOOL_MASK(got=got))
    return value


def float_tensor(function, *args, **kwargs):
    """The student's result, which must be a floating-point tensor."""
    import torch
    from qkv_grader.messages import WANT_FLOAT

    value = function(*args, **kwargs)
    if not isinstance(value, torch.Tensor) or not value.is_floating_point():
        got = str(value.dtype) if isinstance(value, torch.Tensor) else type(value).__name__
        raise TypeError(WANT_FLOAT(got=got))
    return value


def float32_tensor(function, *args, **kwargs):
    """The student's result, which must be a float32 tensor (the lab: compute in float64, convert at the end)."""
    import torch
    from qkv_grader.messages import WANT_FLOAT32

    value = function(*args, **kwargs)
    if not isinstance(value, torch.Tensor) or value.dtype != torch.float32:
        got = str(value.dtype) if isinstance(value, torch.Tensor) else type(value).__name__
        raise TypeError(WANT_FLOAT32(got=got))
    return value


def integer_tensor(function, *args, **kwargs):
    """The student's result, which must be an integer tensor (counts)."""
    import torch
    from qkv_grader.messages import WANT_INTEGER

    value = function(*args, **kwargs)
    if not isinstance(value, torch.Tensor) or value.is_floating_point() or value.is_complex():
        got = str(value.dtype) if isinstance(value, torch.Tensor) else type(value).__name__
        raise TypeError(WANT_INTEGER(got=got))
    return value
