"""A chapter's figures in both editions: drawn once per language, with every word from the catalog.

A page writes a drawing function that takes the edition's translator ``_`` and returns a figure, and glues it:

    def draw(_):
        fig, ax = figures.subplots(figsize=(7, 3))
        ax.set_xlabel(_("query angle $\\theta$ (radians)"))
        return fig

    figures.glue("fig_soft_ramp", draw)  # glues fig_soft_ramp and fig_soft_ramp_zh_CN

The Chinese build places ``name_zh_CN`` wherever the page says ``{glue:figure} name`` (``_ext/qkv_i18n``). Labels
are the string literals passed to ``_``: ``tools/i18n.py diagrams`` extracts them from the chapters and from
:mod:`qkv.diagrams` into ``locales/zh_CN/LC_MESSAGES/diagrams.po`` and compiles them into the package, with a
subset of Noto Sans CJK SC (OFL 1.1) that draws those characters and all of GB 2312. Each PNG records the size of
its smallest text (``qkv:min-text-px``) so that a browser test can check it at the width the page shows it.

The same font is matplotlib's fallback for every plot once this module is imported (the chapters import it) or a
Chinese lab calls ``qkv.selfcheck.use_language("zh_CN")``: a student's own plot with Chinese labels draws
wherever ``qkv`` is installed (Colab, Binder, ``make lab``), with no font to install.
"""

from __future__ import annotations

import functools
import gettext
import html
import io
import warnings
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import matplotlib
from matplotlib.figure import Figure
from matplotlib.text import Text

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

__all__ = [
    "EDITIONS",
    "N_",
    "Translator",
    "glue",
    "glue_key",
    "min_text_px",
    "render",
    "show_table",
    "style",
    "subplots",
    "table_html",
    "translator",
    "use_cjk_font",
]

EDITIONS = ("en", "zh_CN")  # the book's editions: a page glues one figure per edition
LOCALE_DIR, DOMAIN = Path(__file__).parent / "locale", "qkv_diagrams"
# The subset's own family name (tools/i18n.py renames it): never confused with a system-wide Noto Sans CJK SC.
CJK_FONT, CJK_FAMILY = Path(__file__).parent / "fonts" / "NotoSansCJKsc-qkv-subset.otf", "qkv Noto Sans CJK SC"
DPI = 100  # the PNG's pixels per inch: a 7-inch figure is 700 px
COLUMN_PX = 688  # the book theme's content column: a wider PNG is shown scaled down to it
TEXT_PX_KEY = "qkv:min-text-px"


class Translator:
    """``_(text)``: the edition's words for one label (``language`` says which edition)."""

    def __init__(self, language: str) -> None:
        self.language = language
        self._catalog = _catalog(language)

    def __call__(self, text: str) -> str:
        return self._catalog.gettext(text)


@functools.cache
def _catalog(language: str) -> gettext.NullTranslations:
    if language == "en":
        return gettext.NullTranslations()
    return gettext.translation(DOMAIN, LOCALE_DIR, [language])  # an unknown edition fails here, before drawing


def translator(language: str) -> Translator:
    return Translator(language)


def glue_key(name: str, language: str) -> str:
    """The glue key of a figure in one edition: ``name`` in English, ``name_zh_CN`` in Chinese."""
    return name if language == "en" else f"{name}_{language}"


def _register_cjk_font() -> None:
    from matplotlib import font_manager

    if CJK_FAMILY not in {f.name for f in font_manager.fontManager.ttflist}:
        font_manager.fontManager.addfont(str(CJK_FONT))


def use_cjk_font() -> None:
    """Make the course's CJK font matplotlib's fallback: text in the current font families first, then, for a
    character they lack (Chinese), the CJK font. Called on import and by ``qkv.selfcheck.use_language``."""
    _register_cjk_font()
    families = matplotlib.rcParams["font.family"]
    families = [families] if isinstance(families, str) else list(families)
    if CJK_FAMILY not in families:
        matplotlib.rcParams["font.family"] = [*families, CJK_FAMILY]


@contextmanager
def style(language: str, **rc: Any):
    """The book's style and, for a CJK edition, the course's CJK font as the fallback of DejaVu Sans."""
    families = ["DejaVu Sans"]
    if language != "en":
        _register_cjk_font()
        families.append(CJK_FAMILY)
    settings = {"font.family": families, "axes.unicode_minus": False, **rc}
    with matplotlib.rc_context(cast("dict[RcKeyType, Any]", settings)):  # rc's names are checked at run time
        yield


def subplots(nrows: int = 1, ncols: int = 1, **kwargs: Any):
    """Like ``plt.subplots``, but the figure is not attached to pyplot: nothing shows until it is glued."""
    fig_keys = {"figsize", "layout", "facecolor"}
    fig = Figure(**{"layout": "constrained", **{k: v for k, v in kwargs.items() if k in fig_keys}})
    return fig, fig.subplots(nrows, ncols, **{k: v for k, v in kwargs.items() if k not in fig_keys})


def _smallest_text_pt(fig: Figure) -> float:
    sizes = [t.get_fontsize() for t in fig.findobj(Text) if _shown(t)]
    return float(min(sizes)) if sizes else float("inf")


def _shown(t: Text) -> bool:
    """A text inside an axes counts when it is visible and not an empty or clipped-away tick label."""
    if not (t.get_visible() and t.get_text().strip()):
        return False
    ax = t.axes
    if ax is None:
        return True
    x, y = t.get_position()
    for axis, value in ((ax.xaxis, x), (ax.yaxis, y)):
        if t in axis.get_ticklabels(which="both"):
            lo, hi = sorted(axis.get_view_interval())
            return bool(lo - 1e-9 * abs(hi - lo) <= value <= hi + 1e-9 * abs(hi - lo))
    return True


def render(fig: Figure) -> tuple[bytes, float]:
    """The PNG the book shows (100 dpi, tight) with its smallest text's height in px recorded; that height."""
    fig.canvas.draw()  # places tick labels, so that the ones outside the axes' view are known
    px = _smallest_text_pt(fig) * DPI / 72
    buffer = io.BytesIO()
    fig.savefig(
        buffer, format="png", dpi=DPI, bbox_inches="tight", facecolor="white", metadata={TEXT_PX_KEY: f"{px:.2f}"}
    )
    return buffer.getvalue(), px


def min_text_px(fig: Figure, column_px: int = COLUMN_PX) -> float:
    """The smallest text of ``fig`` in px when the page shows it: a PNG wider than the column is scaled down."""
    from PIL import Image

    png, px = render(fig)
    width = Image.open(io.BytesIO(png)).width
    return px * min(1.0, column_px / width)


def glue(name: str, draw: Callable[[Translator], Figure]) -> None:
    """Draw ``draw(_)`` once per edition and glue each as ``glue_key(name, language)``; outside the book (no
    myst_nb, e.g. Colab) show the English figure. A character that no font draws raises (matplotlib's "Glyph ...
    missing from font(s)" warning made an error), so the notebook, and the book's build, fail on it."""
    from IPython.display import Image, display

    try:
        from myst_nb import glue as nb_glue
    except ImportError:
        nb_glue = None
    for language in EDITIONS:
        with style(language), warnings.catch_warnings():
            # A label the fonts cannot draw would show boxes: stop the page (and the book's build) instead.
            warnings.filterwarnings("error", message="Glyph .* missing from", category=UserWarning)
            fig = draw(translator(language))
            png, _px = render(fig)
        image = Image(data=png, format="png")
        if nb_glue is not None:
            nb_glue(glue_key(name, language), image, display=language == "en")
        elif language == "en":
            display(image)


def N_(text: str) -> str:
    """Marks a word that a page computes with (a table's row label) for the catalog; returns it unchanged."""
    return text


# Each edition's copy of a table is shown only on pages of its language (the book's <html lang>); elsewhere, as in
# JupyterLab, the English one.
_TABLE_STYLE = (
    "<style>.qkv-t td, .qkv-t th {padding: 2px 10px} .qkv-t.qkv-right td, .qkv-t.qkv-right th {text-align: right}"
    ' html:not([lang|="zh"]) .qkv-t[lang|="zh"], html[lang|="zh"] .qkv-t:not([lang|="zh"]) {display: none}</style>'
)


def table_html(header: list, rows: list[list], right: bool = False) -> str:
    """The HTML of :func:`show_table`: one table per edition, every header and cell that the catalog knows in that
    edition's words (numbers and formulas stay as they are)."""
    tables = []
    for language in EDITIONS:
        _ = translator(language)

        def cells(tag: str, row: list, _: Translator = _) -> str:
            return "".join(f"<{tag}>{html.escape(_(str(x)))}</{tag}>" for x in row)

        lang = "" if language == "en" else f' lang="{language.replace("_", "-")}"'
        body = "".join(f"<tr>{cells('td', r)}</tr>" for r in rows)
        kind = "qkv-t qkv-right" if right else "qkv-t"
        tables.append(f'<table class="{kind}"{lang}><tr>{cells("th", header)}</tr>{body}</table>')
    return _TABLE_STYLE + "".join(tables)


def show_table(header: list, rows: list[list], right: bool = False) -> None:
    """Display rows of already formatted values as a table in both editions (``right``: right-aligned). The
    header's string literals are the catalog's (``tools/i18n.py diagrams`` extracts them), as are words marked
    with :func:`N_`."""
    from IPython.display import HTML, display

    display(HTML(table_html(header, rows, right)))


use_cjk_font()  # a student's own Chinese labels draw in any notebook that imports qkv.figures
