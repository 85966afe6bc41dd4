"""One term per concept: the glossary (`chapters/glossary.md`, its 中文 column) is the term base of every catalog.

A review of the Chinese edition found concepts written several ways (the library 代码库 / 课程库 / 课程代码库, head
size 头的维度 / 头维度 / 头的宽度, ...). VARIANTS lists, per concept, the words the glossary does not use for it; a
catalog whose translations use one fails, and the glossary must list the concept with a term of its own. The
expected terms come from the glossary page, not from the catalogs under test.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

ROOT = Path(__file__).resolve().parents[1]
CATALOGS = sorted((ROOT / "locales" / "zh_CN" / "LC_MESSAGES").rglob("*.po"))

# concept (the glossary's English cell) -> words a translation used for it that are not the glossary's term
VARIANTS = {
    "library `qkv`": ("课程库", "课程代码库"),
    "head size $d_k$": ("头维度", "头的宽度"),
    "leak": ("泄露",),
    "notebook cell": ("单元格",),
    "number of parameters": ("参数个数", "参数的个数"),
    "encoder block": ("Transformer 块",),
    "mask": ("屏蔽",),
}
# Writing rather than a term: an "et al." after an author's name is 等人 in Chinese text.
STYLE = {"et al.": "等人"}
# Parts of a message that are not prose: code spans, math, roles and link targets.
NOT_PROSE = re.compile(r"`[^`]*`|\$\$.+?\$\$|\$[^$]+\$|\]\([^)]*\)", re.S)


def glossary() -> dict[str, str]:
    """English term -> its 中文 cell, from every table of the glossary page."""
    rows = {}
    for line in (ROOT / "chapters" / "glossary.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) >= 2 and not set(cells[0]) <= set("-"):
            rows[cells[0]] = cells[1]
    return rows


def translations(path: Path) -> list[tuple[str, str]]:
    with open(path, "rb") as f:
        return [(str(m.id), NOT_PROSE.sub(" ", str(m.string))) for m in read_po(f) if m.id and m.string]


def test_the_glossary_gives_one_term_for_each_concept():
    terms = glossary()
    missing = [concept for concept in VARIANTS if concept not in terms]
    assert not missing, f"concepts without a glossary row: {missing}"
    for concept, variants in VARIANTS.items():
        assert not any(v in terms[concept] for v in variants), (concept, terms[concept])


@pytest.mark.parametrize("path", CATALOGS, ids=lambda p: str(p.relative_to(CATALOGS[0].parents[1])))
def test_catalogs_use_the_glossarys_terms(path):
    terms, problems = glossary(), []
    for msgid, text in translations(path):
        for concept, variants in VARIANTS.items():
            problems += [
                f"{v!r} for {concept!r} (glossary: {terms[concept]}) in {msgid[:60]!r}" for v in variants if v in text
            ]
        problems += [f"{en!r} rather than {zh} in {msgid[:60]!r}" for en, zh in STYLE.items() if en in text]
        # Grading points are not attention scores: 分数 means the latter everywhere (the glossary's 注意力分数).
        if re.search(r"\bpoints?\b", msgid) and not re.search(r"\bscor", msgid) and "分数" in text:
            problems.append(f"'points' as 分数 in {msgid[:60]!r}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("msgid", "msgstr", "said"),
    [
        ("the library", "课程库里的函数", "课程库"),
        ("Smith et al. show", "Smith et al. 证明", "et al."),
        ("3 points", "3 个分数", "points"),
    ],
)
def test_the_check_catches_a_variant(tmp_path, msgid, msgstr, said):
    """The catalog test can fail: a variant, an English "et al." and points as 分数 are each caught."""
    po = tmp_path / "page.po"
    po.write_text(f'msgid "{msgid}"\nmsgstr "{msgstr}"\n', encoding="utf-8")
    with pytest.raises(AssertionError, match=re.escape(said)):
        test_catalogs_use_the_glossarys_terms(po)


# First use on a page gives the English in parentheses, as d2l-zh does: 查询（query）. The core terms, each the
# glossary's (checked below), longest first so that 注意力分数 is not read as 注意力.
FIRST_USE = {
    "attention": "注意力",
    "self-attention": "自注意力",
    "cross-attention": "交叉注意力",
    "multi-head attention": "多头注意力",
    "attention score": "注意力分数",
    "attention weights": "注意力权重",
    "scaled dot product": "缩放点积",
    "scaled dot-product attention": "缩放点积注意力",
    "query": "查询",
    "token": "词元",
    "mask": "掩码",
    "causal mask": "因果掩码",
    "positional encoding": "位置编码",
    "encoder block": "编码器层",
}
# Quoted text (the notes' own sentences), code, math, roles and links (a chapter's title) introduce no term.
NOT_INTRODUCING = re.compile(r"“[^”]*”|「[^」]*」|`[^`]*`|\$\$.+?\$\$|\$[^$]+\$|\[[^\]]*\]\([^)]*\)", re.S)
EXEMPT_PAGES = {"chapters/glossary", "chapters/bibliography"}  # the glossary gives the English in its own column


# Words that hold a core term but name something else (填充掩码 is not 掩码): read whole, never a first use.
OTHER_WORDS = {"局部掩码", "图掩码", "注意力机制"}


def _other_words() -> set[str]:
    """The glossary's other Chinese terms that contain a core term, and OTHER_WORDS."""
    words = set(OTHER_WORDS)
    for cell in glossary().values():
        for word in re.split(r"[;；,，、\s]+", re.sub(r"\*\(.*?\)\*|\$[^$]*\$|\(.*?\)", " ", cell)):
            if word not in FIRST_USE.values() and any(term in word for term in FIRST_USE.values()):
                words.add(word)
    return words


def term_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, English) of each core term in the prose of ``text``, longest match first, left to right."""
    hidden = [(m.start(), m.end()) for m in NOT_INTRODUCING.finditer(text)]
    words = [*FIRST_USE.items(), *(("", w) for w in _OTHER)]
    by_length = sorted(words, key=lambda kv: -len(kv[1]))
    found, i = [], 0
    while i < len(text):
        skip = next((end for start, end in hidden if start <= i < end), None)
        if skip is not None:
            i = skip
            continue
        hit = next(((en, zh) for en, zh in by_length if text.startswith(zh, i)), None)
        if hit:
            if hit[0]:
                found.append((i, i + len(hit[1]), hit[0]))
            i += len(hit[1])
        else:
            i += 1
    return found


_OTHER = _other_words()


def gives_english(text: str, end: int, english: str) -> bool:
    after = text[end:].lstrip("*")
    return re.match(rf"（{re.escape(english)}[）：，；]", after, re.I) is not None


def test_first_use_terms_are_the_glossarys():
    """Each core term is its glossary row's (scaled dot-product attention: the scaled dot product's, with 注意力)."""
    terms = glossary()
    for english, chinese in FIRST_USE.items():
        key = "scaled dot product" if english == "scaled dot-product attention" else english
        row = next((zh for en, zh in terms.items() if en.split(",")[0].split("$")[0].strip() == key), None)
        assert row is not None and (chinese in row or row in chinese), (english, chinese, row)


@pytest.mark.parametrize("path", CATALOGS, ids=lambda p: str(p.relative_to(CATALOGS[0].parents[1])))
def test_first_use_on_each_page_gives_the_english(path):
    """The first sentence of a page that uses a core term follows it with the English: 查询（query）."""
    page = str(path.relative_to(CATALOGS[0].parents[1]).with_suffix(""))
    if page in EXEMPT_PAGES or page == "grader":
        return
    with open(path, "rb") as f:
        sentences = [str(m.string) for m in read_po(f) if m.id and m.string and not m.context and "。" in str(m.string)]
    seen, problems = set(), []
    for text in sentences:
        for start, end, english in term_spans(text):
            if english not in seen:
                seen.add(english)
                if not gives_english(text, end, english):
                    problems.append(
                        f"{text[max(0, start - 10) : end + 10]!r}: first {text[start:end]} without （{english}）"
                    )
    assert not problems, "\n".join(problems)
