"""Calls that check a lab's stated return type before the grader compares values.

Each is an ``Item.call``: a top-level function that imports what it needs inside its body (its source is
sent into the sandbox). It calls the student's function and raises a ``TypeError`` that says what the lab
asked for when the result has the wrong type or dtype, so the feedback names the broken promise instead of
a wrong value. The labs' visible self-checks make the same promises (``isinstance(x, float)``, a dtype).
"""

from __future__ import annotations


def python_float(function, *args, **kwargs):
    """The student's result, which must be a Python ``float`` (the lab says "use .item()")."""
    value = function(*args, **kwargs)
    if not isinstance(value, float):
        raise TypeError(f"return a Python float (use .item()); got {type(value).__name__}")
    return value


def bool_tensor(function, *args, **kwargs):
    """The student's result, which must be a boolean tensor (a mask)."""
    import torch

    value = function(*args, **kwargs)
    if not isinstance(value, torch.Tensor) or value.dtype != torch.bool:
        got = value.dtype if isinstance(value, torch.Tensor) else type(value).__name__
        raise TypeError(f"a mask is a boolean tensor (dtype torch.bool); got {got}")
    return value


def float_tensor(function, *args, **kwargs):
    """The student's result, which must be a floating-point tensor."""
    import torch

    value = function(*args, **kwargs)
    if not isinstance(value, torch.Tensor) or not value.is_floating_point():
        got = value.dtype if isinstance(value, torch.Tensor) else type(value).__name__
        raise TypeError(f"return a float tensor (use .float()); got {got}")
    return value


def float32_tensor(function, *args, **kwargs):
    """The student's result, which must be a float32 tensor (the lab: compute in float64, convert at the end)."""
    import torch

    value = function(*args, **kwargs)
    if not isinstance(value, torch.Tensor) or value.dtype != torch.float32:
        got = value.dtype if isinstance(value, torch.Tensor) else type(value).__name__
        raise TypeError(f"return a float32 tensor (compute in float64, then .float()); got {got}")
    return value


def integer_tensor(function, *args, **kwargs):
    """The student's result, which must be an integer tensor (counts)."""
    import torch

    value = function(*args, **kwargs)
    if not isinstance(value, torch.Tensor) or value.is_floating_point() or value.is_complex():
        got = value.dtype if isinstance(value, torch.Tensor) else type(value).__name__
        raise TypeError(f"return an integer tensor of counts; got {got}")
    return value
