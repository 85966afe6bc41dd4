"""Every page of the built book, opened in Chromium as a reader opens it, with no internet.

The pages are the ones `_toc.yml` lists, so a new chapter or lab is covered as soon as it is in the table of
contents. The book is not built here: `make test` builds it once (`make book`) and these tests read that build,
`_build/html` (or the folder in $QKV_BOOK_HTML). Each page is served on 127.0.0.1 and checked for:

- no request to any other host, no failed request, no HTTP error, no uncaught exception, no console error;
- math: MathJax 3 present and every math node typeset, no `mjx-merror`, no raw TeX (`$$`, `\\frac`, ...) in the text;
- every image loaded; saved widget state rendered into widgets;
- every internal link pointing at a file (and an anchor) that exists;
- lab pages (under labs/): the launch buttons of every service `_config.yml` configures, and no traceback shown;
- every image in the content with alt text that describes it: missing alt text, or a file path as alt text (what
  myst-nb writes when a cell has no `mystnb: image: alt:` metadata), fails;
- accessibility: axe-core (pinned in package.json, installed by `npm ci` into node_modules/) injected into the
  page, in the light and in the dark theme: no violation of impact "serious" or "critical".

A full-page screenshot of each page, light and dark theme, goes to `<html>/../screenshots/{light,dark}/`
(`_build/screenshots/`), and a JSON summary (axe-core's findings of every impact, and advisory findings: skipped
heading levels, code blocks that scroll sideways) to `<html>/../screenshots/report/`.
"""

from __future__ import annotations

import json
import re
import time
from functools import cache
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
import yaml
from browser_support import HTML, REPO, SCREENSHOTS, in_each_theme, opened, serve_directory

from qkv import figures

pytestmark = pytest.mark.browser

SOURCE_SUFFIXES = (".ipynb", ".md", ".rst")

# Raw TeX that MathJax should have turned into math; searched in the page's text outside code blocks.
RAW_TEX = [
    (re.compile(r"\$\$"), "$$"),
    (re.compile(r"\\(?:frac|sqrt|begin|mathbf|mathrm|sum|top)\b"), "a TeX command"),
    (re.compile(r"\\\(|\\\)|\\\[|\\\]"), "a TeX delimiter"),
    (re.compile(r"\$[^$\s][^$\n]{0,200}?\\[A-Za-z]+[^$\n]{0,200}?\$"), "$...$ with TeX inside"),
]


def toc_pages() -> list[str]:
    """Document names (no suffix) of every page in _toc.yml, root first, in table-of-contents order."""
    toc = yaml.safe_load((REPO / "_toc.yml").read_text(encoding="utf-8"))
    pages: list[str] = []

    def add(name: str) -> None:
        for suffix in SOURCE_SUFFIXES:
            if name.endswith(suffix):
                name = name[: -len(suffix)]
        if name not in pages:
            pages.append(name)

    def walk(entries) -> None:
        for entry in entries or []:
            if "file" in entry:
                add(entry["file"])
            if "glob" in entry:
                for path in sorted(REPO.glob(entry["glob"])):
                    if path.suffix in SOURCE_SUFFIXES:
                        add(path.relative_to(REPO).with_suffix("").as_posix())
            walk(entry.get("sections"))
            walk(entry.get("chapters"))

    add(toc["root"])
    walk(toc.get("chapters"))
    walk(toc.get("sections"))
    for part in toc.get("parts") or []:
        walk(part.get("chapters"))
    return pages


def launch_services() -> dict[str, str]:
    """The launch services _config.yml turns on, each with a piece of URL its button must contain."""
    config = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))
    launch = config.get("launch_buttons") or {}
    services = {}
    for key, name in (("binderhub_url", "Binder"), ("colab_url", "Colab"), ("jupyterhub_url", "JupyterHub")):
        url = (launch.get(key) or "").strip()
        if url:
            services[name] = urlsplit(url).netloc or url
    return services


PAGES = toc_pages()

AXE = REPO / "node_modules" / "axe-core" / "axe.min.js"
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
BLOCKING_IMPACTS = ("serious", "critical")
IMAGE_FILE = re.compile(r"\.(?:png|jpe?g|gif|svg|webp)(?:[?#]|$)", re.IGNORECASE)

# One async function that inspects a loaded page: images, math, widgets, links, launch buttons, headings.
INSPECT_JS = r"""
async () => {
  const out = {};
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  // Math: wait for MathJax's first typesetting pass.
  const mathNodes = Array.from(document.querySelectorAll(".math"));
  out.mathNodes = mathNodes.length;
  if (window.MathJax && window.MathJax.startup && window.MathJax.startup.promise) {
    try { await window.MathJax.startup.promise; } catch (e) { out.mathjaxFailure = String(e); }
  }
  out.mathjaxVersion = (window.MathJax && window.MathJax.version) || null;
  out.untypeset = mathNodes.filter((n) => !n.querySelector("mjx-container")).map((n) => n.textContent.trim().slice(0, 80));
  out.mathErrors = Array.from(document.querySelectorAll("mjx-merror")).map(
    (e) => e.getAttribute("data-mjx-error") || e.textContent.slice(0, 80));
  const clone = document.body.cloneNode(true);
  // The print-only header repeats the page title, which is checked on its own below.
  clone.querySelectorAll("pre, code, script, style, noscript, textarea, template, mjx-container, .highlight, svg, #jb-print-docs-body > h1").forEach((e) => e.remove());
  out.text = clone.textContent;
  out.title = document.title;

  // Widgets: every saved view rendered into a widget.
  out.widgetState = !!document.querySelector('script[type="application/vnd.jupyter.widget-state+json"]');
  const views = Array.from(document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]'));
  const rendered = (v) => {
    const area = v.previousElementSibling;
    return !!area && area.classList.contains("widget-subarea") && area.querySelector(".jupyter-widgets, .widget-box, .widget-inline-hbox, .lm-Widget") !== null;
  };
  if (out.widgetState) {
    const deadline = Date.now() + 20000;
    while (Date.now() < deadline && !views.every(rendered)) await sleep(100);
  }
  out.widgetViews = views.length;
  out.unrenderedWidgets = views.filter((v) => !rendered(v)).map((v) => v.textContent.slice(0, 120));
  out.widgetErrors = Array.from(document.querySelectorAll(".widget-subarea")).filter(
    (a) => /Error (displaying|rendering|creating) widget|Failed to load model class/.test(a.textContent)).map((a) => a.textContent.slice(0, 200));
  out.sliders = document.querySelectorAll(".widget-subarea .widget-slider, .widget-subarea .noUi-target").length;

  // Tables (qkv.figures.show_table): one copy per edition; only the page's own language may show.
  const primary = (lang) => (lang || "en").split("-")[0];
  out.tables = Array.from(document.querySelectorAll("table.qkv-t")).map((t) => ({
    lang: primary(t.lang), shown: t.getClientRects().length > 0, head: t.rows[0] ? t.rows[0].textContent.slice(0, 80) : "",
  }));
  out.pageLang = primary(document.documentElement.lang);

  // Fonts: load every face the page declares. A browser fetches a font only when some glyph needs it, so a wrong
  // font URL (the widgets' icon fonts once resolved next to the page) would otherwise fail on some runs only.
  out.fontFailures = [];
  await Promise.all(Array.from(document.fonts).map((f) => f.load().catch(
    () => out.fontFailures.push(`${f.family} ${f.style} ${f.weight}`))));

  // Images, lazy ones included; after the widgets, whose plots are images too.
  const images = Array.from(document.images);
  images.forEach((img) => { if (img.loading === "lazy") img.loading = "eager"; });
  await Promise.all(images.map((img) => img.complete ? null : new Promise((resolve) => {
    img.addEventListener("load", resolve, { once: true });
    img.addEventListener("error", resolve, { once: true });
    setTimeout(resolve, 15000);
  })));
  out.images = images.map((img) => ({
    src: img.currentSrc || img.src,
    loaded: img.complete && img.naturalWidth > 0,
    alt: img.getAttribute("alt"),
    inContent: !!img.closest("main, article, .bd-article"),
  }));

  // Links, launch buttons, tracebacks, headings.
  out.links = Array.from(document.querySelectorAll("a[href]")).map((a) => a.href);
  out.launchLinks = Array.from(document.querySelectorAll(".dropdown-launch-buttons a, a.btn-launch-binder, a[class*='launch']"))
    .map((a) => a.href);
  out.tracebacks = Array.from(document.querySelectorAll(".cell_output .traceback, .cell_output .output.error"))
    .map((e) => e.textContent.trim().split("\n").slice(-1)[0].slice(0, 160));
  const article = document.querySelector("article, main") || document.body;
  out.headings = Array.from(article.querySelectorAll("h1, h2, h3, h4, h5, h6")).map((h) => [Number(h.tagName[1]), h.textContent.replace(/[#¶]/g, "").trim().slice(0, 60)]);
  await document.fonts.ready;
  out.wideCode = Array.from(document.querySelectorAll("div.highlight pre, .cell_output pre"))
    .filter((p) => p.scrollWidth > p.clientWidth + 1 && p.offsetParent !== null)
    .map((p) => p.textContent.split("\n").reduce((a, b) => (b.length > a.length ? b : a), "").trim().slice(0, 60));
  return out;
}
"""


@pytest.fixture(scope="module")
def book_url():
    """The book's HTML, built by `make book`, served on 127.0.0.1. Never built here."""
    if not (HTML / "index.html").is_file():
        pytest.fail(
            f"No built book at {HTML}: run `make book` first (make test does), or point QKV_BOOK_HTML at a "
            "build's _build/html. The browser tests never build the book themselves.",
            pytrace=False,
        )
    with serve_directory(HTML) as url:
        yield url


@cache
def anchors_of(path: Path) -> frozenset[str]:
    text = path.read_text(encoding="utf-8", errors="replace")
    return frozenset(unquote(m) for m in re.findall(r'\b(?:id|name)="([^"]+)"', text))


def broken_internal_links(links: list[str], base: str) -> list[str]:
    broken = []
    for link in sorted(set(links)):
        if not link.startswith(base):
            continue  # another host (launch buttons, the repository): not followed, the tests are offline
        parts = urlsplit(link)
        rel = unquote(parts.path)[len(urlsplit(base).path) :]
        target = HTML / rel
        if rel == "" or rel.endswith("/"):
            target = target / "index.html"
        if not target.is_file():
            broken.append(f"{link} (no file {target.relative_to(HTML) if target.is_relative_to(HTML) else target})")
            continue
        if parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in anchors_of(target):
            broken.append(f"{link} (no anchor #{parts.fragment} in {target.relative_to(HTML)})")
    return broken


def check_loaded_page(page, traffic, name: str, base: str | None) -> tuple[list[str], dict]:
    """Run every check on a loaded page; returns (problems, the inspection's data)."""
    info = page.evaluate(INSPECT_JS)
    problems = list(traffic.problems())
    if info["mathNodes"]:
        if not info["mathjaxVersion"] or not str(info["mathjaxVersion"]).startswith("3"):
            problems.append(
                f"{info['mathNodes']} math nodes but MathJax 3 is not loaded (got {info['mathjaxVersion']})"
            )
        if info.get("mathjaxFailure"):
            problems.append(f"MathJax failed: {info['mathjaxFailure']}")
        for tex in info["untypeset"]:
            problems.append(f"math not typeset: {tex!r}")
    for error in info["mathErrors"]:
        problems.append(f"MathJax error (mjx-merror): {error!r}")
    for pattern, what in RAW_TEX:
        for match in list(pattern.finditer(info["text"]))[:3]:
            context = info["text"][max(0, match.start() - 40) : match.end() + 40].replace("\n", " ")
            problems.append(f"raw TeX in the text ({what}): ...{context}...")
    for pattern, _ in RAW_TEX:
        if pattern.search(info["title"]):
            problems.append(
                f"raw TeX in the page title (browser tab, bookmarks, print header; write the heading's "
                f"math in words): {info['title']!r}"
            )
            break
    for image in info["images"]:
        if not image["loaded"]:
            problems.append(f"image did not load: {image['src']}")
    if info["widgetState"]:
        if info["widgetViews"] == 0:
            problems.append("widget state saved but no widget view on the page")
        for view in info["unrenderedWidgets"]:
            problems.append(f"widget not rendered: {view}")
        for error in info["widgetErrors"]:
            problems.append(f"widget error: {error}")
    problems += [f"font did not load: {face}" for face in info["fontFailures"]]
    tables = info["tables"]
    problems += [f"a table in {t['lang']} shown on a {info['pageLang']} page: {t['head']}"
                 for t in tables if t["shown"] and t["lang"] != info["pageLang"]]  # fmt: skip
    if tables and sum(t["shown"] for t in tables) * len(figures.EDITIONS) != len(tables):
        problems.append(
            f"{len(tables)} tables on the page, {sum(t['shown'] for t in tables)} shown: not one per edition"
        )
    if base is not None:
        problems += [f"broken internal link: {b}" for b in broken_internal_links(info["links"], base)]
    if name.startswith("labs/"):
        services = launch_services()
        if not services:
            problems.append("lab page but _config.yml turns on no launch service")
        for service, host in services.items():
            if not any(host in link for link in info["launchLinks"]):
                problems.append(f"lab page without its {service} launch button (no link to {host})")
        for traceback in info["tracebacks"]:
            problems.append(f"lab page shows a traceback (hide the tagged cells' output): {traceback}")
    return problems, info


def short_src(src: str) -> str:
    return src.split(";", 1)[0] + " (inline)" if src.startswith("data:") else src.rsplit("/", 1)[-1]


def alt_text_problem(alt: str | None, src: str) -> str | None:
    """Why an image's alt text does not describe it (None when it may): missing, or a file name or path."""
    text = (alt or "").strip()
    if not text:
        return f"image without alt text: {short_src(src)}"
    pathlike = (
        text.rsplit("/", 1)[-1] == short_src(src)
        or IMAGE_FILE.search(text) is not None
        or (("/" in text or "\\" in text) and " " not in text)
    )
    if pathlike:
        return f"image whose alt text is a file path, not a description: {text!r} ({short_src(src)})"
    return None


def alt_text_problems(info: dict) -> list[str]:
    found = (alt_text_problem(i["alt"], i["src"]) for i in info["images"] if i["inContent"])
    return [p for p in found if p]


def axe_violations(page) -> list[dict]:
    """Run axe-core in the page as it is now; every violation, each with its impact and the nodes it names."""
    if not AXE.is_file():
        pytest.fail(
            f"{AXE} not found: run `npm ci --ignore-scripts` (make book does); axe-core is pinned in package.json",
            pytrace=False,
        )
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(content=AXE.read_text(encoding="utf-8"))
    return page.evaluate(
        """async (tags) => {
             const result = await window.axe.run(document, {
               runOnly: { type: "tag", values: tags }, resultTypes: ["violations"] });
             return result.violations.map((v) => ({
               id: v.id, impact: v.impact, help: v.help,
               nodes: v.nodes.map((n) => ({ target: n.target.join(" "), summary: (n.failureSummary || "").slice(0, 300) })),
             }));
           }""",
        AXE_TAGS,
    )


def blocking(violations: list[dict], mode: str) -> list[str]:
    out = []
    for v in violations:
        if v["impact"] in BLOCKING_IMPACTS:
            targets = "; ".join(n["target"] for n in v["nodes"][:5])
            more = f" (+{len(v['nodes']) - 5} more)" if len(v["nodes"]) > 5 else ""
            summary = v["nodes"][0]["summary"].replace("\n", " ") if v["nodes"] else ""
            out.append(f"axe-core, {mode} theme, {v['impact']}: {v['id']} ({v['help']}) at {targets}{more}: {summary}")
    return out


def advisories(info: dict) -> dict:
    """Things a reader would notice that are not hard failures: heading order, code wider than the page."""
    skips = []
    previous = None
    for level, text in info["headings"]:
        if previous is not None and level > previous + 1:
            skips.append(f"h{previous} -> h{level} ({text})")
        previous = level
    return {"heading_level_skips": skips, "code_scrolling_sideways": info["wideCode"]}


def test_toc_lists_pages():
    assert PAGES, "_toc.yml lists no page"
    missing = [p for p in PAGES if not any((REPO / f"{p}{s}").is_file() for s in SOURCE_SUFFIXES)]
    assert not missing, f"_toc.yml lists pages with no source file: {missing}"


def check_page(name, book_url, browser_context):
    html_file = HTML / f"{name}.html"
    assert html_file.is_file(), f"{name} is in _toc.yml but {html_file} was not built"
    started = time.perf_counter()
    with opened(browser_context, book_url + f"{name}.html") as (page, traffic):
        problems, info = check_loaded_page(page, traffic, name, book_url)
        problems += alt_text_problems(info)
        axe = {}

        def check_axe(mode: str) -> list[str]:
            axe[mode] = axe_violations(page)
            return blocking(axe[mode], mode)

        problems += in_each_theme(page, SCREENSHOTS, name, check_axe)
        problems += [p for p in traffic.problems() if p not in problems]  # anything the theme switch caused
    report = {
        "page": name,
        "seconds": round(time.perf_counter() - started, 2),
        "math_nodes": info["mathNodes"],
        "images": len(info["images"]),
        "widget_views": info["widgetViews"],
        "sliders": info["sliders"],
        "problems": problems,
        "axe_violations": axe,
        **advisories(info),
    }
    report_path = SCREENSHOTS / "report" / f"{name}.json"
    report_path.parent.mkdir(parents=True, exist_ok=True)
    report_path.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    assert not problems, f"{name}.html:\n  " + "\n  ".join(problems)


# pytest-xdist's --dist loadscope sends a module's functions to one worker but each class to a worker of its own:
# two classes, each with every other page, let both workers share the pages (each then starts its own browser).
class TestPagesEven:
    @pytest.mark.parametrize("name", PAGES[0::2])
    def test_page(self, name, book_url, browser_context):
        check_page(name, book_url, browser_context)


class TestPagesOdd:
    @pytest.mark.parametrize("name", PAGES[1::2])
    def test_page(self, name, book_url, browser_context):
        check_page(name, book_url, browser_context)


def test_index_redirects_to_the_first_page(book_url, browser_context):
    with opened(browser_context, book_url + "index.html") as (page, traffic):
        page.wait_for_url(f"**/{PAGES[0]}.html")
    assert not traffic.problems(), "\n".join(traffic.problems())


def _first_page_with(marker: str) -> str | None:
    for name in PAGES:
        path = HTML / f"{name}.html"
        if path.is_file() and marker in path.read_text(encoding="utf-8", errors="replace"):
            return name
    return None


@pytest.mark.parametrize(
    "kind, marker",
    [
        ("math", 'class="math'),
        ("widgets", "application/vnd.jupyter.widget-state+json"),
    ],
    ids=["math", "widgets"],
)
def test_opened_from_disk(kind, marker, book_url, browser_context):
    """The HTML folder copied or unzipped anywhere and opened as files: math and widgets still work."""
    name = _first_page_with(marker)
    assert name is not None, f"no page in _toc.yml has {kind} ({marker}); this test needs one"
    with opened(browser_context, (HTML / f"{name}.html").as_uri()) as (page, traffic):
        problems, info = check_loaded_page(page, traffic, name, base=None)
    if kind == "math":
        assert info["mathNodes"] > 0 and not info["untypeset"]
    else:
        assert info["widgetViews"] > 0 and not info["unrenderedWidgets"]
    assert not problems, f"{name}.html opened from disk:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize(
    "alt, src, bad",
    [
        (None, "../_images/a1b2.png", True),
        ("  ", "../_images/a1b2.png", True),
        ("../_build/jupyter_execute/a1b2.png", "../_images/a1b2.png", True),  # myst-nb's default: the path
        ("a1b2.png", "../_images/a1b2.png", True),
        ("_images/other", "../_images/a1b2.png", True),
        ("Two heat maps: the scores and the weights after a softmax along each row.", "../_images/a1b2.png", False),
        ("Loss against step, falling from 2.3 to 0.01 (log scale).", "data:image/png;base64,AAAA", False),
    ],
)
def test_alt_text_rule(alt, src, bad):
    """The alt-text rule itself: missing text and file paths fail, a description passes."""
    assert (alt_text_problem(alt, src) is not None) == bad
