"""The diagrams are drawn from the tensors they are given, in either edition, and nothing else.

Expected numbers come from the tensors themselves (formatted here, or recomputed with torch), never from the
drawing code; the Chinese labels come from the catalog, and the shipped CJK font must draw every one of them.
"""

from __future__ import annotations

import builtins
import math
import re
import warnings
from pathlib import Path

import matplotlib
import pytest
import torch
from fontTools.ttLib import TTFont
from i18n_tool import TOOL
from matplotlib.text import Text

import qkv
from qkv import diagrams, figures, i18n

ROOT = Path(__file__).resolve().parents[1]


CATALOG = i18n.load_catalog(i18n.catalog_path(ROOT, "zh_CN", TOOL.DIAGRAMS))


def texts(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(Text) if t.get_text()]


def tailor(seed: int):
    g = torch.Generator().manual_seed(seed)
    keys = torch.randint(0, 3, (5, 4), generator=g).float() / 2  # (S, d_k)
    query = torch.randint(0, 3, (4,), generator=g).float()  # (d_k,)
    return query, keys, torch.softmax(keys @ query, dim=-1)


def test_soft_lookup_prints_the_weights_it_is_given():
    query, keys, weights = tailor(0)
    shown = texts(diagrams.soft_lookup(query, keys, weights))
    for j, w in enumerate(weights.tolist()):
        assert f"$k_{j + 1}$:  {w:.2f}" in shown
    for x in keys.flatten().tolist() + query.tolist():
        assert f"{x:g}" in shown
    other = torch.softmax(torch.randn(5), dim=-1)
    assert texts(diagrams.soft_lookup(query, keys, other)) != shown  # a changed tensor changes the figure


def test_score_matrix_shows_the_weights_and_the_shapes():
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(3, 2, generator=g), torch.randn(5, 2, generator=g)  # L != S
    weights = torch.softmax(q @ k.T / math.sqrt(2), dim=-1)
    shown = texts(diagrams.score_matrix(q, k, weights))
    assert [s for s in shown if re.fullmatch(r"\d\.\d\d", s)] == [f"{w:.2f}" for w in weights.flatten().tolist()]
    assert "Q (3, 2)" in shown and "$K^T$ (2, 5)" in shown
    assert sum(s.startswith("Σ = ") for s in shown) == 3
    assert sum(s.startswith("$k_") for s in shown) == 5


def test_scaling_bars_are_the_softmax_before_and_after_the_division():
    scores = torch.tensor([4.0, -2.0, 9.0, 0.5])
    fig = diagrams.scaling(scores, 16)
    raw, scaled = fig.axes
    assert [b.get_height() for b in raw.patches] == pytest.approx(torch.softmax(scores, -1).tolist())
    assert [b.get_height() for b in scaled.patches] == pytest.approx(torch.softmax(scores / 4, -1).tolist())
    assert "divided by √d_k = 4" in texts(fig)


def test_multihead_draws_one_block_per_head_with_the_shapes():
    x = torch.randn(1, 4, 12)
    q_h = qkv.split_heads(x, 3)  # (1, 3, 4, 4)
    shown = texts(diagrams.multihead(x[0], q_h[0], qkv.merge_heads(q_h)[0]))
    assert [s for s in shown if s.startswith("head")] == ["head 1", "head 2", "head 3"]
    assert "q (4, 12)" in shown and "(3, 4, 4)" in shown


def test_tiles_show_each_querys_running_maximum_and_where_it_grew():
    scores = torch.tensor([[0.5, -1.0, 2.0, 1.0, 3.0, -4.0, 0.0], [4.0, 0.0, 0.0, 1.0, 0.0, 0.0, 5.0]])
    fig = diagrams.tiles(scores, 3)
    shown = texts(fig)
    maxima = torch.stack([b.amax(dim=1) for b in scores.split(3, dim=1)], 1)  # (L, tiles)
    running = torch.cummax(maxima, dim=1).values  # an independent route to m
    right = [t for t in fig.findobj(Text) if t.get_position()[0] > scores.shape[1] + 1.5]  # right of the tiles
    table = [t.get_text() for t in right if re.fullmatch(r"-?\d\.\d", t.get_text())]
    assert table == [f"{m:.1f}" for m in running.T.flatten().tolist()]  # tile by tile, query by query
    grown = [p for p in fig.axes[0].patches if p.get_facecolor()[:3] != (1.0, 1.0, 1.0) and p.get_width() == 1.6]
    assert len(grown) == int((running[:, 1:] > running[:, :-1]).sum()) == 2  # q_1 at tile 2, q_2 at tile 3
    assert [s for s in shown if s.startswith("tile")] == ["tile 1", "tile 2", "tile 3"]


def test_masks_rotations_convolution_and_block_follow_their_tensors():
    causal, local = qkv.causal_mask(5), qkv.local_mask(5, window=1)
    graph = torch.eye(5, dtype=torch.bool) | torch.eye(5, dtype=torch.bool).roll(1, 1)
    fig = diagrams.masks(causal, local, graph)
    for ax, m in zip(fig.axes, (causal, local, graph)):
        assert (ax.images[0].get_array() == m.double().numpy()).all()
    pe = qkv.sinusoidal_positional_encoding(6, 8)
    fig = diagrams.rotations(pe, [0, 3], range(6))
    tips = [p.get_path().vertices for p in fig.axes[0].patches[1:]]
    assert len(tips) == 6
    weights = torch.zeros(9, 36)
    for h, (di, dj) in enumerate((a, b) for a in (-1, 0, 1) for b in (-1, 0, 1)):
        weights[h, (2 + di) * 6 + 2 + dj] = 0.9  # head h looks at one neighbour of pixel (2, 2)
    shown = texts(diagrams.convolution(weights, 6, 2 * 6 + 2))
    assert shown.count("0.90") == 9 and len([s for s in shown if s.startswith("head")]) == 9
    x = torch.randn(2, 3, 8)
    shown = texts(diagrams.transformer_block(x, x, x, x[:, :1], x))
    assert shown.count("(2, 3, 8)") == 4 and "(2, 1, 8)" in shown


def test_a_diagram_reads_no_file(monkeypatch):
    query, keys, weights = tailor(2)
    diagrams.soft_lookup(query, keys, weights, language="zh_CN")  # the catalog and the font, once
    monkeypatch.setattr(builtins, "open", lambda *a, **k: pytest.fail(f"a diagram opened {a}"))
    fig = diagrams.soft_lookup(query, keys, weights, language="zh_CN")
    assert fig._repr_png_().startswith(b"\x89PNG")


def test_the_chinese_diagram_draws_every_label_in_chinese_without_missing_glyphs():
    query, keys, weights = tailor(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warns "Glyph ... missing from font(s)"
        fig = diagrams.soft_lookup(query, keys, weights, language="zh_CN")
        fig._repr_png_()
    shown = texts(fig)
    assert {"查询", "键", "注意力权重"} <= set(shown)
    assert not [s for s in shown if re.search(r"[A-Za-z]{3,}", s)]


def test_the_catalog_is_complete_compiled_and_drawn_by_the_shipped_font():
    labels = {str(m.id) for m in TOOL.diagrams_template() if m.id}
    translated = {str(m.id): str(m.string) for m in CATALOG if m.id and m.string and not m.fuzzy}
    assert labels == set(translated)
    assert TOOL.compiled_stale(TOOL.DIAGRAMS, TOOL.diagrams_mo()) == ""
    cmap = TTFont(figures.CJK_FONT).getBestCmap()
    latin = matplotlib.ft2font.FT2Font(matplotlib.font_manager.findfont("DejaVu Sans")).get_charmap()
    missing = {c for text in translated.values() for c in text if ord(c) not in cmap and ord(c) not in latin}
    assert not missing, f"run `tools/i18n.py diagrams`: the font lacks {sorted(missing)}"
