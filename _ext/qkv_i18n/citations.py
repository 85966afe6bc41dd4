"""Citation labels in the edition's language: ``（Vaswani 等，2017）`` on a Chinese page, not ``[Vaswani et al., 2017]``.

sphinxcontrib-bibtex formats a citation with a referencing style (``bibtex_reference_style``, author_year here)
whose words ("et al.", "and") and brackets are fixed in English. A translated edition registers its own variant of
author_year: the edition's separators and brackets, and authors' names from the edition's ``citation_names``
(``qkv_editions`` in _config.yml): a corporate author such as ``{Anonymous study notes}`` has a name in Chinese.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pybtex.plugin
from pybtex.style.template import join
from sphinxcontrib.bibtex.plugin import register_plugin
from sphinxcontrib.bibtex.style.names.last import LastNameStyle
from sphinxcontrib.bibtex.style.referencing import BracketStyle, PersonStyle
from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle

# Per language: the words between authors, "et al.", and the brackets of a citation.
WORDS = {
    "zh_CN": {"sep": "、", "and": " 和 ", "others": " 等", "left": "（", "right": "）", "between": "；", "year": "，"},
}


def style_name(language: str) -> str:
    return f"qkv_author_year_{language}"


def register(language: str, names: dict[str, str]) -> str | None:
    """Register the edition's referencing style (and its name style); its name, or None for an English edition."""
    words = WORDS.get(language)
    if words is None:
        return None

    class EditionNames(LastNameStyle):
        """Last names, or the edition's own name for an author the edition names (``citation_names``)."""

        def format(self, person, abbr=True):
            written = " ".join(person.prelast_names + person.last_names).replace("{", "").replace("}", "")
            return join[names[written]] if written in names else super().format(person, abbr)

    name_style = f"qkv_last_{language}"
    pybtex.plugin.register_plugin("pybtex.style.names", name_style, EditionNames, force=True)

    def brackets() -> BracketStyle:
        return BracketStyle(left=words["left"], right=words["right"], sep=words["between"])

    @dataclass
    class EditionAuthorYear(AuthorYearReferenceStyle):
        bracket_textual: BracketStyle = field(default_factory=brackets)
        bracket_parenthetical: BracketStyle = field(default_factory=brackets)
        bracket_author: BracketStyle = field(default_factory=brackets)
        bracket_label: BracketStyle = field(default_factory=brackets)
        bracket_year: BracketStyle = field(default_factory=brackets)
        person: PersonStyle = field(
            default_factory=lambda: PersonStyle(
                style=name_style, sep=words["sep"], sep2=words["and"], last_sep=words["and"], other=words["others"]
            )
        )
        author_year_sep: str = words["year"]
        text_reference_sep: str = ""
        post_text_sep: str = words["year"]

    register_plugin("sphinxcontrib.bibtex.style.referencing", style_name(language), EditionAuthorYear, force=True)
    return style_name(language)
