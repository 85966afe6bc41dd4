"""Toy sequence tasks the chapters and labs train on: generated on the fly, never downloaded."""

from __future__ import annotations

import torch

from .validate import require_int

__all__ = ["reversal_batch", "sorting_batch"]


def _tokens(batch_size: int, seq_len: int, vocab_size: int, generator: torch.Generator | None) -> torch.Tensor:
    for name, n in (("batch_size", batch_size), ("seq_len", seq_len), ("vocab_size", vocab_size)):
        require_int(name, n)
    return torch.randint(vocab_size, (batch_size, seq_len), generator=generator)  # (B, L)


def reversal_batch(batch_size: int, seq_len: int, vocab_size: int, *, generator: torch.Generator | None = None):
    """Random token sequences ``x`` (B, L) and their reversals ``y`` (B, L): ``y[:, i] = x[:, L - 1 - i]``.

    Output ``i`` must find input ``L - 1 - i``: a task that needs position, not content.

    Examples
    --------
    >>> import torch, qkv
    >>> x, y = qkv.reversal_batch(2, 4, vocab_size=10, generator=torch.Generator().manual_seed(0))
    >>> bool((y == x.flip(-1)).all()), x.shape
    (True, torch.Size([2, 4]))
    """
    x = _tokens(batch_size, seq_len, vocab_size, generator)
    return x, x.flip(-1)


def sorting_batch(batch_size: int, seq_len: int, vocab_size: int, *, generator: torch.Generator | None = None):
    """Random token sequences ``x`` (B, L) and the same tokens sorted ascending ``y`` (B, L).

    Output ``i`` must compare every input with every other: a task that needs content.

    Examples
    --------
    >>> import torch, qkv
    >>> x, y = qkv.sorting_batch(1, 5, vocab_size=10, generator=torch.Generator().manual_seed(0))
    >>> bool((y[:, 1:] >= y[:, :-1]).all()), sorted(x[0].tolist()) == y[0].tolist()
    (True, True)
    """
    x = _tokens(batch_size, seq_len, vocab_size, generator)
    return x, x.sort(dim=-1).values
