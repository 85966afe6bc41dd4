"""The Chinese edition's figures are drawn in Chinese, and none shows a box for a missing character.

- In the built book (`make book`: English in `_build/html`, Chinese in `_build/html/zh`), the figures of each
  chapter are paired in page order; at least 80 % of the Chinese chapters' figures must differ from their English
  counterparts (issue 22: before, all 25 were byte-identical).
- A Chinese label that no font draws: `qkv.figures.glue` raises (so the notebook, and the build, stop), and the
  Chinese build (`tools/i18n.py build`) fails on any "Glyph ... missing from font(s)" that an executed notebook
  printed, hidden cells included; the same scan runs here over both editions' executed notebooks.
"""

from __future__ import annotations

import hashlib
import re
import sys
import warnings
from html.parser import HTMLParser
from pathlib import Path

import matplotlib
import myst_nb
import pytest
from fontTools.ttLib import TTFont
from i18n_tool import TOOL

from qkv import figures

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "_build"
HTML = BUILD / "html"
MIN_SHARE = 0.8
PLANTED = "龘"  # U+9F98: in no GB 2312 level and in no label, so neither DejaVu Sans nor the course's subset draws it


class _Figures(HTMLParser):
    """The images a page's article shows from notebook outputs and glue (`_images/...` or inline PNG data)."""

    def __init__(self) -> None:
        super().__init__()
        self.sources: list[str] = []
        self._depth = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "article":
            self._depth += 1
        src = attrs.get("src") or ""
        if tag == "img" and self._depth and ("_images/" in src or src.startswith("data:image/")):
            self.sources.append(src)

    def handle_endtag(self, tag):
        if tag == "article":
            self._depth -= 1


def figure_hashes(page: Path) -> list[str]:
    parser = _Figures()
    parser.feed(page.read_text(encoding="utf-8"))
    out = []
    for src in parser.sources:
        if src.startswith("data:"):
            data = src.split(",", 1)[1].encode()
        else:
            data = (page.parent / src.split("?")[0]).resolve().read_bytes()
        out.append(hashlib.sha256(data).hexdigest())
    return out


def chapters() -> list[str]:
    sys.path.insert(0, str(ROOT / "tests" / "browser"))
    from test_book_pages import toc_pages

    return [p for p in toc_pages() if p.startswith("chapters/")]


@pytest.fixture(scope="module")
def built():
    if not (HTML / "zh" / "index.html").is_file():
        pytest.fail(f"No Chinese edition at {HTML / 'zh'}: run `make book` first (make test does).", pytrace=False)


def test_most_chinese_chapter_figures_differ_from_the_english_ones(built):
    total = differ = 0
    lines, problems = [], []
    for page in chapters():
        english, chinese = figure_hashes(HTML / f"{page}.html"), figure_hashes(HTML / "zh" / f"{page}.html")
        if len(english) != len(chinese):
            problems.append(f"{page}: {len(english)} figures in English, {len(chinese)} in Chinese")
            continue
        changed = sum(e != c for e, c in zip(english, chinese))
        total, differ = total + len(chinese), differ + changed
        if english:
            lines.append(f"{page}: {changed} of {len(chinese)} drawn in Chinese")
    assert not problems, problems
    assert total, "no figure in any chapter"
    assert differ >= MIN_SHARE * total, (
        f"{differ} of {total} Chinese figures ({differ / total:.0%}) differ from the English; "
        f"at least {MIN_SHARE:.0%}:\n  " + "\n  ".join(lines)
    )


@pytest.mark.parametrize("edition", ["jupyter_execute", "zh/jupyter_execute"])
def test_no_executed_notebook_printed_a_missing_glyph(built, edition):
    executed = BUILD / edition
    assert list(executed.rglob("*.ipynb")), f"no executed notebooks in {executed}"
    missing = TOOL.missing_glyphs(executed)
    assert not missing, "\n".join(missing)


def test_the_planted_character_is_outside_every_font_of_the_figures():
    latin = matplotlib.ft2font.FT2Font(matplotlib.font_manager.findfont("DejaVu Sans")).get_charmap()
    assert ord(PLANTED) not in latin and ord(PLANTED) not in TTFont(figures.CJK_FONT).getBestCmap()


def test_a_label_with_a_character_outside_the_font_stops_the_page(monkeypatch):
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=True: None)

    def draw(_):
        fig, ax = figures.subplots(figsize=(4, 3))
        ax.set_title(_("weight") + PLANTED)
        return fig

    with pytest.raises(UserWarning, match="missing from font"):
        figures.glue("fig_planted", draw)


def test_the_build_check_finds_matplotlibs_warning_in_an_executed_notebook(tmp_path):
    """The scan reads what matplotlib really prints: draw the planted character, keep the warning's text as a
    notebook's stderr output, as the kernel would; an output without it passes."""
    import nbformat

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig, ax = figures.subplots(figsize=(3, 2))
        ax.set_title(f"温度{PLANTED}")
        figures.render(fig)
    printed = "".join(f"/x.py:1: UserWarning: {w.message}\n" for w in caught)
    assert "missing from font" in printed
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("plt.title('ok')", outputs=[nbformat.v4.new_output("stream", text="fine\n")]),
        nbformat.v4.new_code_cell("draw()", outputs=[nbformat.v4.new_output("stream", name="stderr", text=printed)]),
    ]
    (tmp_path / "chapters").mkdir()
    nbformat.write(notebook, tmp_path / "chapters" / "planted.ipynb")
    found = TOOL.missing_glyphs(tmp_path)
    assert found and all(re.match(r"chapters/planted\.ipynb: code cell 2: Glyph 40856 ", f) for f in found), found
