"""Translated notebooks from the book's gettext catalogs (``locales/<language>/LC_MESSAGES/<page>.po``).

The book is translated by Sphinx: each paragraph, heading, table cell, ``<summary>`` and figure alt text of a page
is one message, keyed by its English MyST source. Students open notebooks, not HTML, so the Chinese labs are made
the same way from the same catalogs: :func:`translate_notebook` cuts each Markdown cell into the blocks that MyST
(and so Sphinx) cuts it into, and replaces each block whose translation is current. In code cells only the
messages are translated: the string literals a student reads (self-check messages, hints, docstrings), keyed by
their text with the context ``code``. A message without a current translation stays English, and
:func:`notebook_messages` and :func:`code_messages` list the messages a notebook needs. ``tools/i18n.py`` drives the book side (see locales/README.md).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po
from markdown_it import MarkdownIt
from markdown_it.token import Token

__all__ = ["CODE_CONTEXT", "KEEP", "LOCALES", "Stats", "catalog_path", "code_messages", "load_catalog"]
__all__ += ["notebook_messages", "translate_code", "translate_notebook"]

LOCALES = "locales"
# Messages whose "translation" is the English text itself: nbgrader's answer stub, which the grader looks for.
KEEP = frozenset({"YOUR ANSWER HERE"})
# nbgrader's markers in Markdown answer cells (they parse as headings) must stay exactly as they are.
NBGRADER_MARKER = re.compile(r"^(BEGIN|END) (SOLUTION|HIDDEN TESTS)$")
SUMMARY = re.compile(r"(<summary>)(.*?)(</summary>)", re.DOTALL)
BLOCKS_WITH_TEXT = {"paragraph_open", "heading_open", "th_open", "td_open"}


def _parser() -> MarkdownIt:
    """The tokenizer MyST uses for the book (same extensions as _config.yml), so blocks match Sphinx's messages."""
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    config = MdParserConfig(
        enable_extensions={"amsmath", "dollarmath", "colon_fence", "deflist", "html_image", "substitution"}
    )
    return create_md_parser(config, RendererHTML)


def catalog_path(course: Path, language: str, docname: str) -> Path:
    """``locales/<language>/LC_MESSAGES/<docname>.po`` (one catalog per page, ``gettext_compact = False``)."""
    return Path(course) / LOCALES / language / "LC_MESSAGES" / f"{docname}.po"


def load_catalog(path: Path) -> Catalog:
    with open(path, "rb") as f:
        return read_po(f)


def _message_key(text: str) -> str:
    return text.replace("\n", " ").strip()  # what Sphinx's extract_messages does with a node's source


@dataclass
class _Block:
    """One message in a Markdown cell: its key and how to put a translation back into the source lines."""

    key: str
    line: int  # first source line
    end: int  # one past the last source line
    kind: str  # "block" (whole lines), "cell" (a table cell within a line), "summary" (raw HTML)
    first: str = ""  # the block's first line of text, without the container's markers ("- ", "## ", "> ")


def _blocks(source: str, md: MarkdownIt) -> list[_Block]:
    tokens = md.parse(source)
    found: list[_Block] = []
    for i, tok in enumerate(tokens):
        if tok.type in BLOCKS_WITH_TEXT and i + 1 < len(tokens) and tokens[i + 1].type == "inline":
            inline: Token = tokens[i + 1]
            key = _message_key(inline.content)
            if not key or NBGRADER_MARKER.match(key):
                continue
            start, end = inline.map or tok.map or (0, 0)
            kind = "cell" if tok.type in ("th_open", "td_open") else "block"
            found.append(_Block(key, start, end, kind, inline.content.split("\n")[0]))
        elif tok.type == "html_block":
            start, end = tok.map or (0, 0)
            for m in SUMMARY.finditer(tok.content):
                found.append(_Block(m.group(2).strip(), start, end, "summary"))
    return found


def notebook_messages(nb: dict, md: MarkdownIt | None = None) -> list[str]:
    """Every message of a notebook's Markdown cells, in order, once each."""
    md = md or _parser()
    seen: dict[str, None] = {}
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            for block in _blocks(_source(cell), md):
                seen.setdefault(block.key)
    return list(seen)


def _source(cell: dict) -> str:
    src = cell["source"]
    return src if isinstance(src, str) else "".join(src)


def _current(catalog: Catalog, key: str) -> str | None:
    """The translation of ``key`` if it is there and not fuzzy, else None."""
    msg = catalog.get(key)
    if msg is None or msg.fuzzy or not msg.string:
        return None
    return msg.string if isinstance(msg.string, str) else msg.string[0]


def _replace_in_line(line: str, old: str, new: str, start: int) -> tuple[str, int]:
    at = line.find(old, start)
    if at < 0:  # a table cell's text has its pipes unescaped; the source has them escaped
        old = old.replace("|", "\\|")
        at = line.find(old, start)
    if at < 0:
        raise ValueError(f"cannot find {old!r} in {line!r}")
    return line[:at] + new + line[at + len(old) :], at + len(new)


def _translate_markdown(source: str, catalog: Catalog, md: MarkdownIt, missing: list[str]) -> str:
    lines = source.split("\n")
    blocks = _blocks(source, md)
    # Work bottom-up so that replacing a block does not move the lines of the blocks above it.
    by_line: dict[int, list[_Block]] = {}
    for b in blocks:
        by_line.setdefault(b.line, []).append(b)
    for line_no in sorted(by_line, reverse=True):
        cursor = 0
        for b in by_line[line_no]:
            new = _current(catalog, b.key)
            if new is None:
                missing.append(b.key)
                continue
            if new == b.key:
                continue  # kept as it is (a formula, a stub): the source's own line breaks stay
            if b.kind == "summary":
                for n in range(b.line, b.end):
                    lines[n] = SUMMARY.sub(
                        lambda m: m.group(1) + new + m.group(3) if m.group(2).strip() == b.key else m.group(0), lines[n]
                    )
            elif b.kind == "cell":
                lines[b.line], cursor = _replace_in_line(lines[b.line], b.key, new.replace("|", "\\|"), cursor)
            else:
                first = lines[b.line]
                prefix = first[: first.rfind(b.first)] if b.first in first else ""
                indent = " " * len(prefix)
                body = new.split("\n")
                lines[b.line : b.end] = [prefix + body[0], *(indent + rest for rest in body[1:])]
    return "\n".join(lines)


def translate_notebook(nb: dict, catalog: Catalog, md: MarkdownIt | None = None) -> tuple[dict, list[str]]:
    """A copy of ``nb`` with its Markdown translated; also the messages that had no current translation.

    Cell ids and metadata (nbgrader's grade ids and points) stay exactly as they are; in code cells only the
    messages (string literals, :func:`code_messages`) change.
    """
    md = md or _parser()
    out = copy.deepcopy(nb)
    missing: list[str] = []
    for cell in out["cells"]:
        if cell["cell_type"] == "markdown":
            text = _translate_markdown(_source(cell), catalog, md, missing)
        elif _has_messages(cell):
            text = translate_code(_source(cell), catalog, missing)
        else:
            continue
        cell["source"] = text if isinstance(nb["cells"][0]["source"], str) else text.splitlines(keepends=True)
    return out, list(dict.fromkeys(missing))


@dataclass
class Stats:
    """Counts for one catalog: messages, current translations, fuzzy ones, untranslated ones."""

    total: int = 0
    translated: int = 0
    fuzzy: list[str] = field(default_factory=list)
    untranslated: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, catalog: Catalog) -> Stats:
        s = cls()
        for msg in catalog:
            if not msg.id:
                continue  # the header
            s.total += 1
            if msg.fuzzy:
                s.fuzzy.append(str(msg.id))
            elif msg.string:
                s.translated += 1
            else:
                s.untranslated.append(str(msg.id))
        return s


# The labs' code: its messages (self-check messages, hints, docstrings) are string literals, translated in the
# Chinese lab like its Markdown; everything else in a code cell (names, numbers, keys, grade ids) stays as it is.
CODE_CONTEXT = "code"  # the catalogs' msgctxt of a code message (Sphinx's book pages look up no context)
WORDS = re.compile(r"[A-Za-z]{2,}")
PLACEHOLDERS = re.compile(r"(?<!\{)\{(?!\{)[^{}]*\}")
# Text drawn into a figure is the figures' business (their labels and font), not a message of the lab's code.
FIGURE_ARGS = {"xlabel", "ylabel", "title", "label", "description", "suptitle", "set_title", "loc"}
FIGURE_ARGS |= {"set_xlabel", "set_ylabel", "text", "annotate", "legend", "colorbar"}
# A lab's setup cell sets the language of qkv.selfcheck's own words; the generator writes in the edition's.
LANGUAGE_CALL = re.compile(r'\buse_language\("en"\)')


@dataclass
class _Literal:
    """Adjacent string literals (Python joins them) that make one message: its key and where it is in the source."""

    start: tuple[int, int]
    end: tuple[int, int]
    key: str
    fmt: bool  # an f-string (the key's placeholders are Python expressions)
    quote: str


def _parts(token: str) -> tuple[str, str, str]:
    """``f"abc"`` -> ("f", '"', "abc"): prefix, quote, the text between the quotes as written."""
    at = min(i for i in (token.find('"'), token.find("'")) if i >= 0)
    prefix, rest = token[:at].lower(), token[at:]
    quote = rest[:3] if rest[:3] in ('"""', "'''") else rest[0]
    return prefix, quote, rest[len(quote) : -len(quote)]


def _literals(source: str) -> list[_Literal]:
    """The messages among the string literals of a code cell (text with spaces and words, not a figure's)."""
    import io
    import tokenize

    found: list[_Literal] = []
    group: list[tokenize.TokenInfo] = []
    calls, last = [""], ["", ""]  # the enclosing calls' names; the two meaningful tokens before a literal

    def close() -> None:
        parts = [_parts(t.string) for t in group]
        figure = calls[-1] in FIGURE_ARGS or (last[1] == "=" and last[0] in FIGURE_ARGS)
        if parts and not figure and all(set(p) <= {"f"} for p, _, _ in parts) and len({q for _, q, _ in parts}) == 1:
            fmt = any(p == "f" for p, _, _ in parts)
            key = "".join(t if p == "f" or not fmt else t.replace("{", "{{").replace("}", "}}") for p, _, t in parts)
            if WORDS.search(PLACEHOLDERS.sub("", key)) and re.search(r"\s", PLACEHOLDERS.sub("", key)):
                found.append(_Literal(group[0].start, group[-1].end, key, fmt, parts[0][1]))
        group.clear()

    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.STRING:
            group.append(tok)
        elif tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
            close()
            if tok.string in "([{":
                calls.append(last[1] if tok.string == "(" else "")
            elif tok.string in ")]}" and len(calls) > 1:
                calls.pop()
            last[:] = [last[1], tok.string]
    close()
    return found


def code_messages(nb: dict) -> list[str]:
    """Every message of a notebook's code cells, in order, once each (their msgctxt is ``CODE_CONTEXT``)."""
    seen: dict[str, None] = {}
    for cell in nb["cells"]:
        if _has_messages(cell):
            for lit in _literals(_source(cell)):
                seen.setdefault(lit.key)
    return list(seen)


def _has_messages(cell: dict) -> bool:
    """A code cell a student reads (the install cell, removed from the book, holds only a pip requirement)."""
    return cell["cell_type"] == "code" and "remove-cell" not in cell.get("metadata", {}).get("tags", [])


def _offset(lines: list[str], pos: tuple[int, int]) -> int:
    return sum(len(line) for line in lines[: pos[0] - 1]) + pos[1]


def translate_code(source: str, catalog: Catalog, missing: list[str]) -> str:
    """``source`` with each message's literals replaced by one literal holding its current translation."""
    lines = source.splitlines(keepends=True)
    for lit in reversed(_literals(source)):
        msg = catalog.get(lit.key, context=CODE_CONTEXT)
        new = None if msg is None or msg.fuzzy or not msg.string else str(msg.string)
        if new is None:
            missing.append(lit.key)
            continue
        start, end = _offset(lines, lit.start), _offset(lines, lit.end)
        source = source[:start] + ("f" if lit.fmt else "") + lit.quote + new + lit.quote + source[end:]
        lines = source.splitlines(keepends=True)
    locale = catalog.locale  # Babel's zh_Hans_CN; gettext's name is zh_CN
    language = "_".join(filter(None, (locale.language, locale.territory))) if locale else "en"
    return LANGUAGE_CALL.sub(f'use_language("{language}")', source)
