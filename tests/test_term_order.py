"""Terms are explained before they are used: the course's pages read in `_toc.yml` order, with the glossary's terms.

The glossary (`chapters/glossary.md`) gives each term the page that treats it (its last column). A reader who
follows the table of contents must not meet a term before that page, unless the sentence sends them there: a
paragraph that links to the treating page may name the term ("the residual connections of {doc}`transformer`").
So the treating page is the first one that uses the term without such a link; where an earlier page explains the
term at its first use, the glossary must point at that page instead.

The pages are the course itself, chapters and labs in reading order. Left out: the preface, a map of the whole
course that names every chapter's subject, and the appendix (notes map, glossary, notation, bibliography,
teaching), which readers consult rather than read in order. Only the prose counts (Markdown cells, figure
captions and alt text), not code, math or the targets of links. A term is its glossary cell's English: each
comma-separated form, a trailing parenthesis giving more names ("recurrent neural network (RNN, GRU)"), a middle
one a second form ("truncated (local) attention"), plurals and hyphen-or-space spellings alike.
"""

from __future__ import annotations

import json
import posixpath
import re
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))  # the table of contents' reading order, shared with the book tests
from test_book_pages import toc_pages  # noqa: E402

FIRST_PAGE_READ = "chapters/soft_lookup"  # after the preface
PREREQUISITES = "chapters/preface"  # a glossary row pointing here is assumed knowledge, named in the preface
LAST_PAGE_READ = "chapters/at_scale"  # the appendix follows

MATH = re.compile(r"\$\$.+?\$\$|\$[^$\n]+\$", re.S)
CODE_SPAN = re.compile(r"`[^`\n]*`")
ROLE = re.compile(r"\{([\w:-]+)\}`([^`]*)`")
MD_LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```+|:::+)(.*)$")


def course_pages() -> list[str]:
    pages = toc_pages()
    return pages[pages.index(FIRST_PAGE_READ) : pages.index(LAST_PAGE_READ) + 1]


def markdown(page: str) -> str:
    path = next(p for p in (ROOT / f"{page}.ipynb", ROOT / f"{page}.md") if p.exists())
    if path.suffix == ".md":
        return path.read_text(encoding="utf-8")
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def prose(text: str) -> str:
    """What a reader reads: no code blocks, directive options, math, code spans, roles or HTML tags."""
    lines, in_code = [], None
    for line in text.splitlines():
        fence = FENCE.match(line.strip())
        if in_code:
            if fence and fence.group(1) == in_code:
                in_code = None
            continue
        if fence and fence.group(1).startswith("`") and not fence.group(2).strip().startswith("{"):
            in_code = fence.group(1)  # a code block; a ```{directive} keeps its caption
            continue
        if fence:  # a directive's fence: its argument is a title ("Going deeper: ..."), or a glue key (not prose)
            if not fence.group(2).strip().startswith("{glue"):
                lines.append(re.sub(r"^\{[^}]*\}", "", fence.group(2).strip()))
            continue
        if re.match(r"\s*:[\w-]+:(\s|$)", line) and not line.strip().startswith(":alt:"):
            continue  # a directive's option (":name:", ":class:"); ":alt:" is read aloud
        lines.append(line.replace(":alt:", ""))
    text = "\n".join(lines)
    text = ROLE.sub(" ", MATH.sub(" ", text))
    return re.sub(r"<[^>]+>", " ", CODE_SPAN.sub(" ", MD_LINK.sub("]", text)))


def links(page: str, paragraph: str) -> set[str]:
    """The pages a paragraph links to ({doc} roles and Markdown links), as document names."""
    here = posixpath.dirname(page)
    targets = [t.split("<")[-1].rstrip(">").strip() for r, t in ROLE.findall(paragraph) if r == "doc"]
    targets += [t.split("#")[0] for t in MD_LINK.findall(paragraph) if "://" not in t]
    out = set()
    for target in targets:
        target = re.sub(r"\.(ipynb|md)$", "", target)
        out.add(target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join(here, target)))
    return out


def forms(english: str) -> list[str]:
    """The spellings of a glossary term: 'query, query vector $q$' -> ['query', 'query vector']."""
    english = CODE_SPAN.sub("", MATH.sub("", english)).strip()
    trailing = re.fullmatch(r"(.+?)\s*\(([^()]+)\)", english)
    if trailing:  # more names of the same thing: "recurrent neural network (RNN, GRU)"
        return [trailing.group(1).strip(), *(f.strip() for f in trailing.group(2).split(","))]
    middle = re.fullmatch(r"(.*?)\s*\(([^()]+)\)\s*(.+)", english)
    if middle:  # "truncated (local) attention": truncated attention, local attention
        return [f"{middle.group(1)} {middle.group(3)}".strip(), f"{middle.group(2)} {middle.group(3)}".strip()]
    return [f.strip() for f in english.split(",") if f.strip()]


def pattern(form: str) -> re.Pattern:
    """The form as a whole word, plural or not, with hyphens and spaces interchangeable; an acronym (two
    capitals or more, RNN, RoPE) only in its own case."""
    words = [re.escape(w) for w in re.split(r"[\s-]+", form)]
    body = r"[\s-]*".join(words) if len(words) > 1 else words[0]
    flags = 0 if sum(c.isupper() for c in form) >= 2 else re.IGNORECASE
    return re.compile(rf"(?<![\w-]){body}(?:s|es)?(?![\w-])", flags)


@cache
def glossary() -> list[tuple[str, list[str], str]]:
    """(the English cell, its forms, the treating page) for each row of the glossary's tables."""
    rows = []
    for line in (ROOT / "chapters" / "glossary.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 4 or set(cells[0]) <= set("-") or cells[0] == "English":
            continue
        (target,) = links("chapters/glossary", cells[3]) or {""}
        rows.append((cells[0], forms(cells[0]), target))
    return rows


@cache
def paragraphs() -> list[tuple[str, str, str]]:
    """(page, the paragraph's Markdown, its prose) in reading order."""
    return [
        (page, para, prose(para))
        for page in course_pages()
        for para in re.split(r"\n\s*\n", markdown(page))
        if para.strip()
    ]


def early_uses(forms_: list[str], treating: str) -> list[str]:
    """The paragraphs before the treating page that use the term and do not link to that page."""
    patterns = [pattern(f) for f in forms_]
    order = course_pages()
    out = []
    for page, para, text in paragraphs():
        if order.index(page) >= order.index(treating):
            break
        match = next((m for p in patterns for m in [p.search(text)] if m), None)
        if match and treating not in links(page, para):
            sentence = text[max(0, match.start() - 100) : match.end() + 60]
            out.append(f"{page}: ...{' '.join(sentence.split())}...")
    return out


def test_the_glossary_parses_into_terms_and_pages():
    rows = glossary()
    assert len(rows) >= 80, len(rows)
    pages = set(course_pages()) | {PREREQUISITES}
    assert not [(e, t) for e, _, t in rows if t not in pages], "a glossary row points at no page of the course"
    by_cell = {e: f for e, f, _ in rows}
    assert by_cell["recurrent neural network (RNN, GRU)"] == ["recurrent neural network", "RNN", "GRU"]
    assert by_cell["truncated (local) attention"] == ["truncated attention", "local attention"]
    assert by_cell["query, query vector $q$"] == ["query", "query vector"]


def test_the_rule_finds_an_early_use_and_accepts_a_link():
    """The checks can fail: a use before the treating page counts, unless its paragraph links there."""
    head = pattern("multi-head attention")
    assert head.search("In Multi head attentions each") and not head.search("multi-headed")
    assert pattern("RNN").search("an RNN reads") and not pattern("RNN").search("rnn")
    para = "the residual connections and\nfeed-forward networks of {doc}`transformer`."
    assert links("chapters/multihead", para) == {"chapters/transformer"}
    assert links("chapters/soft_lookup", "the lab [x](../labs/soft_lookup/soft_lookup.ipynb)") == {
        "labs/soft_lookup/soft_lookup"
    }
    assert "feed-forward networks" in prose(para) and "transformer" not in prose(para)
    figure = prose("```{glue:figure} fig_key\n:alt: alt words\n:name: fig-x\n\ncaption words\n```")
    assert "caption words" in figure and "alt words" in figure and "fig" not in figure
    assert "x = 1" not in prose("```python\nx = 1\n```")


@pytest.mark.parametrize("english", [e for e, _, _ in glossary()])
def test_no_term_is_used_before_the_page_that_treats_it(english):
    ((forms_, treating),) = [(f, t) for e, f, t in glossary() if e == english]
    if treating == PREREQUISITES:  # assumed knowledge: the preface must say so, in its own words
        said = prose(markdown(PREREQUISITES))
        assert all(pattern(f).search(said) for f in forms_), f"the preface does not list {english!r} as assumed"
        return
    early = early_uses(forms_, treating)
    assert not early, (
        f"{english!r} is treated in {treating} (the glossary says), but used earlier without a link there; "
        "explain it where it is first used and point the glossary's chapter column at that page, or link the "
        f"sentence to the treating page ({len(early)} paragraphs; the first ones):\n  " + "\n  ".join(early[:3])
    )
