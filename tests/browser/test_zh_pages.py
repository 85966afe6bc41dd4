"""The Chinese edition (`_build/html/zh/`, built by `make book`), opened in Chromium like the English one.

Every page of `_toc.yml` in Chinese, light and dark: the same checks as test_book_pages.py (no off-machine or
failed request, no console error, math typeset, no raw TeX, images loaded, internal links resolve), plus: the page
is `lang="zh-CN"`, its text is set in a CJK font, the theme speaks Chinese, and the language switch leads to the
same page in English and back. Screenshots go to `_build/screenshots/zh/{light,dark}/`.
"""

from __future__ import annotations

import pytest
from browser_support import HTML, SCREENSHOTS, in_each_theme, opened, serve_directory
from test_book_pages import PAGES, check_loaded_page

pytestmark = pytest.mark.browser

CJK_FONTS = ("Noto Sans CJK SC", "Source Han Sans SC", "PingFang SC")


@pytest.fixture(scope="module")
def site_url():
    """The whole site (English at the root, Chinese under zh/) served on 127.0.0.1. Never built here."""
    if not (HTML / "zh" / "index.html").is_file():
        pytest.fail(f"No Chinese edition at {HTML / 'zh'}: run `make book` first (make test does).", pytrace=False)
    with serve_directory(HTML) as url:
        yield url


# sphinxcontrib-bibtex's citations: links into the bibliography, with the character just before each (its bracket).
CITATIONS_JS = r"""
() => [...document.querySelectorAll("article a.reference.internal[href*='bibliography.html#']")].map((a) => ({
  text: a.textContent,
  before: ((a.previousSibling && a.previousSibling.textContent) || "").trim().slice(-1),
}))
"""

SWITCH_JS = r"""
() => {
  const a = document.querySelector("a.qkv-language-switch");
  const body = getComputedStyle(document.body);
  return {
    lang: document.documentElement.lang,
    font: body.fontFamily,
    switchHref: a ? a.href : null,
    switchLang: a ? a.getAttribute("hreflang") : null,
    // its accessible name: the label, or (assets/qkv/a11y.js drops a label that differs from it) the visible text
    searchLabel: ((el) => (el ? el.getAttribute("aria-label") || el.textContent : ""))(document.querySelector(".search-button__button")),
    untranslated: document.querySelectorAll(".untranslated").length,
    searchPlaceholders: [...document.querySelectorAll("input[name='q']")].map((i) => i.placeholder),
  };
}
"""


def edition_words_problems(placeholders: list[str], citations: list[dict]) -> list[str]:
    """The search box's placeholder and the citation labels in the page's language: on a Chinese page 搜索 and
    （Vaswani 等，2017）, no "Search", "et al.", square bracket or English name of the course's notes."""
    problems = []
    english_words = ("Search", "et al.", "Anonymous")
    for placeholder in placeholders:
        if "搜索" not in placeholder or "Search" in placeholder:
            problems.append(f"search box placeholder not in Chinese: {placeholder!r}")
    for citation in citations:
        english = [w for w in english_words if w in citation["text"]] + (["["] if citation["before"] == "[" else [])
        if english:
            problems.append(f"citation {citation['before']}{citation['text']!r} has {english}")
    return problems


def check_chinese_page(name, site_url, browser_context):
    with opened(browser_context, site_url + f"zh/{name}.html") as (page, traffic):
        problems, _ = check_loaded_page(page, traffic, f"zh/{name}", site_url)
        info = page.evaluate(SWITCH_JS)
        if info["lang"] != "zh-CN":
            problems.append(f'<html lang="{info["lang"]}">, expected zh-CN')
        if not any(font in info["font"] for font in CJK_FONTS):
            problems.append(f"body font has no CJK font: {info['font']}")
        if "搜索" not in info["searchLabel"]:
            problems.append(f"the theme's search button is not in Chinese: {info['searchLabel']!r}")
        problems += edition_words_problems(info["searchPlaceholders"], page.evaluate(CITATIONS_JS))
        if info["switchLang"] != "en" or info["switchHref"] != site_url + f"{name}.html":
            problems.append(f"language switch leads to {info['switchHref']} ({info['switchLang']})")
        problems += in_each_theme(page, SCREENSHOTS / "zh", name)
        problems += [p for p in traffic.problems() if p not in problems]
    assert not problems, f"zh/{name}.html:\n  " + "\n  ".join(problems)


class TestChinesePagesEven:
    @pytest.mark.parametrize("name", PAGES[0::2])
    def test_page(self, name, site_url, browser_context):
        check_chinese_page(name, site_url, browser_context)


class TestChinesePagesOdd:
    @pytest.mark.parametrize("name", PAGES[1::2])
    def test_page(self, name, site_url, browser_context):
        check_chinese_page(name, site_url, browser_context)


@pytest.mark.parametrize("name", ["chapters/soft_lookup", "labs/soft_lookup/soft_lookup"])
def test_switch_there_and_back_by_clicking(name, site_url, browser_context):
    """A reader clicks 中文 on an English page, then English on the Chinese one, and is back where they started."""
    with opened(browser_context, site_url + f"{name}.html") as (page, traffic):
        page.click("a.qkv-language-switch[hreflang='zh-CN']")
        page.wait_for_url(site_url + f"zh/{name}.html")
        assert page.evaluate("document.documentElement.lang") == "zh-CN"
        page.click("a.qkv-language-switch[hreflang='en']")
        page.wait_for_url(site_url + f"{name}.html")
        assert page.evaluate("document.documentElement.lang") == "en"
    assert not traffic.problems(), "\n".join(traffic.problems())


def test_switch_works_from_disk(browser_context):
    """Opened as files (the HTML folder copied anywhere): the relative link still finds the other edition."""
    page = browser_context.new_page()
    try:
        page.goto((HTML / "chapters" / "notation.html").as_uri(), wait_until="load")
        page.click("a.qkv-language-switch[hreflang='zh-CN']")
        page.wait_for_url((HTML / "zh" / "chapters" / "notation.html").as_uri())
        assert "记号" in page.title()
    finally:
        page.close()


EMPHASIS_JS = "() => [...document.querySelectorAll('article em')].map((e) => getComputedStyle(e).fontStyle)"


def test_emphasis_is_upright_in_chinese_and_italic_in_english(site_url, browser_context):
    """Chinese has no italics: `*软*` is set upright (bold) on the Chinese page; the English page keeps italics."""
    for prefix, upright in (("zh/", True), ("", False)):
        with opened(browser_context, site_url + f"{prefix}chapters/soft_lookup.html") as (page, _):
            styles = page.evaluate(EMPHASIS_JS)
        assert styles, f"{prefix}chapters/soft_lookup.html has no emphasis to check"
        assert all((style == "normal") == upright for style in styles), (prefix, styles)


# A reader types a word into the Chinese edition's search box: the page that teaches it must be among the results.
SEARCHES = {
    "注意力": "chapters/soft_lookup.html",
    "多头": "chapters/multihead.html",
    "位置编码": "chapters/positional_encoding.html",
    "掩码": "chapters/score_matrix.html",
    "缩放": "chapters/scaling.html",
}


@pytest.mark.parametrize("word", list(SEARCHES))
def test_chinese_search_finds_the_page(word, site_url, browser_context):
    # The search page's own box: always in the page (the header's dialog opens only once the theme's script has run,
    # which on a loaded machine can come after the click)
    with opened(browser_context, site_url + "zh/search.html") as (page, traffic):
        box = page.locator(".bd-search-container input[name='q']")
        box.fill(word)
        box.press("Enter")
        page.wait_for_url("**/zh/search.html?q=*")
        page.wait_for_selector("#search-results ul.search li a", timeout=30_000)
        found = page.eval_on_selector_all("#search-results ul.search li a", "(links) => links.map((a) => a.href)")
    assert any(href.split("?")[0].endswith("zh/" + SEARCHES[word]) for href in found), (word, found[:10])
    assert not traffic.problems(), "\n".join(traffic.problems())


def test_citations_and_search_box_speak_each_editions_language(site_url, browser_context):
    """On a page that cites a paper of three authors or more: Chinese labels on the Chinese page; the English page,
    the same words in English, would fail the Chinese check (so the check can fail)."""
    name = "chapters/soft_lookup"
    found = {}
    for prefix in ("zh/", ""):
        with opened(browser_context, site_url + f"{prefix}{name}.html") as (page, _):
            placeholders = page.evaluate(
                "() => [...document.querySelectorAll(\"input[name='q']\")].map((i) => i.placeholder)"
            )
            found[prefix] = (placeholders, page.evaluate(CITATIONS_JS))
    zh_placeholders, zh_citations = found["zh/"]
    assert zh_placeholders and zh_citations
    assert any(" 等" in c["text"] for c in zh_citations), zh_citations
    assert any(c["before"] == "（" for c in zh_citations), zh_citations
    assert edition_words_problems(zh_placeholders, zh_citations) == []
    en_placeholders, en_citations = found[""]
    assert len(edition_words_problems(en_placeholders, en_citations)) >= 2  # "Search", "et al."
