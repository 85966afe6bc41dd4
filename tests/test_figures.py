"""qkv.figures: one drawing, glued once per edition, its words from the catalog, its smallest text recorded."""

from __future__ import annotations

import io
import warnings

import myst_nb
import pytest
from i18n_tool import TOOL
from matplotlib.text import Text
from PIL import Image

from qkv import figures


def draw(_):
    fig, ax = figures.subplots(figsize=(4, 3))
    ax.plot([0, 1], [0, 1], label=_("weight"))
    ax.set_xlabel(_("query"), fontsize=12)
    ax.set_title("T", fontsize=7.2)  # the smallest text: 7.2 pt at 100 dpi is 10 px
    ax.legend()
    return fig


def glued(monkeypatch) -> dict:
    out = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=True: out.__setitem__(name, (value, display)))
    figures.glue("fig_demo", draw)
    return out


def test_each_edition_is_glued_under_its_key_and_only_the_english_one_shows_in_the_notebook(monkeypatch):
    out = glued(monkeypatch)
    assert sorted(out) == ["fig_demo", "fig_demo_zh_CN"]
    assert out["fig_demo"][1] is True and out["fig_demo_zh_CN"][1] is False
    assert out["fig_demo"][0].data != out["fig_demo_zh_CN"][0].data  # the Chinese words change the picture


def test_the_chinese_edition_draws_its_words_without_missing_glyphs():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warns "Glyph ... missing from font(s)"
        with figures.style("zh_CN"):
            fig = draw(figures.translator("zh_CN"))
            figures.render(fig)
    shown = {t.get_text() for t in fig.findobj(Text)}
    assert {"查询", "权重"} <= shown and "query" not in shown


def test_the_png_records_its_smallest_text_and_a_wide_figure_shrinks_it():
    with figures.style("en"):
        png, px = figures.render(draw(figures.translator("en")))
    assert px == pytest.approx(7.2 * 100 / 72)
    assert Image.open(io.BytesIO(png)).text[figures.TEXT_PX_KEY] == f"{px:.2f}"

    def wide(_):
        fig, ax = figures.subplots(figsize=(13.76, 3))  # about twice the 688 px column
        ax.set_title("T", fontsize=14.4)
        ax.tick_params(labelsize=20)
        return fig

    shown = figures.min_text_px(wide(figures.translator("en")))
    assert 9.0 < shown < 10.5  # 20 px halved by the column, not the 20 px of the PNG


def test_an_unknown_edition_fails_before_drawing():
    with pytest.raises(OSError):
        figures.translator("xx")


def test_a_diagram_glued_by_figures_glue_records_its_text_in_both_editions(monkeypatch):
    """The one line a diagram cell needs (`figures.glue(name, lambda _: diagrams.x(..., language=_.language))`):
    both editions glued as PNGs that record their smallest text, whatever IPython formatter pyplot installed."""
    import torch

    from qkv import diagrams

    keys = torch.tensor([[1.0, 0.0, 0.5, 1.0], [0.0, 1.0, 1.0, 0.0], [0.5, 0.5, 0.0, 1.0]])
    query = torch.tensor([1.0, 0.0, 1.0, 0.0])
    weights = torch.softmax(keys @ query, dim=-1)
    out = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=True: out.__setitem__(name, value))
    figures.glue("diagram_tailor", lambda _: diagrams.soft_lookup(query, keys, weights, language=_.language))
    assert sorted(out) == ["diagram_tailor", "diagram_tailor_zh_CN"]
    recorded = [float(Image.open(io.BytesIO(out[key].data)).text[figures.TEXT_PX_KEY]) for key in sorted(out)]
    assert min(recorded) >= 9, recorded
    assert out["diagram_tailor"].data != out["diagram_tailor_zh_CN"].data


def test_a_table_is_shown_once_per_edition_with_the_catalogs_words():
    html = figures.table_html(["heads", "N", "<d>"], [["previous", "1,024"], [3, "next"]], right=True)
    en, zh = html.split("</table>")[:2]
    assert en.count("<table") == 1 and 'lang="zh-CN"' not in en and "<th>heads</th>" in en
    assert 'lang="zh-CN"' in zh and "<th>头数</th>" in zh and "<td>前一个</td>" in zh and "<td>后一个</td>" in zh
    assert "<td>1,024</td>" in zh and "<td>3</td>" in zh and "<th>N</th>" in zh  # numbers and symbols as they are
    assert "<th>&lt;d&gt;</th>" in en and "qkv-right" in en
    assert "display: none" in html  # the style that shows each edition's copy on its own pages only


def test_the_header_literals_of_show_table_calls_go_into_the_catalog():
    source = 'figures.show_table(["heads", "N", f"x {y}", "d_k"], rows)\nshow_table(header, rows)'
    assert TOOL._table_headers(source) == ["heads"]
