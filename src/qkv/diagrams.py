"""Conceptual diagrams drawn from the tensors a page computes, so that a picture cannot disagree with the code.

Each function takes the very tensors (and modules) the chapter works with and returns a matplotlib ``Figure``
(not attached to pyplot: nothing is shown until the page glues or displays it). Every word in a diagram goes
through :func:`_` and the catalog ``locales/zh_CN/LC_MESSAGES/diagrams.po``, compiled into the package
(``tools/i18n.py diagrams``); ``language="zh_CN"`` draws it in Chinese with the Noto Sans CJK SC subset shipped in
``qkv/fonts`` (only the characters the catalog uses, OFL 1.1). Imported on demand: the core needs no matplotlib.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import matplotlib
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, Rectangle

if TYPE_CHECKING:
    from matplotlib.typing import ColorType

from .figures import EDITIONS, glue_key, render, style, translator

__all__ = ["EDITIONS", "Diagram", "convolution", "glue_key", "masks", "multihead", "projections", "rotations"]
__all__ += ["scaling", "score_matrix", "soft_lookup", "tiles", "transformer_block"]

CMAP, CIVIDIS, INK, MUTED = matplotlib.colormaps["viridis"], matplotlib.colormaps["cividis"], "#222222", "#555555"


class Diagram(Figure):
    """A figure that shows itself as a PNG wherever IPython displays it (glue, a cell's result), with or without
    pyplot's inline backend."""

    def _repr_png_(self) -> bytes:
        return render(self)[0]


def _(text: str, language: str) -> str:
    """A diagram's label in the given edition's language, from the compiled catalog."""
    return translator(language)(text)  # never mixed with $math$: mathtext has no CJK fallback


def _draws(draw):
    """Run a drawing function with the book's style and, for a CJK edition, the course's CJK font as fallback."""

    @functools.wraps(draw)
    def wrapper(*args, language: str = "en", **kwargs) -> Figure:
        translator(language)  # an unknown edition fails here, before any drawing
        with style(language, **{"font.size": 11}):
            return draw(*args, language=language, **kwargs)

    return wrapper


def _np(t: torch.Tensor):
    return torch.as_tensor(t).detach().to("cpu", torch.float64).numpy()


def _grid(ax, values, x: float, y: float, *, numbers=False, cmap=CMAP, fmt="{:.2f}", limits=None, size=None):
    """A matrix as coloured unit squares with its top-left corner at (x, y); optionally its numbers. The colours
    span ``limits`` (low, high), by default the matrix's own range."""
    a = _np(values)
    a = a[None] if a.ndim == 1 else a
    lo, hi = limits or (float(a.min()), float(a.max()))
    for r in range(a.shape[0]):
        for c in range(a.shape[1]):
            shade = 0.5 if hi == lo else (a[r, c] - lo) / (hi - lo)
            ax.add_patch(Rectangle((x + c, y - r - 1), 1, 1, facecolor=cmap(shade), edgecolor="white", lw=1))
            if numbers:
                colour = "white" if shade < 0.55 else INK
                ax.text(
                    x + c + 0.5, y - r - 0.5, fmt.format(a[r, c]), ha="center", va="center", color=colour, size=size
                )
    return a.shape


def _arrow(ax, start, end, width=1.5, colour=INK):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=12, lw=width, color=colour))


def _canvas(width: float, xlim, ylim) -> tuple[Figure, Axes]:
    """An axes-free drawing in data units, as wide as ``width`` inches and as tall as the limits make it."""
    fig = Diagram(figsize=(width, width * (ylim[1] - ylim[0]) / (xlim[1] - xlim[0]) + 0.2), layout="constrained")
    ax = fig.add_subplot(xlim=xlim, ylim=ylim, aspect="equal")
    ax.axis("off")
    return fig, ax


@_draws
def soft_lookup(query: torch.Tensor, keys: torch.Tensor, weights: torch.Tensor, *, language):
    """The query meets each key; an arrow's width and label are that key's weight. query (d_k,), keys (S, d_k),
    weights (S,)."""
    S, d_k = keys.shape
    fig, ax = _canvas(7.0, (-0.5, 2 * d_k + 11.5), (-0.9 * S - 0.2, 1.3))
    mid = -0.9 * (S - 1) / 2 - 0.5
    _grid(ax, query, 0, mid + 0.5, numbers=True, fmt="{:g}")
    ax.text(d_k / 2, mid + 0.8, _("query", language), ha="center", va="bottom")
    ax.text(d_k + 6.6 + d_k / 2, 0.2, _("keys", language), ha="center", va="bottom")
    ax.text(2 * d_k + 6.9, 0.2, _("weights", language), va="bottom")
    w = _np(weights)
    for j in range(S):
        y = -0.9 * j
        _grid(ax, keys[j], d_k + 6.6, y, numbers=True, fmt="{:g}")
        ax.text(2 * d_k + 6.9, y - 0.5, f"$k_{j + 1}$:  {w[j]:.2f}", va="center")
        _arrow(ax, (d_k + 0.2, mid), (d_k + 6.4, y - 0.5), width=0.5 + 6 * w[j], colour=CMAP(0.2 + 0.6 * w[j]))
    return fig


@_draws
def projections(x: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, language):
    """X (L, d_model) times three matrices gives Q, K (L, d_k) and V (L, d_v), coloured by their values."""
    L, d_model = x.shape
    width = d_model + q.shape[1] + k.shape[1] + v.shape[1] + 12
    fig, ax = _canvas(7.2, (-0.5, width), (-L - 1.6, 1.8))
    _grid(ax, x, 0, 0)
    ax.text(d_model / 2, 0.3, "X", ha="center", va="bottom", fontsize=13)
    ax.text(d_model / 2, -L - 0.3, str(tuple(x.shape)), ha="center", va="top", color=MUTED)
    left = d_model + 3.5
    _arrow(ax, (d_model + 0.3, -L / 2), (d_model + 2.7, -L / 2), 1.5)
    for name, t in (("Q", q), ("K", k), ("V", v)):
        _grid(ax, t, left, 0)
        ax.text(left + t.shape[1] / 2, 0.3, f"${name} = XW^{name}$", ha="center", va="bottom", fontsize=12)
        ax.text(left + t.shape[1] / 2, -L - 0.3, str(tuple(t.shape)), ha="center", va="top", color=MUTED)
        left += t.shape[1] + 3.5
    ax.text(0, -L - 1.5, _("rows: tokens; columns: features", language), va="center", color=MUTED)
    return fig


@_draws
def score_matrix(q: torch.Tensor, k: torch.Tensor, weights: torch.Tensor, *, language):
    """Queries as rows, keys as columns, the (L, S) weights between them; softmax runs along each row."""
    L, d_k = q.shape
    S = k.shape[0]
    fig, ax = _canvas(6.4, (-d_k - 2, S + 5.5), (-L - 1.6, d_k + 1.4))
    _grid(ax, k.T, 0, d_k)  # K^T on top: one column per key
    _grid(ax, q, -d_k - 0.5, 0)  # Q on the left: one row per query
    _grid(ax, weights, 0, 0, numbers=True)
    for j in range(S):
        ax.text(j + 0.5, d_k + 0.2, f"$k_{j + 1}$", ha="center", va="bottom")
    for i in range(L):
        ax.text(-d_k - 0.7, -i - 0.5, f"$q_{i + 1}$", ha="right", va="center")
        ax.text(S + 0.3, -i - 0.5, f"Σ = {_np(weights[i]).sum():.0f}", va="center", color=MUTED)
    _arrow(ax, (0.1, -L - 0.5), (S - 0.1, -L - 0.5))
    ax.text(S / 2, -L - 0.8, _("softmax along each row", language), ha="center", va="top")
    ax.text(-d_k / 2 - 0.5, 0.2, "Q " + str(tuple(q.shape)), ha="center", va="bottom", color=MUTED)
    ax.text(S + 0.3, d_k / 2, "$K^T$ " + str(tuple(k.T.shape)), va="center", color=MUTED)
    return fig


@_draws
def scaling(scores: torch.Tensor, d_k: int, *, language):
    """One query's raw scores (S,): its softmax weights before and after dividing by sqrt(d_k)."""
    s = _np(scores)
    fig = Diagram(figsize=(7.0, 2.9), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    for ax, c, title in ((axes[0], 1.0, _("raw scores", language)), (axes[1], 1 / math.sqrt(d_k), None)):
        w = torch.softmax(torch.as_tensor(s * c), dim=-1).numpy()
        bars = ax.bar(range(1, len(s) + 1), w, color=CMAP(0.25 + 0.5 * w / w.max()))
        ax.bar_label(bars, [f"{x:.2f}" for x in w], fontsize=9)
        ax.set_title(title or _("divided by √d_k = {root:g}", language).format(root=math.sqrt(d_k)))
        ax.set_xlabel(_("key j", language))
        ax.set_xticks(range(1, len(s) + 1))
        ax.set_ylim(0, 1.12)
    axes[0].set_ylabel(_("weight", language))
    return fig


@_draws
def multihead(q: torch.Tensor, q_heads: torch.Tensor, merged: torch.Tensor, *, language):
    """Split and merge: q (L, d_model) cut into H blocks of d_k columns, q_heads (H, L, d_k), merged (L, d_model)."""
    H, L, d_k = q_heads.shape
    d_model = q.shape[1]
    colours = [matplotlib.colormaps["plasma"](0.1 + 0.75 * h / max(H - 1, 1)) for h in range(H)]
    width = 2 * d_model + H * (d_k + 1) + 8
    fig, ax = _canvas(7.4, (-0.5, width), (-L - 1.8, 1.6))
    _grid(ax, q, 0, 0)
    _grid(ax, merged, width - d_model - 0.5, 0)
    for h in range(H):  # the head's block of columns, framed in the head's colour, before and after
        for left in (h * d_k, width - d_model - 0.5 + h * d_k):
            ax.add_patch(Rectangle((left, -L), d_k, L, fill=False, edgecolor=colours[h], lw=3))
        left = d_model + 4 + h * (d_k + 1)
        _grid(ax, q_heads[h], left, 0)
        ax.add_patch(Rectangle((left, -L), d_k, L, fill=False, edgecolor=colours[h], lw=3))
        ax.text(left + d_k / 2, 0.2, _("head {h}", language).format(h=h + 1), ha="center", va="bottom", fontsize=9)
    ax.text(d_model / 2, 0.2, "q " + str(tuple(q.shape)), ha="center", va="bottom")
    ax.text(width - d_model / 2 - 0.5, 0.2, str(tuple(merged.shape)), ha="center", va="bottom")
    heads_mid = d_model + 4 + (H * (d_k + 1) - 1) / 2
    ax.text(heads_mid, -L - 0.3, str(tuple(q_heads.shape)), ha="center", va="top", color=MUTED)
    _arrow(ax, (d_model + 0.3, -L / 2), (d_model + 3.7, -L / 2))
    _arrow(ax, (width - d_model - 4.2, -L / 2), (width - d_model - 0.8, -L / 2))
    ax.text(d_model + 2, -L - 1.2, _("split", language), ha="center")
    ax.text(width - d_model - 2.5, -L - 1.2, _("merge", language), ha="center")
    return fig


@_draws
def rotations(pe: torch.Tensor, pairs: Sequence[int], positions: Sequence[int], *, language):
    """Each pair of columns (2i, 2i+1) of the encoding pe (P, d) is a point on a circle that turns as p grows."""
    fig = Diagram(figsize=(7.2, 2.9), layout="constrained")
    axes = fig.subplots(1, len(pairs))
    table = _np(pe)
    for ax, i in zip(axes, pairs):
        ax.add_patch(matplotlib.patches.Circle((0, 0), 1, fill=False, color="0.75"))
        shown = None  # the angle of the last labelled arrow: labels closer than 0.3 rad would overlap
        for n, p in enumerate(positions):
            s, c = table[p, 2 * i], table[p, 2 * i + 1]
            colour = CMAP(n / max(len(positions) - 1, 1) * 0.85)
            _arrow(ax, (0, 0), (c, s), 1.4, colour)
            angle = math.atan2(s, c)
            if shown is None or abs(math.remainder(angle - shown, 2 * math.pi)) > 0.3:
                ax.text(1.18 * c, 1.18 * s, f"{p}", ha="center", va="center", color=colour, fontsize=9)
                shown = angle
        ax.set(xlim=(-1.35, 1.35), ylim=(-1.35, 1.35), aspect="equal", xticks=[], yticks=[])
        ax.set_title(_("columns {a} and {b}", language).format(a=2 * i, b=2 * i + 1), fontsize=10)
    fig.suptitle(_("position p as an angle: each pair turns at its own speed", language), fontsize=11)
    return fig


@_draws
def masks(causal: torch.Tensor, local: torch.Tensor, graph: torch.Tensor, *, language):
    """Three boolean (L, S) masks side by side: a filled square where query i may attend to key j."""
    fig = Diagram(figsize=(7.2, 2.9), layout="constrained")
    axes = fig.subplots(1, 3)
    titles = (_("causal", language), _("local", language), _("graph", language))
    shades: list[ColorType] = ["#f0f0f0", CMAP(0.3)]  # blocked, allowed
    for ax, title, m in zip(axes, titles, (causal, local, graph)):
        ax.imshow(_np(m), cmap=matplotlib.colors.ListedColormap(shades), vmin=0, vmax=1)
        ax.set_title(title)
        ax.set_xlabel(_("key j", language))
        L, S = m.shape
        ax.set_xticks(range(S), [str(j) for j in range(S)], fontsize=9)  # 0-based, as the graph's nodes
        ax.set_yticks(range(L), [str(i) for i in range(L)], fontsize=9)
    axes[0].set_ylabel(_("query i", language))
    return fig


@_draws
def convolution(weights: torch.Tensor, width: int, query: int, *, language):
    """A 3x3 convolution as attention: the weights (H, S) of one query pixel, one head per neighbour, on a grid
    ``width`` pixels wide; each head's arrow goes to the key it attends to, labelled with head and weight."""
    H = weights.shape[0]
    r0, c0 = divmod(query, width)
    fig, ax = _canvas(4.6, (c0 - 2.6, c0 + 2.6), (-r0 - 2.6, -r0 + 2.9))
    for r in range(r0 - 2, r0 + 3):
        for c in range(c0 - 2, c0 + 3):
            ax.add_patch(Rectangle((c - 0.5, -r - 0.5), 1, 1, facecolor="#f4f4f4", edgecolor="white", lw=2))
    ax.add_patch(Rectangle((c0 - 0.5, -r0 - 0.5), 1, 1, facecolor=CMAP(0.85)))
    for h in range(H):
        top = int(weights[h].argmax())
        r, c = divmod(top, width)
        w = float(weights[h, top])
        if (r, c) != (r0, c0):
            start, end = (c0 + 0.3 * (c - c0), -r0 - 0.3 * (r - r0)), (c0 + 0.62 * (c - c0), -r0 - 0.62 * (r - r0))
            _arrow(ax, start, end, 0.5 + 2 * w, CMAP(0.3))
        ax.text(c, -r + 0.18, _("head {h}", language).format(h=h + 1), ha="center", va="center", fontsize=9)
        ax.text(c, -r - 0.22, f"{w:.2f}", ha="center", va="center", fontsize=9, color=MUTED)
    ax.text(c0, -r0 + 2.7, _("one query pixel, one head per neighbour", language), ha="center", va="center")
    return fig


@_draws
def transformer_block(x, attn_out, h, ff_out, out, *, language):
    """The pre-norm encoder block from bottom to top, each box with the shape of the tensor the page computed
    there: x, the attention sublayer's output, h = x + attn_out, the feed-forward's output, out = h + ff_out."""
    stages = [
        (_("input x", language), x),
        (_("layer norm, then multi-head attention", language), attn_out),
        ("+", h),
        (_("layer norm, then feed-forward", language), ff_out),
        ("+", out),
    ]
    fig, ax = _canvas(5.6, (-4.6, 5.0), (-0.6, 1.5 * len(stages) - 0.4))
    for i, (label, t) in enumerate(stages):
        y, residual = 1.5 * i, label == "+"
        w = 0.45 if residual else 3.0
        colour = CMAP(0.75) if residual else (CMAP(0.45) if i else "#e8e8e8")
        ax.add_patch(Rectangle((-w, y - 0.4), 2 * w, 0.8, facecolor=colour, edgecolor=INK, lw=0.8))
        ax.text(0, y, label, ha="center", va="center", color="white" if i and not residual else INK)
        ax.text(w + 0.15, y, str(tuple(t.shape)), va="center", fontsize=9, color=MUTED)
        if i:
            _arrow(ax, (0, y - 1.1), (0, y - 0.42), 1)
        if residual:  # the skip connection around the sublayer below
            ax.plot([0, -3.6, -3.6], [y - 2.25, y - 2.25, y], color=MUTED, lw=1)
            _arrow(ax, (-3.6, y), (-0.47, y), 1, MUTED)
    ax.text(-3.75, 1.9, _("residual", language), ha="right", va="center", rotation=90, color=MUTED, fontsize=9)
    return fig


@_draws
def tiles(scores: torch.Tensor, block_size: int, *, language):
    """Scores (L, S) visited one tile of ``block_size`` keys at a time, and each query's running maximum m after
    each tile, shaded where it grew: there the sum so far is rescaled by exp(m_old - m_new) < 1."""
    s = _np(scores)
    L, S = s.shape
    starts = range(0, S, block_size)
    x_m = S + 0.4 * (len(starts) - 1) + 2.2  # where the table of running maxima starts
    fig, ax = _canvas(7.2, (-1.2, x_m + 1.7 * len(starts)), (-L - 1.4, 1.3))
    m_old, left = torch.full((L,), -math.inf, dtype=torch.float64), 0.0
    for b, start in enumerate(starts):
        block = s[:, start : start + block_size]
        _grid(ax, block, left, 0, numbers=True, cmap=CIVIDIS, fmt="{:.1f}", limits=(s.min(), s.max()), size=8)
        ax.add_patch(Rectangle((left, -L), block.shape[1], L, fill=False, edgecolor=INK, lw=1.5))
        ax.text(left + block.shape[1] / 2, 0.15, _("tile {b}", language).format(b=b + 1), ha="center", va="bottom")
        m_new = torch.maximum(m_old, torch.as_tensor(block.max(axis=1)))
        for i in range(L):
            grew = bool(m_new[i] > m_old[i]) and b > 0
            shade = CMAP(0.75) if grew else "white"
            ax.add_patch(Rectangle((x_m + 1.7 * b, -i - 1), 1.6, 1, facecolor=shade, edgecolor="0.8"))
            ax.text(x_m + 1.7 * b + 0.8, -i - 0.5, f"{m_new[i]:.1f}", ha="center", va="center")
        ax.text(x_m + 1.7 * b + 0.8, 0.15, str(b + 1), ha="center", va="bottom", color=MUTED)
        m_old, left = m_new, left + block.shape[1] + 0.4
    for i in range(L):
        ax.text(-0.2, -i - 0.5, f"$q_{i + 1}$", ha="right", va="center")
    ax.text(x_m, 0.9, _("running max m after each tile", language), va="bottom")
    ax.text(x_m, -L - 0.3, _("shaded: m grew, the sum so far is rescaled", language), va="top", color=MUTED, fontsize=9)
    return fig
