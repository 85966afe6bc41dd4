"""Choosing a device: the only place in the library that does."""

from __future__ import annotations

import torch

__all__ = ["default_device"]


def default_device() -> torch.device:
    """The best device here: CUDA if present, else Apple's MPS, else the CPU.

    Every notebook calls this once, so the same page runs on a laptop and on a GPU. Library
    functions never call it: they take device and dtype from their inputs.

    Examples
    --------
    >>> import qkv
    >>> qkv.default_device().type in {"cuda", "mps", "cpu"}
    True
    """
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")
