"""Sphinx extension for the book's two editions (English at ``_build/html/``, Chinese at ``_build/html/zh/``).

Registered in _config.yml under ``sphinx.local_extensions``; the Chinese edition is the same build with
``language: zh_CN`` (``tools/i18n.py build``), translated by Sphinx's gettext catalogs in ``locales/``. It does:

1. **A language switch on every page**, in the article header next to the theme's buttons: a plain relative link
   to the same page in the other edition (works from disk and on any web server), plus ``<link rel="alternate"
   hreflang=...>`` in the head. The editions and their folders come from the ``qkv_editions`` config value.
2. **A CJK font stack** (``static/qkv-i18n.css``): Noto Sans CJK SC and the usual system CJK fonts are placed before
   the generic ``sans-serif`` (after it, a browser never reaches them). Code and math fonts are left alone.
3. **Translatable ``<summary>`` text.** The labs fold hints in raw HTML ``<details><summary>Hint</summary>``;
   Sphinx's gettext ignores raw HTML, so the summary text is made a message of its own (``SummaryText``).
4. **Figure alt text in the catalogs.** myst-nb's ``gettext`` builder keeps only text outputs, so the images that
   carry the alt text (``mystnb.image.alt`` in a cell's metadata) never reached the catalog; image types are added
   to its priority list. Translation itself is Sphinx's: ``Locale`` translates an image's ``alt``.
5. **The rest of the page in the edition's language**: the book's title (``book_title``), the parts' captions of
   the table of contents, and the launch and download buttons of lab pages, which give the translated lab notebook.
6. **Display math is not a message**: Sphinx would offer every equation for translation; math is the same in
   every language, so equations are marked untranslatable.
7. **Chinese labels for myst-nb's folded cells** ("Show code cell source"), which myst-nb does not translate.
8. **Glued numbers in translated paragraphs.** Sphinx parses each translation as a small document of its own, where
   myst-nb's ``{glue:text}`` role finds no glue data ("No key ... found in glue data"); the notebook's renderer,
   which holds that data, is handed on to those small documents, so the Chinese text shows the same computed
   numbers as the English.
9. **What the reader still sees in English.** In a translated build, every message that ``Locale`` left in English
   (no translation, a fuzzy one, or one kept on purpose, like a formula) is written to ``untranslated.json`` beside
   the HTML folder; ``tools/i18n.py check`` reports those the catalogs do not account for, so a changed English
   paragraph whose catalog was never updated cannot pass unnoticed. Such paragraphs also get the class
   ``untranslated`` in the HTML, which ``qkv-i18n.css`` marks for translators.
10. **Diagrams in the edition's language.** A page glues each diagram once per edition (``qkv.diagrams.glue_key``:
   ``name`` and ``name_zh_CN``, drawn in the same cached execution); in a translated build ``{glue:figure} name``
   shows ``name_<language>`` when the page glued one, so the Chinese edition needs no second execution.
11. **Citation labels and the search box in the edition's language** (``citations.py``): ``（Vaswani 等，2017）``,
   the notes cited by their Chinese name (``citation_names``), and the theme's search placeholder (``search``).
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.locale import init as init_locale
from sphinx.transforms import SphinxTransform
from sphinx.util.i18n import docname_to_domain
from sphinx.util.nodes import extract_messages
from sphinx.writers.html5 import HTML5Translator

from qkv.i18n import SUMMARY  # the labs' notebooks are translated with the same messages

from . import citations

HERE = Path(__file__).parent
LATIN = re.compile(r"[A-Za-z]")
# myst-nb's labels for folded cells, per language. The book folds only code (hide-input), so no "{type}" is needed.
CODE_PROMPTS = {"zh_CN": ("显示代码", "隐藏代码")}
IMAGE_TYPES = ("image/svg+xml", "image/png", "image/jpeg", "image/gif")


class SummaryText(nodes.raw, addnodes.translatable):
    """Raw HTML whose ``<summary>`` texts are messages (it renders as the raw HTML it holds)."""

    def extract_original_messages(self) -> list[str]:
        return [m.group(2).strip() for m in SUMMARY.finditer(self.astext())]

    def apply_translated_message(self, original_message: str, translated_message: str) -> None:
        def swap(m: re.Match) -> str:
            return (
                m.group(1) + translated_message + m.group(3) if m.group(2).strip() == original_message else m.group(0)
            )

        text = SUMMARY.sub(swap, self.astext())
        self.children = [nodes.Text(text)]
        self.rawsource = text
        self["translated"] = True

    def preserve_original_messages(self) -> None:
        pass


class MarkMessages(SphinxTransform):
    """Before ``Locale`` (priority 20): raw HTML with a ``<summary>`` becomes a ``SummaryText``; display math is
    marked untranslatable."""

    default_priority = 15

    def apply(self, **kwargs: Any) -> None:
        for math in self.document.findall(nodes.math_block):
            math["translatable"] = False
        for image in self.document.findall(nodes.image):
            image["qkv_original_alt"] = image.get("alt", "")  # Locale changes ``alt`` but marks nothing
        for raw in list(self.document.findall(nodes.raw)):
            if isinstance(raw, SummaryText) or "html" not in raw.get("format", "").split():
                continue
            if SUMMARY.search(raw.astext()):
                new = SummaryText(raw.rawsource, raw.astext(), **raw.attributes)
                new.source, new.line = raw.source, raw.line
                raw.replace_self(new)


class TranslateTocCaptions(SphinxTransform):
    """The parts' captions of the table of contents ("Labs"), which sphinx-external-toc inserts (priority 100)
    after ``Locale`` has run: translated here from the page's catalog, where the gettext build put them."""

    default_priority = 101

    def apply(self, **kwargs: Any) -> None:
        if (self.config.language or "en") == "en" or self.app.builder.name == "gettext":
            return
        toctrees = [t for t in self.document.findall(addnodes.toctree) if t.get("caption")]
        if not toctrees:
            return
        domain = docname_to_domain(self.env.docname, self.config.gettext_compact)
        dirs = [str(Path(self.env.srcdir, d)) for d in self.config.locale_dirs]
        catalog, _ = init_locale(dirs, self.config.language, domain)
        for toctree in toctrees:
            toctree["caption"] = catalog.gettext(toctree["caption"])


class RecordUntranslated(SphinxTransform):
    """After ``Locale`` (20) and Sphinx's own progress count (25): the messages this page shows in English."""

    default_priority = 26

    def apply(self, **kwargs: Any) -> None:
        if (self.config.language or "en") == "en" or self.app.builder.name == "gettext":
            return
        left = []
        for node, msg in extract_messages(self.document):
            if isinstance(node, SummaryText):
                if not node.get("translated"):
                    left.append(msg)
            elif isinstance(node, nodes.image):
                if node.get("alt") and node["alt"] == node.get("qkv_original_alt"):
                    left.append(msg)
            elif node.get("translated") is False and LATIN.search(msg):  # "练习" from sphinx-exercise is not English
                left.append(msg)
                node["classes"] = [*node.get("classes", []), "untranslated"]
        store = getattr(self.env, "qkv_untranslated", {})
        store[self.env.docname] = left
        self.env.qkv_untranslated = store


def write_untranslated(app: Sphinx, exception: Exception | None) -> None:
    store = getattr(app.env, "qkv_untranslated", None)
    if exception is None and store is not None:
        known = {doc: store.get(doc, []) for doc in sorted(app.env.found_docs)}
        path = Path(app.outdir).parent / "untranslated.json"
        path.write_text(json.dumps(known, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def purge_untranslated(app: Sphinx, env: Any, docname: str) -> None:
    getattr(env, "qkv_untranslated", {}).pop(docname, None)


def merge_untranslated(app: Sphinx, env: Any, docnames: set, other: Any) -> None:
    env.qkv_untranslated = {**getattr(env, "qkv_untranslated", {}), **getattr(other, "qkv_untranslated", {})}


def _edition_root(language: str, editions: dict[str, dict[str, str]]) -> str:
    return (editions.get(language) or editions.get(language.split("_")[0]) or {}).get("dir", "")


def add_language_switch(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    """Relative links from this page to the same page in every other edition."""
    editions: dict[str, dict[str, str]] = app.config.qkv_editions
    here = _edition_root(app.config.language or "en", editions)
    # From this page up to the root of this edition, then up out of it to the site root.
    up = "../" * pagename.count("/") + "../" * len([p for p in here.split("/") if p])
    links = []
    for language, edition in editions.items():
        if edition.get("dir", "") == here:
            continue
        folder = "/".join(p for p in edition.get("dir", "").split("/") if p)
        url = f"{up}{folder + '/' if folder else ''}{pagename}{app.builder.link_suffix}"
        hreflang = language.replace("_", "-")
        links.append({"url": url, "label": edition["label"], "hreflang": hreflang, "title": edition["title"]})
        context["metatags"] = context.get("metatags", "") + (
            f'\n<link rel="alternate" hreflang="{hreflang}" href="{html.escape(url)}" />'
        )
    context["qkv_language_links"] = links


def point_launch_buttons_at_translated_labs(
    app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any
) -> None:
    """A lab page of a translated edition launches that edition's notebook (labs/zh/<lab>/<lab>.ipynb)."""
    folder = app.config.qkv_editions.get(app.config.language or "en", {}).get("labs")
    if not folder or not pagename.startswith("labs/"):
        return
    old, new = f"{pagename}.ipynb", f"{folder}/{pagename[len('labs/') :]}.ipynb"

    def fix(buttons: list) -> None:
        for button in buttons:
            if isinstance(button.get("url"), str) and button["url"].startswith(("http://", "https://")):
                button["url"] = button["url"].replace(old, new)
            fix(button.get("buttons", []))

    fix(context.get("header_buttons", []))


def download_translated_labs(app: Sphinx, exception: Exception | None) -> None:
    """The download button of a translated lab page (``_sources/labs/<lab>/<lab>.ipynb``) gives the translated lab."""
    folder = app.config.qkv_editions.get(app.config.language or "en", {}).get("labs")
    if exception is not None or not folder or app.builder.format != "html":
        return
    for docname in app.env.found_docs:
        source = Path(app.srcdir, folder, *docname.split("/")[1:]).with_suffix(".ipynb")
        target = Path(app.outdir, "_sources", docname).with_suffix(".ipynb")
        if docname.startswith("labs/") and source.is_file() and target.is_file():
            target.write_bytes(source.read_bytes())


def configure(app: Sphinx, config: Config) -> None:
    config.templates_path = [*config.templates_path, str(HERE / "templates")]
    config.html_static_path = [*config.html_static_path, str(HERE / "static")]
    options = dict(config.html_theme_options or {})
    header_end = options.get("article_header_end", ["article-header-buttons.html"])
    if isinstance(header_end, str):
        header_end = [header_end]
    if "qkv-language-switch.html" not in header_end:
        options["article_header_end"] = ["qkv-language-switch.html", *header_end]
    edition = config.qkv_editions.get(config.language or "en", {})
    if edition.get("search"):
        options["search_bar_text"] = edition["search"]  # Jupyter Book's "Search this book..."
    config.html_theme_options = options
    style = citations.register(config.language or "en", edition.get("citation_names", {}))
    if style and config.bibtex_reference_style == "author_year":
        config.bibtex_reference_style = style
    config.nb_mime_priority_overrides = [
        *config.nb_mime_priority_overrides,
        *(("gettext", mime, rank) for rank, mime in enumerate(IMAGE_TYPES, start=1)),
    ]
    if edition.get("book_title"):
        config.html_title = edition["book_title"]
    prompts = CODE_PROMPTS.get(config.language or "en")
    if prompts:
        config.nb_code_prompt_show, config.nb_code_prompt_hide = prompts


class _KeepRenderer(dict):
    """A document's attributes that hand ``nb_renderer`` to ``env.temp_data`` when myst-nb pops it after parsing."""

    def __init__(self, attributes: dict, temp_data: dict) -> None:
        super().__init__(attributes)
        self.temp_data = temp_data

    def pop(self, key: str, *default: Any) -> Any:
        value = super().pop(key, *default)
        if key == "nb_renderer":
            self.temp_data["qkv_nb_renderer"] = value
        return value


def _share_glue_data() -> None:
    """Wrap myst-nb's notebook parser: keep the page's renderer, lend it to the page's translated snippets."""
    from myst_nb.sphinx_ import Parser

    if getattr(Parser.parse, "qkv_shares_glue", False):
        return
    original = Parser.parse

    def parse(self: Parser, inputstring: str, document: nodes.document) -> None:
        env = document.settings.env
        if str(document.current_source or "").endswith("<translated>"):
            if "qkv_nb_renderer" in env.temp_data:
                document["nb_renderer"] = env.temp_data["qkv_nb_renderer"]
            try:
                return original(self, inputstring, document)
            finally:  # the snippet's nodes keep a reference to it, and a renderer cannot be pickled
                document.attributes.pop("nb_renderer", None)
        document.attributes = _KeepRenderer(document.attributes, env.temp_data)
        try:
            original(self, inputstring, document)
        finally:
            document.attributes = dict(document.attributes)

    parse.qkv_shares_glue = True  # type: ignore[attr-defined]
    Parser.parse = parse  # type: ignore[method-assign]


def _edition_figure():
    """myst-nb's ``glue:figure``, taking the edition's own glued figure (``<key>_<language>``) where there is one."""
    from myst_nb.ext.glue.directives import PasteFigureDirective
    from myst_nb.ext.glue.utils import RetrievalError, retrieve_glue_data

    class EditionFigure(PasteFigureDirective):
        def run(self):
            language = self.state.document.settings.env.config.language or "en"
            if language != "en":
                try:
                    retrieve_glue_data(self.state.document, f"{self.arguments[0]}_{language}")
                    self.arguments[0] = f"{self.arguments[0]}_{language}"
                except RetrievalError:
                    pass  # not a diagram: the same figure in every edition
            return super().run()

    return EditionFigure


def visit_summary_text(self: HTML5Translator, node: SummaryText) -> None:
    self.visit_raw(node)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value(
        "qkv_editions",
        {"en": {"dir": "", "label": "English", "title": "Read this page in English"}},
        "html",
    )
    app.add_node(SummaryText, html=(visit_summary_text, None))
    _share_glue_data()
    app.add_directive_to_domain("glue", "figure", _edition_figure(), override=True)
    app.add_transform(MarkMessages)
    app.add_transform(TranslateTocCaptions)
    app.add_transform(RecordUntranslated)
    app.connect("env-purge-doc", purge_untranslated)
    app.connect("env-merge-info", merge_untranslated)
    app.connect("build-finished", write_untranslated)
    app.connect("build-finished", download_translated_labs)
    app.connect("config-inited", configure, priority=900)  # after Jupyter Book has set the theme options
    app.connect("html-page-context", add_language_switch)
    app.connect("html-page-context", point_launch_buttons_at_translated_labs, priority=600)  # after the theme's
    app.add_css_file("qkv-i18n.css")
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
