"""The Chinese edition: extract the English messages, update the catalogs, check them, build the edition.

    python tools/i18n.py extract   # English messages -> _build/gettext/**/*.pot (Sphinx's gettext builder)
    python tools/i18n.py update    # merge them into locales/zh_CN/LC_MESSAGES/**/*.po (changed ones go fuzzy)
    python tools/i18n.py check     # per-page counts; exit 1 on any untranslated, fuzzy or broken entry
    python tools/i18n.py build     # the Chinese edition into _build/html/zh (after the English build)

One source: the book's pages and the lab solutions. Sphinx cuts each page into messages (a paragraph, heading,
table cell, figure alt text, hint title) and translates the Chinese build message by message; a message whose
English changed no longer matches its translation, so `update` marks it fuzzy (Babel's msgmerge), the build shows
the new English, and `check` fails until a translator confirms it. See locales/README.md.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import time
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from qkv import i18n  # noqa: E402

LANGUAGE = "zh_CN"
BUILD = ROOT / "_build"
POT = BUILD / "gettext"
EDITION_DIR = "zh"  # _build/html/zh, as in qkv_editions in _config.yml
WIDTH = 100

# What must come through a translation unchanged: math, code, glue roles and cross-reference targets, link URLs.
MATH = re.compile(r"\$\$.+?\$\$|\$[^$]+\$", re.DOTALL)
CODE = re.compile(r"`[^`]+`")
ROLE = re.compile(r"\{([\w:-]+)\}`([^`]*)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _sphinx(builder: str, outdir: Path, doctrees: Path, language: str | None = None, fresh: bool = False) -> int:
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
    """The page's messages from Sphinx, plus those only a lab's solution has (model answers)."""
    pot = POT / f"{docname}.pot"
    with open(pot, "rb") as f:
        template = read_po(f)
    parts = docname.split("/")
    if len(parts) == 3 and parts[0] == "labs" and parts[1] == parts[2]:
        solution = ROOT / "solutions" / parts[1] / f"{parts[1]}.ipynb"
        for key in i18n.notebook_messages(json.loads(solution.read_text())):
            if key not in template:
                template.add(key)
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
        if msg.id and not msg.string and (msg.id in i18n.KEEP or _nothing_to_translate(str(msg.id))):
            msg.string = msg.id
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
        catalog = i18n.load_catalog(path)
        s = i18n.Stats.of(catalog)
        bad = [
            f"{str(m.id)[:60]!r}: {', '.join(b)}"
            for m in catalog
            if m.id and m.string and not m.fuzzy
            for b in [broken(str(m.id), str(m.string))]
            if b
        ]
        out[str(path.relative_to(base).with_suffix(""))] = {
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
    english = shown_in_english(args.language)
    print(
        f"the last Chinese build showed {sum(map(len, english.values()))} messages in English "
        f"({BUILD / EDITION_DIR / 'untranslated.json'})"
    )
    return 0 if done == total and not bad and not missing_pages and not english else 1


def build(args: argparse.Namespace) -> int:
    """The Chinese edition, built apart (its own doctrees) and copied into _build/html/zh."""
    started = time.perf_counter()
    out = BUILD / EDITION_DIR / "html"
    # A fresh environment each time (about half a minute with the execution cache): pages are re-read whenever
    # the catalogs, the English or the extensions changed, and untranslated.json always covers every page.
    rc = _sphinx("html", out, BUILD / EDITION_DIR / ".doctrees", language=args.language, fresh=True)
    if rc:
        return rc
    target = BUILD / "html" / EDITION_DIR
    shutil.copytree(out, target, dirs_exist_ok=True)
    print(f"Chinese edition built in {time.perf_counter() - started:.0f} s: open file://{target / 'index.html'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["extract", "update", "check", "build"])
    parser.add_argument("--language", default=LANGUAGE)
    args = parser.parse_args(argv)
    return {"extract": extract, "update": update, "check": check, "build": build}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
