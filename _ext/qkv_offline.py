r"""Sphinx extension for the qkv book: pages that load with no JavaScript error and no internet.

Registered in _config.yml under `sphinx.local_extensions`. It does these small things:

1. **Each inline script once.** Sphinx 7.4 writes an inline script (one added with ``add_js_file(None, body=...)``)
   twice when an extension adds it after the HTML builder was created: ``Sphinx.add_js_file`` hands the builder the
   filename ``None``, and ``StandaloneHTMLBuilder.prepare_writing`` re-adds every registered script with
   ``filename or ''``; ``None != ''``, so the de-duplication in ``add_js_file`` misses it (fixed upstream in
   sphinx-doc/sphinx#13402, Sphinx 8.2, which Jupyter Book 1 cannot use). sphinx-thebe adds
   ``const THEBE_JS_URL = ...`` that way (in ``env-before-read-docs``), so every page threw
   ``SyntaxError: Identifier 'THEBE_JS_URL' has already been declared``; ``launch_buttons.thebe: false`` does not
   help, because the script is added whatever that setting says. sphinx-togglebutton's ``var togglebuttonSelector``
   was doubled the same way (harmless, being ``var``). Here each page's script list keeps the first of equal
   scripts, comparing ``None`` and ``''`` as equal, which is exactly upstream's fix.
2. **Vendored assets only where asked.** MathJax, RequireJS and the ipywidgets manager are served from
   ``assets/vendor/`` (copied from npm by ``tools/vendor_assets.py``). If someone adds a ``_static/`` folder,
   Jupyter Book would add every ``.js`` and ``.css`` under every static path to every page, hundreds of MathJax
   components included; such entries are removed again.
3. **A clear error when the assets are missing**, instead of a book that silently needs the internet.
4. **MathJax on every page.** Sphinx loads MathJax only on pages that contain math, but the navigation sidebar of
   every page shows every page's title, and a title may hold math (``why divide by $\sqrt{d_k}$?``); on a page
   without math of its own that title stayed raw TeX. The local copy costs no network, so load it everywhere.
5. **Alt text for figures drawn inside widgets.** myst-nb gives a cell's image outputs the alt text of the cell's
   ``mystnb: image: alt:`` metadata, but an image that a widget draws (a plot in an ``ipywidgets.Output`` under a
   slider) is made in the browser by the widget manager, which writes no ``alt``. Here each widget view of a cell
   with that metadata is wrapped in ``<div class="qkv-widget-alt" data-qkv-alt="...">``, and
   ``assets/qkv/widgets-config.js`` copies the text onto every image the manager puts inside it.
6. **Accessibility fixes for the theme's markup** (``assets/qkv/a11y.js``, on every page): names that differ from
   the visible text, decorative icons with titles, slider handles without a name; see that file.
7. **No widget state without a widget.** A page whose sliders live only in the notebook (their cell removed from
   the page, a glued figure shown instead) still carries the executed notebook's widget state, which myst-nb
   embeds whatever the page shows; the widget manager then loads for nothing. Such a page drops the state.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util import logging

logger = logging.getLogger(__name__)

# Files the pages load, relative to assets/ (the html_static_path that becomes _static/ in the HTML).
REQUIRED_ASSETS = (
    "vendor/mathjax/tex-mml-chtml.js",
    "vendor/requirejs/require.js",
    "vendor/html-manager/embed-amd.js",
    "qkv/widgets-config.js",
    "qkv/a11y.js",
)
OWN_PREFIXES = ("vendor/", "qkv/")


def _asset_name(entry: Any) -> str:
    return str(entry[0] if isinstance(entry, (tuple, list)) else entry)


def drop_auto_added_assets(app: Sphinx, config: Config) -> None:
    """Undo Jupyter Book's "add every .js/.css under the static paths to every page" for our own folders."""
    for key in ("html_js_files", "html_css_files"):
        entries = list(config[key] or [])
        kept = [e for e in entries if not _asset_name(e).startswith(OWN_PREFIXES)]
        if len(kept) != len(entries):
            config[key] = kept


def check_assets(app: Sphinx) -> None:
    if app.builder.format != "html":
        return
    static_dirs = [Path(app.confdir, p) for p in app.config.html_static_path if isinstance(p, str)]
    for name in REQUIRED_ASSETS:
        if not any((d / name).is_file() for d in static_dirs):
            logger.warning(
                "qkv_offline: assets/%s is missing, so the book would need the internet for math and widgets. "
                "Run `make book`, or `npm ci --ignore-scripts && python tools/vendor_assets.py`.",
                name,
                type="qkv",
                subtype="assets",
            )


def _script_key(script: Any) -> tuple:
    filename = getattr(script, "filename", script) or ""
    priority = getattr(script, "priority", 0)
    attributes = getattr(script, "attributes", {}) or {}
    return (str(filename), priority, tuple(sorted((k, str(v)) for k, v in attributes.items())))


def dedupe_scripts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    seen: set[tuple] = set()
    unique = []
    for script in scripts:
        key = _script_key(script)
        if key not in seen:
            seen.add(key)
            unique.append(script)
    if len(unique) != len(scripts):
        # In place: the builder restores this same list after the page, and later handlers append to it.
        scripts[:] = unique


WIDGET_VIEW = '<script type="application/vnd.jupyter.widget-view+json">'
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def drop_unused_widget_state(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    """Item 7: the widget state of a page that shows no widget view is not written."""
    scripts = context.get("script_files")
    if not scripts or WIDGET_VIEW in str(context.get("body", "")):
        return
    kept = [s for s in scripts if (getattr(s, "attributes", {}) or {}).get("type") != WIDGET_STATE]
    if len(kept) != len(scripts):
        scripts[:] = kept  # in place, as dedupe_scripts does


def widget_alt_text(app: Sphinx, doctree: nodes.document) -> None:
    """Wrap the widget views of a cell that has ``mystnb: image: alt:`` in a div carrying that text (item 5)."""
    for cell in doctree.findall(nodes.container):
        if cell.get("nb_element") != "cell_code":
            continue
        mystnb = (cell.get("cell_metadata") or {}).get("mystnb") or {}
        alt = (mystnb.get("image") or {}).get("alt") or (mystnb.get("figure") or {}).get("alt")
        if not alt:
            continue
        for raw in cell.findall(nodes.raw):
            if raw.get("format") == "html" and WIDGET_VIEW in raw.astext() and "qkv-widget-alt" not in raw.astext():
                text = f'<div class="qkv-widget-alt" data-qkv-alt="{html.escape(str(alt), quote=True)}">{raw.astext()}</div>'
                raw.replace_self(nodes.raw(text=text, format="html"))


def setup(app: Sphinx) -> dict[str, Any]:
    app.set_html_assets_policy("always")  # MathJax on every page (item 4 above)
    app.add_js_file("qkv/a11y.js")  # item 6 above, on every page
    app.connect("config-inited", drop_auto_added_assets, priority=900)
    app.connect("builder-inited", check_assets)
    app.connect("doctree-read", widget_alt_text)
    # Late, after the extensions that add per-page scripts (MathJax, myst-nb's widget scripts) have run.
    app.connect("html-page-context", dedupe_scripts, priority=900)
    app.connect("html-page-context", drop_unused_widget_state, priority=901)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
