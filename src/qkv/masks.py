"""Boolean attention masks. ``True`` means "may attend", as in PyTorch's ``scaled_dot_product_attention``.

Rows are query positions ``i``, columns key positions ``j``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .validate import require, require_int, require_tensor

__all__ = ["causal_mask", "graph_mask", "local_mask", "padding_mask"]

Device = torch.device | str | None


def causal_mask(L: int, S: int | None = None, *, device: Device = None) -> torch.Tensor:
    """Query ``i`` may attend to key ``j`` when ``j <= i``: no peeking at the future.

    Aligned top-left like ``is_causal=True`` in PyTorch's SDPA: with ``S > L`` the extra keys at
    the end are hidden from every query.

    Returns
    -------
    Tensor (L, S), bool; ``S`` defaults to ``L``.

    Examples
    --------
    >>> import qkv
    >>> qkv.causal_mask(3).int()
    tensor([[1, 0, 0],
            [1, 1, 0],
            [1, 1, 1]], dtype=torch.int32)
    """
    L = require_int("L", L)
    S = L if S is None else require_int("S", S)
    return torch.ones(L, S, dtype=torch.bool, device=device).tril()


def local_mask(L: int, window: int, *, device: Device = None) -> torch.Tensor:
    """Truncated (local) attention: query ``i`` sees key ``j`` when ``|i - j| <= window``.

    Each query sees at most ``2 * window + 1`` keys, so a sequence of length ``L`` needs about
    ``L * (2 * window + 1)`` scores instead of ``L**2``. The projections (the parameters) do not change.

    Returns
    -------
    Tensor (L, L), bool.

    Examples
    --------
    >>> import qkv
    >>> qkv.local_mask(4, window=1).int()
    tensor([[1, 1, 0, 0],
            [1, 1, 1, 0],
            [0, 1, 1, 1],
            [0, 0, 1, 1]], dtype=torch.int32)
    """
    L = require_int("L", L)
    require_int("window", window, minimum=0)
    pos = torch.arange(L, device=device)
    return (pos[:, None] - pos[None, :]).abs() <= window  # (L, L)


def padding_mask(
    lengths: torch.Tensor | Sequence[int], max_len: int | None = None, *, device: Device = None
) -> torch.Tensor:
    """Hide the padding at the end of each sequence in a batch: key ``j`` is allowed when ``j < lengths[b]``.

    Parameters
    ----------
    lengths : 1-D int Tensor or sequence of ints, (B,)
        The true length of each sequence.
    max_len : int, optional
        The padded length ``S``; default ``max(lengths)``.

    Returns
    -------
    Tensor (B, 1, 1, S), bool, which broadcasts over heads and query positions.

    Examples
    --------
    >>> import qkv
    >>> qkv.padding_mask([2, 3]).shape
    torch.Size([2, 1, 1, 3])
    """
    if not isinstance(lengths, torch.Tensor):
        lengths = torch.as_tensor(list(lengths), dtype=torch.long)
    require(lengths.dim() == 1 and lengths.numel() > 0, "lengths", "a non-empty 1-D sequence (B,)", lengths)
    require(
        not lengths.is_floating_point() and not lengths.dtype == torch.bool,
        "lengths",
        "integers",
        f"dtype {lengths.dtype}",
    )
    require(bool((lengths >= 0).all()), "lengths", "non-negative", lengths.tolist())
    longest = int(lengths.max())
    S = longest if max_len is None else require_int("max_len", max_len)
    require(longest <= S, "max_len", f">= the longest length {longest}", S)
    lengths = lengths.to(device if device is not None else lengths.device)
    keys = torch.arange(S, device=lengths.device)
    return (keys[None, :] < lengths[:, None])[:, None, None, :]  # (B, 1, 1, S)


def graph_mask(adjacency: torch.Tensor, self_loops: bool = True, *, device: Device = None) -> torch.Tensor:
    """Attention along a graph's edges: node ``i`` attends to node ``j`` when ``adjacency[i, j]`` is nonzero.

    With ``self_loops`` every node also attends to itself, so no node is left with no key.
    Attention restricted this way is neighbour aggregation, as in graph attention networks.

    Parameters
    ----------
    adjacency : Tensor (N, N)
        Any dtype; nonzero (or True) marks an edge i -> j.

    Returns
    -------
    Tensor (N, N), bool.
    """
    adjacency = require_tensor("adjacency", adjacency)
    require(adjacency.dim() == 2 and adjacency.shape[0] == adjacency.shape[1], "adjacency", "square (N, N)", adjacency)
    mask = adjacency != 0
    if self_loops:
        mask = mask | torch.eye(mask.shape[0], dtype=torch.bool, device=mask.device)
    return mask.to(device) if device is not None else mask
