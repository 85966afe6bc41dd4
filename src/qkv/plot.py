"""Figures the chapters share. Imported on demand (``from qkv import plot``) so the core needs no matplotlib."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import torch

__all__ = ["attention_heatmap"]


def attention_heatmap(
    weights: torch.Tensor,
    ax: plt.Axes | None = None,
    *,
    query_labels: Sequence[str] | None = None,
    key_labels: Sequence[str] | None = None,
    title: str | None = None,
    cmap: str = "viridis",
    vmax: float | None = 1.0,
) -> plt.Axes:
    """Draw one ``(L, S)`` weight matrix: queries down the side, keys along the top, with a colour bar.

    Weights lie in [0, 1], so the colour scale is fixed to [0, 1] by default: maps drawn side by
    side are comparable. Pass ``vmax=None`` to stretch it to the data (for raw scores).
    """
    w = torch.as_tensor(weights).detach().to("cpu", torch.float32)
    if w.dim() != 2:
        raise ValueError(f"weights must be (L, S); got shape {tuple(w.shape)}")
    if ax is None:
        _, ax = plt.subplots(figsize=(0.45 * w.shape[1] + 1.8, 0.45 * w.shape[0] + 1.0))
    vmin = 0.0 if vmax is not None else None
    image = ax.imshow(w.numpy(), cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="weight" if vmax == 1.0 else "value")
    ax.set_xlabel("key position j")
    ax.set_ylabel("query position i")
    if key_labels is not None:
        ax.set_xticks(range(len(key_labels)), key_labels, rotation=90 if max(map(len, key_labels)) > 2 else 0)
    if query_labels is not None:
        ax.set_yticks(range(len(query_labels)), query_labels)
    if title:
        ax.set_title(title)
    return ax
