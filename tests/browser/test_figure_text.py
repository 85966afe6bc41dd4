"""Every glued figure's text is readable at the size the page shows it, in both editions.

A chapter draws its figures with `qkv.figures` (`figures.glue`), which records in each PNG the height of its
smallest text in px (the PNG text chunk `qkv:min-text-px`). Here every page of `_toc.yml`, English and Chinese, is
opened in Chromium at the book's desktop viewport with every fold opened ("Going deeper" boxes, hidden cells), and
for each image that glue placed (an image in a figure or a glued output, not a notebook cell's own output):

- the PNG must carry `qkv:min-text-px` (read from the file the page loads): a figure glued any other way (pyplot's
  inline formatter, an `IPython.display.Image`) has no record of its text and fails;
- its smallest text as shown, `min_text_px * rendered width / natural width`, must be at least 9 px: a PNG wider
  than the column is scaled down with all its text.

And no chapter shows a plot as a code cell's own output (pyplot's inline display), which neither check would see.
"""

from __future__ import annotations

import base64
import io
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from browser_support import HTML, opened, serve_directory
from PIL import Image
from test_book_pages import PAGES

from qkv import figures

pytestmark = pytest.mark.browser

MIN_PX = 9.0
EDITIONS = {"en": "", "zh_CN": "zh/"}

GLUED_IMAGES_JS = r"""
async () => {
  // Every fold open, as a reader who opens it sees it: <details> (hidden cells, dropdowns) and toggled admonitions.
  document.querySelectorAll("details").forEach((d) => { d.open = true; });
  document.querySelectorAll(".toggle-hidden").forEach((e) => e.classList.remove("toggle-hidden"));
  const glued = [...document.querySelectorAll("article img, main img")].filter(
    (img) => !img.closest("div.cell") && img.closest("figure, .cell_output"));
  glued.forEach((img) => { if (img.loading === "lazy") img.loading = "eager"; });
  await Promise.all(glued.map((img) => img.complete ? null : new Promise((resolve) => {
    img.addEventListener("load", resolve, { once: true });
    img.addEventListener("error", resolve, { once: true });
    setTimeout(resolve, 15000);
  })));
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));  // layout after the folds open
  return [...new Set(glued)].map((img) => ({
    src: img.currentSrc || img.src,
    natural: img.naturalWidth,
    shown: img.getBoundingClientRect().width,
    figure: (img.closest("figure") && img.closest("figure").id) || "",
  }));
}
"""


def png_bytes(src: str, root: Path) -> bytes:
    """The PNG a page loaded: a data: URI's bytes, or the file under the served folder."""
    if src.startswith("data:"):
        return base64.b64decode(src.split(",", 1)[1])
    return (root / unquote(urlsplit(src).path).lstrip("/")).read_bytes()


def figure_text_problems(page, root: Path) -> tuple[list[str], int]:
    """What is wrong with the text size of the glued figures on a loaded page; how many figures it has."""
    problems = []
    images = page.evaluate(GLUED_IMAGES_JS)
    for image in images:
        name = image["figure"] or Path(urlsplit(image["src"]).path).name[:16] or image["src"][:40]
        if not image["natural"]:
            problems.append(f"{name}: the image did not load")
            continue
        recorded = Image.open(io.BytesIO(png_bytes(image["src"], root))).text.get(figures.TEXT_PX_KEY)
        if recorded is None:
            problems.append(f"{name}: no {figures.TEXT_PX_KEY} in the PNG (glue it with qkv.figures.glue)")
            continue
        if image["shown"] <= 0:
            problems.append(f"{name}: not shown even with every fold open, so it cannot be measured")
            continue
        shown = float(recorded) * image["shown"] / image["natural"]
        if shown < MIN_PX:
            problems.append(
                f"{name}: smallest text {shown:.1f} px as shown ({recorded} px in a {image['natural']} px wide PNG "
                f"shown {image['shown']:.0f} px wide); at least {MIN_PX:g} px"
            )
    return problems, len(images)


@pytest.fixture(scope="module")
def site_url():
    """Both editions (English at the root, Chinese under zh/) served on 127.0.0.1. Never built here."""
    if not (HTML / "index.html").is_file():
        pytest.fail(f"No book at {HTML}: run `make book` first (make test does).", pytrace=False)
    with serve_directory(HTML) as url:
        yield url


@pytest.mark.parametrize("edition", EDITIONS)
@pytest.mark.parametrize("name", PAGES)
def test_glued_figures_text_is_at_least_9_px_as_shown(name, edition, site_url, browser_context):
    prefix = EDITIONS[edition]
    if prefix and not (HTML / prefix / "index.html").is_file():
        pytest.fail(f"No Chinese edition at {HTML / prefix}: run `make book` first.", pytrace=False)
    with opened(browser_context, site_url + f"{prefix}{name}.html") as (page, _traffic):
        problems, _count = figure_text_problems(page, HTML)
    assert not problems, f"{prefix}{name}.html:\n  " + "\n  ".join(problems)


CELL_OUTPUT_PLOT = re.compile(r'<div class="cell_output[^"]*">\s*<img[^>]*src="([^"]*_images/[^"]*)"')


@pytest.mark.parametrize("name", [p for p in PAGES if p.startswith("chapters/")])
def test_every_chapter_plot_is_glued_so_that_it_is_measured_and_translated(name):
    """A plot left as a code cell's own output escapes the check above and stays English in the Chinese edition."""
    page = HTML / f"{name}.html"
    if not page.is_file():
        pytest.fail(f"No book at {HTML}: run `make book` first (make test does).", pytrace=False)
    plots = CELL_OUTPUT_PLOT.findall(page.read_text(encoding="utf-8"))
    assert not plots, f"{name}: {len(plots)} plot(s) shown as a cell's output, not glued by qkv.figures: {plots}"


def _png(width_in: float, text_pt: float, record: bool) -> bytes:
    fig, ax = figures.subplots(figsize=(width_in, 2))
    ax.set_title("T", fontsize=text_pt)
    ax.tick_params(labelsize=max(text_pt, 10))
    if record:
        return figures.render(fig)[0]
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=figures.DPI)
    return buffer.getvalue()


def test_the_check_fails_on_small_text_a_shrunk_figure_and_a_figure_without_its_record(tmp_path, browser_context):
    """A planted page, laid out like the book's column: only the figure whose text stays >= 9 px passes."""
    files = {
        "fine.png": _png(5, 9, True),  # 12.5 px, shown at its own width
        "small.png": _png(5, 6, True),  # 8.3 px
        "shrunk.png": _png(14, 12, True),  # 16.7 px in the PNG, shown about half as wide
        "unrecorded.png": _png(5, 12, False),  # drawn by plain matplotlib: nothing recorded
    }
    for file, png in files.items():
        (tmp_path / file).write_bytes(png)
    body = "".join(f'<figure id="{file[:-4]}"><img src="{file}" style="max-width: 100%"></figure>' for file in files)
    body += '<div class="cell"><div class="cell_output"><img src="small.png"></div></div>'  # a cell's own output
    (tmp_path / "index.html").write_text(f'<html><body><article style="width: {figures.COLUMN_PX}px">{body}</article>')
    with serve_directory(tmp_path) as url, opened(browser_context, url + "index.html") as (page, _traffic):
        problems, count = figure_text_problems(page, tmp_path)
    assert count == 4
    assert sorted(p.split(":")[0] for p in problems) == ["shrunk", "small", "unrecorded"], problems
