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
