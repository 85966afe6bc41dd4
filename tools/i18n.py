"""The Chinese edition: extract the English messages, update the catalogs, check them, build the edition.

    python tools/i18n.py extract   # English messages -> _build/gettext/**/*.pot (Sphinx's gettext builder)
    python tools/i18n.py update    # merge them into locales/zh_CN/LC_MESSAGES/**/*.po (changed ones go fuzzy)
    python tools/i18n.py check     # per-page counts; exit 1 on any untranslated, fuzzy or broken entry
    python tools/i18n.py build     # the Chinese edition into _build/html/zh (after the English build)
    python tools/i18n.py grader    # the grader's messages -> locales/zh_CN/LC_MESSAGES/grader.po, compiled to .mo
    python tools/i18n.py diagrams  # the diagrams' labels -> .../diagrams.po, compiled to .mo, with the CJK font subset

One source: the book's pages and the lab solutions. Sphinx cuts each page into messages (a paragraph, heading,
table cell, figure alt text, hint title) and translates the Chinese build message by message; a message whose
English changed no longer matches its translation, so `update` marks it fuzzy (Babel's msgmerge), the build shows
the new English, and `check` fails until a translator confirms it. See locales/README.md.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import re
import shutil
import sys
import time
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from qkv import i18n  # noqa: E402

LANGUAGE = "zh_CN"
BUILD = ROOT / "_build"
POT = BUILD / "gettext"
EDITION_DIR = "zh"  # _build/html/zh, as in qkv_editions in _config.yml
WIDTH = 100
# The grader's messages (qkv.grading.messages): one more catalog beside the book's, compiled for the wheel.
GRADER = "grader"
# The diagrams' labels (qkv.diagrams, every `_("...", language)`): one more catalog, compiled for the package, and
# a subset of Noto Sans CJK SC (OFL 1.1, Debian's fonts-noto-cjk) that draws them and all of GB 2312 (below).
DIAGRAMS = "diagrams"
CJK_SOURCE = (Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"), 2)  # font 2 of the collection: SC
# GB 2312's rows: its symbols and full-width forms (rows 1-9), level 1 (3,755 common hanzi, rows 16-55) and level 2
# (3,008 more, rows 56-87): every character of everyday simplified Chinese, so that a student's own plot with Chinese
# labels draws too (qkv.figures.use_cjk_font). About 1.5 MB; level 1 alone would be 0.86 MB.
GB2312_ROWS = (range(0xA1, 0xAA), range(0xB0, 0xF8))
# matplotlib's warning for a character no font of the figure's family list draws (the figure shows a box).
GLYPH_MISSING = re.compile(r"Glyph \d+ \(.*?\) missing from (?:current )?font")
PLACEHOLDER = re.compile(r"\{(\w*)\}")
TAG = re.compile(r"</?\w+>")

# What must come through a translation unchanged: math, code, glue roles and cross-reference targets, link URLs.
MATH = re.compile(r"\$\$.+?\$\$|\$[^$]+\$", re.DOTALL)
CODE = re.compile(r"`[^`]+`")
ROLE = re.compile(r"\{([\w:-]+)\}`([^`]*)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _sphinx(
    builder: str, outdir: Path, doctrees: Path, language: str | None = None, fresh: bool = False, **config: object
) -> int:
    """Jupyter Book's own build (its config from _config.yml and _toc.yml) with a few overrides."""
    from jupyter_book.sphinx import build_sphinx

    overrides = {
        "external_toc_path": str(ROOT / "_toc.yml"),
        "latex_individualpages": False,
        "nitpicky": True,
        # The English build's execution cache: the notebooks' code is the same, so nothing runs again.
        "nb_execution_cache_path": str(BUILD / ".jupyter_cache"),
    }
    if language:
        overrides["language"] = language
    overrides.update(config)
    result = build_sphinx(
        ROOT,
        outdir,
        doctreedir=doctrees,
        use_external_toc=True,
        noconfig=True,
        path_config=str(ROOT / "_config.yml"),
        confoverrides=overrides,
        builder=builder,
        warningiserror=True,
        keep_going=True,
        freshenv=fresh,
    )
    return result if isinstance(result, int) else 1


def extract(args: argparse.Namespace) -> int:
    """Sphinx's gettext builder: one template per page, from the same (cached) build as the HTML."""
    shutil.rmtree(POT, ignore_errors=True)  # no template of a page that is gone
    return _sphinx("gettext", POT, BUILD / ".doctrees-gettext", fresh=True)


def _template(docname: str) -> Catalog:
    """The page's messages from Sphinx, plus those only a lab's solution has (model answers, its code's)."""
    pot = POT / f"{docname}.pot"
    with open(pot, "rb") as f:
        template = read_po(f)
    parts = docname.split("/")
    if len(parts) == 3 and parts[0] == "labs" and parts[1] == parts[2]:
        solution = json.loads((ROOT / "solutions" / parts[1] / f"{parts[1]}.ipynb").read_text())
        for key in i18n.notebook_messages(solution):
            if key not in template:
                template.add(key)
        for key in i18n.code_messages(solution):  # the self-checks' messages, hints and docstrings
            template.add(key, context=i18n.CODE_CONTEXT, auto_comments=["code: a Python string; keep {...} as is"])
    return template


def _docnames() -> list[str]:
    return sorted(str(p.relative_to(POT).with_suffix("")) for p in POT.rglob("*.pot") if p.stem != "sphinx")


def _nothing_to_translate(msgid: str) -> bool:
    """Only math, code, roles and punctuation (a table cell `$d_k$`), or already Chinese: it stays as it is."""
    return not re.search(
        r"[A-Za-z]", LINK.sub("", CODE.sub("", ROLE.sub("", MATH.sub("", msgid))))
    )  # roles before code spans


def merge(catalog: Catalog | None, template: Catalog, language: str = LANGUAGE) -> Catalog:
    """Babel's msgmerge: translations kept; an entry whose English changed is matched to its closest old entry
    and marked fuzzy (not used by the build, counted by `check`); entries with nothing to translate filled in."""
    if catalog is None:
        catalog = Catalog(locale=language, project="qkv", fuzzy=False)
    catalog.update(template, update_header_comment=False)
    for msg in catalog:
        msg.flags -= {"python-format", "python-brace-format"}  # prose, not format strings: "% of" is text here
        if msg.id and (not msg.string or msg.fuzzy) and (msg.id in i18n.KEEP or _nothing_to_translate(str(msg.id))):
            msg.string = msg.id  # also when msgmerge matched it to a neighbour: a new term 注意力图 is not 注意力
            msg.flags.discard("fuzzy")
    return catalog


def update(args: argparse.Namespace) -> int:
    """Merge the templates into the catalogs: translations kept, changed English fuzzy, vanished English dropped."""
    if not POT.is_dir():
        print(f"{POT} is missing: run `python tools/i18n.py extract` first", file=sys.stderr)
        return 1
    for docname in _docnames():
        path = i18n.catalog_path(ROOT, args.language, docname)
        catalog = merge(i18n.load_catalog(path) if path.exists() else None, _template(docname), args.language)
        if not len(catalog) and not path.exists():
            continue  # a page with nothing to translate
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as f:
            write_po(f, catalog, width=WIDTH, ignore_obsolete=True, omit_header=False, sort_output=False)
    print(f"updated {len(_docnames())} catalogs in {i18n.catalog_path(ROOT, args.language, '').parent}")
    return 0


def _tokens(pattern: re.Pattern, text: str) -> list[str]:
    return sorted(m.group(0) if pattern.groups == 0 else "|".join(m.groups()) for m in pattern.finditer(text))


_MD = None


def _emphasis(text: str) -> tuple[int, int, int, int]:
    """Bold and italic spans, the `*` a reader would see, and the deepest nesting of the spans, once MyST's
    tokenizer has rendered the text (a wrongly closed `**` nests the next bold inside it)."""
    global _MD
    _MD = _MD or i18n._parser()
    html = _MD.renderInline(text)
    html = re.sub(r"<code>.*?</code>|<span class=\"math[^\"]*\">.*?</span>", "", html, flags=re.DOTALL)
    depth = deepest = 0
    for tag in re.findall(r"</?(?:strong|em)>", html):
        depth += -1 if tag.startswith("</") else 1
        deepest = max(deepest, depth)
    return html.count("<strong>"), html.count("<em>"), html.count("*"), deepest


def broken(msgid: str, msgstr: str) -> list[str]:
    """What a translation lost or changed that must stay: math, code spans, roles' targets, link URLs."""
    problems = []
    bare = lambda text: ROLE.sub("", MATH.sub("", text))
    for name, pattern, text_id, text_str in (
        ("math", MATH, msgid, msgstr),
        ("code", CODE, bare(msgid), bare(msgstr)),
        ("link", LINK, msgid, msgstr),
    ):
        # Sets, not lists: a translation may repeat a symbol or say it once where English says it twice.
        if set(pattern.findall(text_id)) != set(pattern.findall(text_str)):
            problems.append(f"{name} differs")
    # Emphasis that CommonMark does not close: `**自测。**运行` (punctuation inside, a letter right after the
    # closing `**`) shows the stars. Keep the punctuation outside: `**自测**。运行`.
    if _emphasis(msgstr) != _emphasis(msgid):
        problems.append("emphasis not closed (put CJK punctuation outside **...**)")
    # A role keeps its name and target; its link text may be translated: {doc}`软查找 <soft_lookup>`.
    target = lambda text: sorted((r, t.split("<")[-1].rstrip(">").strip()) for r, t in ROLE.findall(text))
    if target(msgid) != target(msgstr):
        problems.append(f"roles differ: {target(msgid)} vs {target(msgstr)}")
    return problems


def stats(language: str = LANGUAGE) -> dict[str, dict]:
    """Per page: total, translated, fuzzy, untranslated, broken translations (for `check` and the tests)."""
    base = ROOT / i18n.LOCALES / language / "LC_MESSAGES"
    out = {}
    for path in sorted(base.rglob("*.po")):
        doc = str(path.relative_to(base).with_suffix(""))
        catalog = i18n.load_catalog(path)
        s = i18n.Stats.of(catalog)
        bad = [
            f"{str(m.id)[:60]!r}: {', '.join(b)}"
            for m in catalog
            if m.id and m.string and not m.fuzzy
            for b in [
                code_broken(str(m.id), str(m.string))
                if m.context == i18n.CODE_CONTEXT
                else broken(str(m.id), str(m.string))
                + (grader_broken(str(m.id), str(m.string)) if doc == GRADER else [])
            ]
            if b
        ]
        out[doc] = {
            "total": s.total,
            "translated": s.translated,
            "fuzzy": s.fuzzy,
            "untranslated": s.untranslated,
            "broken": bad,
        }
    return out


def shown_in_english(language: str = LANGUAGE) -> dict[str, list[str]]:
    """Per page, what the last translated build showed in English and the catalog does not keep on purpose.

    Catches what the catalogs cannot: an English paragraph that changed after the last `update`."""
    report = BUILD / EDITION_DIR / "untranslated.json"
    if not report.exists():
        return {}
    out = {}
    for doc, messages in json.loads(report.read_text(encoding="utf-8")).items():
        path = i18n.catalog_path(ROOT, language, doc)
        catalog = i18n.load_catalog(path) if path.exists() else None
        kept = {str(m.id) for m in catalog if m.id and m.string == m.id and not m.fuzzy} if catalog else set()
        left = [m for m in messages if m not in kept]
        if left:
            out[doc] = left
    return out


def check(args: argparse.Namespace) -> int:
    table = stats(args.language)
    missing_pages = [d for d in _docnames() if d not in table] if POT.is_dir() else []
    print(f"{'page':45s} {'total':>6s} {'done':>6s} {'fuzzy':>6s} {'todo':>6s} {'broken':>6s}")
    for doc, s in table.items():
        print(
            f"{doc:45s} {s['total']:6d} {s['translated']:6d} {len(s['fuzzy']):6d} "
            f"{len(s['untranslated']):6d} {len(s['broken']):6d}"
        )
    total = sum(s["total"] for s in table.values())
    done = sum(s["translated"] for s in table.values())
    print(f"{'all':45s} {total:6d} {done:6d}")
    bad = [f"{d}: {b}" for d, s in table.items() for b in s["broken"]]
    for line in bad:
        print("broken:", line, file=sys.stderr)
    for d in missing_pages:
        print(f"no catalog for {d} (run `python tools/i18n.py update`)", file=sys.stderr)
    stale = grader_stale(args.language)
    if stale:
        print(f"the grader's catalog: {stale} (run `python tools/i18n.py grader`)", file=sys.stderr)
    stale_diagrams = compiled_stale(DIAGRAMS, diagrams_mo(args.language), args.language)
    if stale_diagrams:
        print(f"the diagrams' catalog: {stale_diagrams} (run `python tools/i18n.py diagrams`)", file=sys.stderr)
    english = shown_in_english(args.language)
    print(
        f"the last Chinese build showed {sum(map(len, english.values()))} messages in English "
        f"({BUILD / EDITION_DIR / 'untranslated.json'})"
    )
    return (
        0 if done == total and not bad and not missing_pages and not english and not stale and not stale_diagrams else 1
    )


def code_broken(msgid: str, msgstr: str) -> list[str]:
    """A lab's code message is a Python string: the same expressions in braces, no new quote or backslash."""
    problems = []
    if sorted(i18n.PLACEHOLDERS.findall(msgid)) != sorted(i18n.PLACEHOLDERS.findall(msgstr)):
        problems.append(f"placeholders differ: {i18n.PLACEHOLDERS.findall(msgid)}")
    if not set(re.findall(r"[\"'\\]", msgstr)) <= set(re.findall(r"[\"'\\]", msgid)):
        problems.append("a quote or backslash that the English has not")
    return problems


def grader_broken(msgid: str, msgstr: str) -> list[str]:
    """A grader message's translation must keep its placeholders (filled in by name) and HTML tags."""
    problems = []
    if sorted(PLACEHOLDER.findall(msgid)) != sorted(PLACEHOLDER.findall(msgstr)):
        problems.append(f"placeholders differ: {PLACEHOLDER.findall(msgid)} vs {PLACEHOLDER.findall(msgstr)}")
    if sorted(TAG.findall(msgid)) != sorted(TAG.findall(msgstr)):
        problems.append("HTML tags differ")
    return problems


def grader_template() -> Catalog:
    """Every message the grader shows (its templates, status words, the specs' texts), with where each is used."""
    from qkv.grading.catalog import catalog_messages

    template = Catalog(project="qkv")
    for text, where in catalog_messages().items():
        template.add(text, auto_comments=[where])
    return template


def grader_mo(language: str = LANGUAGE) -> Path:
    from qkv.grading import messages

    return messages.LOCALE_DIR / language / "LC_MESSAGES" / f"{messages.DOMAIN}.mo"


def grader_stale(language: str = LANGUAGE) -> str:
    """What is wrong with the grader's compiled catalog ('' when current)."""
    return compiled_stale(GRADER, grader_mo(language), language)


def compiled_stale(name: str, mo: Path, language: str = LANGUAGE) -> str:
    """What is wrong with a compiled catalog: missing, or not what the .po translates now ('' when current)."""
    import gettext

    po = i18n.catalog_path(ROOT, language, name)
    if not po.exists():
        return f"no {po.relative_to(ROOT)}"
    if not mo.exists():
        return f"no {mo.relative_to(ROOT)}"
    want = {str(m.id): str(m.string) for m in i18n.load_catalog(po) if m.id and m.string and not m.fuzzy}
    with open(mo, "rb") as f:
        have = {k: v for k, v in gettext.GNUTranslations(f)._catalog.items() if k}
    return "" if have == want else f"{mo.relative_to(ROOT)} is stale against {po.relative_to(ROOT)}"


def _compile(name: str, template: Catalog, mo: Path, language: str) -> Catalog:
    """Merge ``template`` into the catalog ``name`` (changed English goes fuzzy, as for the book), then compile
    the catalog's current translations into ``mo``."""
    path = i18n.catalog_path(ROOT, language, name)
    old = i18n.load_catalog(path) if path.exists() else None
    if old is not None and {m.id for m in old if m.id} == {m.id for m in template if m.id}:
        template.creation_date = old.creation_date  # the same messages: rerunning changes no byte
    catalog = merge(old, template, language)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        write_po(f, catalog, width=WIDTH, ignore_obsolete=True, omit_header=False, sort_output=False)
    mo.parent.mkdir(parents=True, exist_ok=True)
    with open(mo, "wb") as f:
        write_mo(f, catalog, use_fuzzy=False)
    s = i18n.Stats.of(catalog)
    print(
        f"{path.relative_to(ROOT)}: {s.total} messages, {s.translated} translated, {len(s.fuzzy)} fuzzy, "
        f"{len(s.untranslated)} untranslated; compiled into {mo.relative_to(ROOT)}"
    )
    return catalog


def grader(args: argparse.Namespace) -> int:
    """The grader's messages into its catalog, compiled into the .mo that the package ships."""
    _compile(GRADER, grader_template(), grader_mo(args.language), args.language)
    return 0


def _table_headers(source: str) -> list[str]:
    """The string literals of each `show_table([...], ...)` header in ``source`` (figures.show_table's words)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "show_table":
            if node.args and isinstance(node.args[0], ast.List | ast.Tuple):
                out += [e.value for e in node.args[0].elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return [text for text in out if re.search(r"[A-Za-z]{2}", text)]  # "N", "d_k": nothing to translate


def diagrams_template() -> Catalog:
    """Every figure label and table word: the first argument of each `_()` and `N_()` call in qkv.diagrams and in
    the chapters' code cells (their figures.glue drawings), found by Babel's Python extractor, and the header
    literals of the chapters' `figures.show_table` calls."""
    from babel.messages.extract import extract

    sources = [(ROOT / "src" / "qkv" / "diagrams.py").read_text()]
    for page in sorted((ROOT / "chapters").glob("*.ipynb")):
        for cell in json.loads(page.read_text())["cells"]:
            if cell["cell_type"] == "code":
                code = "".join(cell["source"])
                sources.append(re.sub(r"(?m)^\s*[%!].*$", "", code))  # magics and shell lines are not Python
    template = Catalog(project="qkv")
    keywords = {"_": (1,), "N_": (1,)}
    for source in sources:
        for _line, text, _comments, _context in extract("python", io.BytesIO(source.encode()), keywords=keywords):
            template.add(text)  # no line numbers: an edit elsewhere in a page does not touch every entry
        for text in _table_headers(source):
            template.add(text)
    return template


def diagrams_mo(language: str = LANGUAGE) -> Path:
    from qkv import figures

    return figures.LOCALE_DIR / language / "LC_MESSAGES" / f"{figures.DOMAIN}.mo"


def gb2312_characters() -> str:
    """Every character of GB 2312 (decoded row by row with Python's codec; unassigned cells skipped)."""
    out = []
    for row in (r for rows in GB2312_ROWS for r in rows):
        for cell in range(0xA1, 0xFF):
            try:
                out.append(bytes([row, cell]).decode("gb2312"))
            except UnicodeDecodeError:
                pass
    return "".join(out)


def cjk_characters(catalog: Catalog) -> str:
    """The characters of the current translations, of GB 2312 and of the Tang quatrains the Transformer chapter's
    decoder writes (its attention figure labels the axes with them; a few lie outside GB 2312) that the Latin font
    (DejaVu Sans) does not draw."""
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    from qkv.corpora import read_text

    latin = FT2Font(font_manager.findfont("DejaVu Sans")).get_charmap()
    text = "".join(str(m.string) for m in catalog if m.id and m.string and not m.fuzzy)
    text += gb2312_characters() + read_text("tang")
    return "".join(sorted({c for c in text if ord(c) not in latin}))


def rename_font(font, family: str) -> None:
    """A subset is a modified font: it gets a family name of its own (the OFL reserves 'Source'), so that matplotlib
    takes this file, not a system-wide Noto Sans CJK SC that draws characters the subset lacks."""
    postscript = family.replace(" ", "") + "-Regular"
    names = {1: family, 3: f"{postscript};subset", 4: f"{family} Regular", 6: postscript, 16: family, 17: "Regular"}
    for record in list(font["name"].names):
        if record.nameID in names:
            font["name"].setName(
                names[record.nameID], record.nameID, record.platformID, record.platEncID, record.langID
            )
    cff = font["CFF "].cff
    cff.fontNames = [postscript]
    for key, value in (("FullName", f"{family} Regular"), ("FamilyName", family)):
        if hasattr(cff.topDictIndex[0], key):
            setattr(cff.topDictIndex[0], key, value)


def diagrams(args: argparse.Namespace) -> int:
    """The diagrams' labels into their catalog and .mo; the CJK font cut to the labels' characters and GB 2312."""
    from fontTools import subset
    from fontTools.ttLib import TTFont

    from qkv import figures as module

    catalog = _compile(DIAGRAMS, diagrams_template(), diagrams_mo(args.language), args.language)
    chars = cjk_characters(catalog)
    path, number = CJK_SOURCE
    font = TTFont(path, fontNumber=number, recalcTimestamp=False)  # the same labels give the same bytes
    options = subset.Options()
    options.name_IDs, options.layout_features, options.hinting = ["*"], [], False
    cutter = subset.Subsetter(options)
    cutter.populate(text=chars)
    cutter.subset(font)
    rename_font(font, module.CJK_FAMILY)
    font.save(module.CJK_FONT)
    print(f"{module.CJK_FONT.relative_to(ROOT)}: {len(chars)} characters, {module.CJK_FONT.stat().st_size:,} bytes")
    return 0


def glossary_terms() -> list[str]:
    """The Chinese terms of the glossary's tables (its 中文 column), each once: 位置编码, 多头注意力, ..."""
    terms: dict[str, None] = {}
    for line in (ROOT / "chapters" / "glossary.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) > 1:
            for term in re.findall(r"[\u4e00-\u9fff]{2,}", MATH.sub("", cells[1])):
                terms.setdefault(term)
    return list(terms)


def missing_glyphs(executed: Path) -> list[str]:
    """Every "Glyph ... missing from font(s)" a notebook printed while the book executed it (the executed copies in
    ``executed``, hidden cells included): a figure that shows boxes instead of characters."""
    found = []
    for path in sorted(executed.rglob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for number, cell in enumerate((c for c in cells if c["cell_type"] == "code"), start=1):
            for output in cell.get("outputs", []):
                text = output.get("text") or "".join(output.get("traceback", []))
                text = "".join(text) if isinstance(text, list) else text
                found += [
                    f"{path.relative_to(executed)}: code cell {number}: {m.group(0)}"
                    for m in GLYPH_MISSING.finditer(text)
                ]
    return found


def build(args: argparse.Namespace) -> int:
    """The Chinese edition, built apart (its own doctrees) and copied into _build/html/zh."""
    started = time.perf_counter()
    out = BUILD / EDITION_DIR / "html"
    # A fresh environment each time (about half a minute with the execution cache): pages are re-read whenever
    # the catalogs, the English or the extensions changed, and untranslated.json always covers every page.
    # Sphinx's Chinese search index cuts the text into words with jieba, which knows the book's terms from the glossary.
    # Without jieba Sphinx indexes no Chinese word at all, silently: stop instead.
    import importlib.util

    if args.language.startswith("zh") and importlib.util.find_spec("jieba") is None:
        print("jieba is missing (the Chinese search needs it): run `make setup`", file=sys.stderr)
        return 1
    terms = BUILD / EDITION_DIR / "search_terms.txt"
    terms.parent.mkdir(parents=True, exist_ok=True)
    terms.write_text("".join(f"{t}\n" for t in glossary_terms()), encoding="utf-8")
    rc = _sphinx(
        "html",
        out,
        BUILD / EDITION_DIR / ".doctrees",
        language=args.language,
        fresh=True,
        html_search_options={"dict": str(terms)},
    )
    if rc:
        return rc
    # A Chinese figure with boxes for characters fails the edition, as a Sphinx warning would (-W).
    missing = missing_glyphs(BUILD / EDITION_DIR / "jupyter_execute")
    for line in missing:
        print(f"missing glyph: {line}", file=sys.stderr)
    if missing:
        return 1
    target = BUILD / "html" / EDITION_DIR
    shutil.copytree(out, target, dirs_exist_ok=True)
    print(f"Chinese edition built in {time.perf_counter() - started:.0f} s: open file://{target / 'index.html'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["extract", "update", "check", "build", "grader", "diagrams"])
    parser.add_argument("--language", default=LANGUAGE)
    args = parser.parse_args(argv)
    commands = {"extract": extract, "update": update, "check": check, "build": build, "grader": grader}
    commands["diagrams"] = diagrams
    return commands[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
