"""The Chinese edition: complete catalogs, a mechanism that marks changed English, notebooks translated from them.

`test_every_message_is_translated` and `test_the_chinese_build_shows_nothing_in_english` fail until the
translators have finished every page (locales/README.md); the others check the machinery and the pages already
translated. The book tests read the build of `make book` (English in _build/html, Chinese in _build/html/zh).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from babel.messages.catalog import Catalog
from i18n_tool import TOOL

from qkv import i18n

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
# Pages translated in full as the proof of the mechanism; they must stay complete.
DONE = ["chapters/preface", "chapters/glossary", "chapters/notation", "chapters/soft_lookup"]


def toc_docnames() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    names = [toc["root"]]
    for part in toc.get("parts", []):
        names += [c["file"] for c in part.get("chapters", [])]
    return [re.sub(r"\.(md|ipynb)$", "", n) for n in names]


def test_every_page_has_a_catalog():
    missing = [d for d in toc_docnames() if not i18n.catalog_path(ROOT, "zh_CN", d).is_file()]
    assert not missing, f"pages without a catalog (run `make i18n`): {missing}"


def test_every_message_is_translated():
    """0 untranslated, 0 fuzzy, 0 broken (math, code, roles, links changed) in every catalog."""
    table = TOOL.stats()
    todo = {
        d: (len(s["untranslated"]), len(s["fuzzy"]), len(s["broken"]))
        for d, s in table.items()
        if s["untranslated"] or s["fuzzy"] or s["broken"]
    }
    assert not todo, "pages with (untranslated, fuzzy, broken) entries:\n" + "\n".join(
        f"  {d}: {t}" for d, t in todo.items()
    )


@pytest.mark.parametrize("docname", DONE)
def test_translated_pages_stay_complete(docname):
    s = TOOL.stats()[docname]
    assert s["total"] > 0 and s["translated"] == s["total"], (docname, s["untranslated"][:3], s["fuzzy"][:3])
    assert not s["broken"], s["broken"]


def test_the_chinese_build_shows_nothing_in_english():
    """What the last Chinese build really showed in English: catches English edited after the last `update`."""
    report = ROOT / "_build" / "zh" / "untranslated.json"
    assert report.is_file(), "no Chinese build: run `make book` first (make test does)"
    english = TOOL.shown_in_english()
    assert not english, "\n".join(f"{d}: {len(m)} messages, e.g. {m[0][:80]!r}" for d, m in english.items())


@pytest.mark.parametrize("docname", DONE)
def test_translated_pages_show_nothing_in_english(docname):
    report = ROOT / "_build" / "zh" / "untranslated.json"
    assert report.is_file(), "no Chinese build: run `make book` first (make test does)"
    assert TOOL.shown_in_english().get(docname, []) == []


def test_a_changed_paragraph_goes_fuzzy_and_stays_english():
    """The mechanism itself: edit the English, update the catalog, and the old translation is no longer used."""
    old = Catalog(locale="zh_CN")
    old.add("The weights sum to one.", "权重之和为 1。")
    old.add("Keys are rows of $K$.", "键是 $K$ 的各行。")
    template = Catalog()
    template.add("The weights sum to one, always.")  # edited
    template.add("Keys are rows of $K$.")  # unchanged
    template.add("$d_k$")  # nothing to translate
    merged = TOOL.merge(old, template)
    edited = merged.get("The weights sum to one, always.")
    assert edited.fuzzy and edited.string == "权重之和为 1。"
    assert merged.get("Keys are rows of $K$.").string == "键是 $K$ 的各行。"
    assert merged.get("$d_k$").string == "$d_k$"
    stats = i18n.Stats.of(merged)
    assert (stats.total, stats.translated, len(stats.fuzzy)) == (3, 2, 1)
    nb = {
        "cells": [
            {
                "cell_type": "markdown",
                "id": "a",
                "metadata": {},
                "source": "The weights sum to one, always.\n\nKeys are rows of $K$.",
            }
        ]
    }
    out, missing = i18n.translate_notebook(nb, merged)
    assert out["cells"][0]["source"] == "The weights sum to one, always.\n\n键是 $K$ 的各行。"
    assert missing == ["The weights sum to one, always."]


def test_a_new_term_in_chinese_is_not_matched_to_an_old_one():
    """A glossary cell already in Chinese is its own translation, even where msgmerge finds a neighbour for it."""
    old = Catalog(locale="zh_CN")
    old.add("注意力", "注意力")
    template = Catalog()
    template.add("注意力图")
    merged = TOOL.merge(old, template).get("注意力图")
    assert (merged.string, merged.fuzzy) == ("注意力图", False)


def test_broken_translations_are_caught():
    assert TOOL.broken("Use `q @ k.T` and $\\sqrt{d_k}$.", "用 `q @ k.T` 和 $\\sqrt{d_k}$。") == []
    assert TOOL.broken("Use `q @ k.T`.", "用 q @ k.T。") == ["code differs"]
    assert TOOL.broken("Divide by $\\sqrt{d_k}$.", "除以 $\\sqrt{d}$。") == ["math differs"]
    assert TOOL.broken("See {doc}`Soft lookup <soft_lookup>`.", "见 {doc}`软查找 <soft_lookup>`。") == []
    assert TOOL.broken("See {doc}`soft_lookup`.", "见 {doc}`scaling`。") != []
    assert TOOL.broken("[PyTorch](https://pytorch.org)", "[PyTorch](https://pytorch.org/zh)") == ["link differs"]


def test_translate_notebook_keeps_code_metadata_and_markers():
    catalog = Catalog(locale="zh_CN")
    for en, zh in [
        ("Exercise 1 (2 points)", "练习 1（2 分）"),
        ("first item", "第一项"),
        ("a | cell", "一个单元格"),
        ("Hint", "提示"),
        ("A long paragraph that goes on over two lines.", "一个跨两行的长段落。"),
        ("The model answer.", "参考答案。"),
        ("$x$", "$x$"),
    ]:
        catalog.add(en, zh)
    md = (
        "## Exercise 1 (2 points)\n\n- first item\n- second item\n\n| a \\| cell | $x$ |\n|---|---|\n\n"
        "<details><summary>Hint</summary>\n\nA long paragraph that goes\non over two lines.\n</details>"
    )
    nb = {
        "cells": [
            {"cell_type": "markdown", "id": "m", "metadata": {"nbgrader": {"grade_id": "t"}}, "source": md},
            {
                "cell_type": "code",
                "id": "c",
                "metadata": {},
                "source": "# first item\nprint('Hint')",
                "outputs": [],
                "execution_count": None,
            },
            {
                "cell_type": "markdown",
                "id": "w",
                "metadata": {},
                "source": "### BEGIN SOLUTION\nThe model answer.\n### END SOLUTION",
            },
        ]
    }
    out, missing = i18n.translate_notebook(nb, catalog)
    text = out["cells"][0]["source"]
    assert text.startswith("## 练习 1（2 分）\n\n- 第一项\n- second item\n\n| 一个单元格 | $x$ |")
    assert "<details><summary>提示</summary>\n\n一个跨两行的长段落。\n</details>" in text
    assert out["cells"][1] == nb["cells"][1] and out["cells"][0]["metadata"] == nb["cells"][0]["metadata"]
    assert out["cells"][2]["source"] == "### BEGIN SOLUTION\n参考答案。\n### END SOLUTION"
    assert missing == ["second item"]


def test_lab_catalogs_hold_every_message_of_the_solutions():
    """The Chinese labs come from the solutions: every message they need (Markdown and code) is in the lab's
    catalog."""
    for lab in sorted(p.name for p in (ROOT / "solutions").iterdir() if (p / f"{p.name}.ipynb").is_file()):
        nb = json.loads((ROOT / "solutions" / lab / f"{lab}.ipynb").read_text(encoding="utf-8"))
        catalog = i18n.load_catalog(i18n.catalog_path(ROOT, "zh_CN", f"labs/{lab}/{lab}"))
        absent = [m for m in i18n.notebook_messages(nb) if m not in catalog]
        absent += [m for m in i18n.code_messages(nb) if catalog.get(m, context=i18n.CODE_CONTEXT) is None]
        assert not absent, f"{lab}: messages not in the catalog (run `make i18n`): {absent[:3]}"


def _links(html: Path) -> dict[str, str]:
    text = html.read_text(encoding="utf-8")
    return dict(re.findall(r'<a href="([^"]+)" class="btn btn-sm qkv-language-switch" hreflang="([^"]+)"', text))


@pytest.mark.parametrize("docname", toc_docnames())
def test_every_page_switches_to_its_counterpart_and_back(docname):
    english, chinese = HTML / f"{docname}.html", HTML / "zh" / f"{docname}.html"
    assert english.is_file() and chinese.is_file(), "run `make book` first (make test does)"
    to_zh = [href for href, lang in _links(english).items() if lang == "zh-CN"]
    to_en = [href for href, lang in _links(chinese).items() if lang == "en"]
    assert len(to_zh) == 1 and len(to_en) == 1, (to_zh, to_en)
    assert (english.parent / to_zh[0]).resolve() == chinese.resolve()
    assert (chinese.parent / to_en[0]).resolve() == english.resolve()
    assert '<html lang="zh-CN"' in chinese.read_text(encoding="utf-8")


def test_glued_numbers_are_the_same_in_both_editions():
    """The translated paragraphs quote the very numbers the English ones do (myst-nb glue, one execution)."""
    number = re.compile(r'<span class="pasted-text">([^<]+)</span>')
    en = number.findall((HTML / "chapters" / "soft_lookup.html").read_text(encoding="utf-8"))
    zh = number.findall((HTML / "zh" / "chapters" / "soft_lookup.html").read_text(encoding="utf-8"))
    assert len(en) >= 10 and en == zh
