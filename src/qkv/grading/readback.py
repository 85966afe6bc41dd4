"""Reading a finished English text back into the templates it was made from, so that it can be translated.

The grader records its feedback lines in English (they are cached with the results, whatever the language of the
reports); :class:`Reader` finds the template and the placeholders' texts of such a line, placeholder by
placeholder, and fills in the template's translation. Used by ``messages.Translator.text``.

Layer: grader side, the bottom; imports only the standard library.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Container, Iterable
from functools import cache

# How Translator.text reads a placeholder in a finished English text. A name not listed is kept as it is
# (code names, shapes, a student's name).
NUMBERS = frozenset({"n", "failed", "count", "cell", "bad", "size", "seconds", "signal", "code", "mb", "seed"})
NUMBER = re.compile(r"[-+]?\d[\d.]*(e[-+]?\d+)?%?")
MESSAGES = frozenset({"what", "where", "label", "checks", "status"})  # always one of our messages
MAYBE = frozenset({"why", "note", "reason", "error"})  # ours, or text from elsewhere (an exception)


def parts(text: str) -> list[tuple[str, str | None]]:
    """``[(literal, field after it or None), ...]``: ``"a {x} b"`` -> ``[("a ", "x"), (" b", None)]``."""
    return [(lit, name) for lit, name, _, _ in string.Formatter().parse(text)]


class Reader:
    """``parse(english)`` reads ``english`` against ``templates`` (English, with ``{placeholders}``) and fills in
    their translations by ``gettext``; ``known``: the messages the catalog translates; ``separator`` joins the
    items of a list (see ``_parse`` for what it returns)."""

    def __init__(
        self, gettext: Callable[[str], str], known: Container[str], templates: Iterable[str], separator: str
    ) -> None:
        self._gettext = gettext
        self._known = known
        self._templates = [(t, parts(t)) for t in templates if "{" in t]
        self._separator = separator
        self.parse = cache(self._parse)  # a line's pieces recur in its parses

    def _parse(self, english: str) -> tuple[str, int, bool] | None:
        """``english`` translated, how many of its characters our messages cover, and whether all of it is
        ours (no placeholder kept as unknown text); None when no message covers it. A known message whole,
        else the template whose reading covers most."""
        if english in self._known:  # a whole message of ours (a shape label may read the same in Chinese)
            return self._gettext(english), len(english), True
        best = None
        for template, parts in self._templates:
            for params in _matches(english, parts):
                maybe = {k: self._param(k, v) for k, v in params.items()}
                read = {k: r for k, r in maybe.items() if r is not None}
                if len(read) < len(maybe):
                    continue
                own = sum(len(lit) for lit, _ in parts)
                covered = own + sum(r[1] for r in read.values())
                # The reading that covers most; of equal ones, the outermost template that says most
                # ("value 1 of the result is wrong in ..." is about value 1, not "value 1 of (... is wrong)").
                if best is None or (covered, own) > best[0]:
                    filled = {k: r[0] for k, r in read.items()}
                    exact = all(r[2] for r in read.values())
                    best = (covered, own), self._gettext(template).format(**filled), exact
        return (best[1], best[0][0], best[2]) if best else None

    def _param(self, name: str, value: str) -> tuple[str, int, bool] | None:
        """A placeholder's text read by its kind; None when it cannot be that kind (the reading is wrong)."""
        if name in NUMBERS:
            return (value, 0, True) if NUMBER.fullmatch(value) else None
        if name == "functions":  # names as they are, each maybe with its code cell
            items = [self.parse(v) or (v, 0, True) for v in value.split(", ")]
            return self._separator.join(v for v, _, _ in items), sum(c for _, c, _ in items), True
        if name in MESSAGES:  # wholly ours, or this reading is wrong
            parsed = self.parse(value)
            return parsed if parsed and parsed[2] else None
        if name in MAYBE:
            return self.parse(value) or (value, 0, False)
        return value, 0, True


def _matches(text: str, parts: list[tuple[str, str | None]], at: int = 0) -> list[dict[str, str]]:
    """Every way ``text[at:]`` fills the placeholders of ``parts`` (each with a non-empty text)."""
    (lit, name), rest = parts[0], parts[1:]
    if not text.startswith(lit, at):
        return []
    at += len(lit)
    if name is None:
        return [{}] if at == len(text) else []
    if not rest:  # the placeholder ends the template
        return [{name: text[at:]}] if at < len(text) else []
    found, end = [], text.find(rest[0][0], at + 1)
    while end >= 0:
        found += [{name: text[at:end], **tail} for tail in _matches(text, rest, end)]
        end = text.find(rest[0][0], end + 1)
    return found
