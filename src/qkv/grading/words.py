"""How the grader's messages are made, kept and rendered: a :class:`Template` (an English text with named
``{placeholders}``, defined in ``messages``), the :class:`Msg` made of one and its placeholders' values, and the
:class:`Translator` that renders a message in a language from the gettext catalog.

A grader decision produces a message (``WRONG_SHAPE(where=THE_RESULT(), got="(2,)", expected="(3,)")``), never
finished English; results keep messages (cached as JSON, :meth:`Msg.to_json`) and a report renders them at the
end (``translator("zh")(msg)``). A placeholder's value is a number, a text that is not ours and stays as it is (a
student's exception, a name, a shape), a nested message, a :class:`Known` text of the catalog (a spec's case
label), or a tuple of them (joined by the language's separator). ``str(msg)`` is the English, for logs, tests and
the sandbox's exceptions.

Layer: the bottom, beside ``protocol``; imports only the standard library, and is copied into the sandbox (with
``messages``: a function stopped at its time limit, a broken return-type contract raise exceptions that carry a
message).
"""

from __future__ import annotations

import gettext
import re
import string
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Union

__all__ = ["LANGUAGES", "STATUS_WORDS", "TEMPLATES", "Known", "Msg", "Param", "Template", "Translator", "translator"]

DOMAIN = "qkv_grade"
LOCALE_DIR = Path(__file__).parent / "locale"
# `--lang` -> (gettext's locale, the HTML pages' lang attribute)
LANGUAGES = {"en": ("en", "en"), "zh": ("zh_CN", "zh-CN")}
SEPARATORS = {"en": ", ", "zh": "、"}  # between the items of a tuple ({functions})

# The registries that ``messages`` fills (its texts are defined there, once):
TEMPLATES: dict[str, str] = {}  # English template -> the name it has there (the translators' comment)
BY_NAME: dict[str, Template] = {}  # name -> template
STATUS_WORDS: dict[str, str] = {}  # a result's status -> its words
MAX_TEXT = 2000  # characters of a text placeholder read back from JSON (the child's or the cache's)


@dataclass(frozen=True)
class Known:
    """A text of ours outside the templates (a spec's case label), translated whole by the catalog."""

    text: str


Param = Union[str, int, float, "Msg", Known, tuple["Param", ...]]


@dataclass(frozen=True)
class Msg:
    """One message: the template's name and its placeholders' values (sorted by name: equal messages compare
    and hash equal). Made by calling a :class:`Template`; rendered by a :class:`Translator`."""

    t: str
    p: tuple[tuple[str, Param], ...] = ()

    @property
    def params(self) -> dict[str, Param]:
        return dict(self.p)

    def __str__(self) -> str:
        return translator("en")(self)

    def to_json(self) -> dict:
        """``{"t": name, "p": {placeholder: value}}``: a tuple as a list, a known text as ``{"k": text}``."""
        return {"t": self.t, "p": {k: _to_json(v) for k, v in self.p}}

    @classmethod
    def from_json(cls, data: object, allowed: frozenset[str] | None = None, depth: int = 0) -> Msg:
        """The message :meth:`to_json` gave, trusting nothing in it: ``ValueError`` unless the template exists
        (and is one of ``allowed``, if given), its placeholders are all there and every value is well formed."""
        if depth > 6 or not isinstance(data, dict) or not isinstance(data.get("p"), dict):
            raise ValueError("bad message")
        template = BY_NAME.get(data.get("t"))  # type: ignore[arg-type]
        if template is None or (allowed is not None and template.name not in allowed):
            raise ValueError(f"not a message of ours: {str(data.get('t'))[:40]!r}")
        return template(**{str(k): _from_json(v, depth) for k, v in data["p"].items()})


def _to_json(value: Param) -> object:
    if isinstance(value, Msg):
        return value.to_json()
    if isinstance(value, Known):
        return {"k": value.text}
    if isinstance(value, tuple):
        return [_to_json(v) for v in value]
    return value


def _from_json(value: object, depth: int) -> Param:
    if isinstance(value, dict) and "k" in value and isinstance(value["k"], str):
        return Known(value["k"][:MAX_TEXT])
    if isinstance(value, dict):
        return Msg.from_json(value, None, depth + 1)
    if isinstance(value, list) and len(value) <= 16:
        return tuple(_from_json(v, depth + 1) for v in value)
    if isinstance(value, str):
        return value[:MAX_TEXT]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    raise ValueError("bad parameter")


class Template(str):
    """An English template: the text itself (so that gettext and :class:`Translator` take it as it is), with its
    name; calling it with every placeholder's value makes the message."""

    name: str
    fields: frozenset[str]

    def __new__(cls, name: str, text: str) -> Template:
        self = super().__new__(cls, text)
        self.name = name
        self.fields = frozenset(f for _, f, _, _ in string.Formatter().parse(text) if f is not None)
        return self

    def __call__(self, **params: Param) -> Msg:
        if set(params) != self.fields:
            raise TypeError(f"{self.name} takes {sorted(self.fields)}, not {sorted(params)}")
        for value in params.values():
            _check(value)
        return Msg(self.name, tuple(sorted(params.items())))


def _check(value: object) -> None:
    if isinstance(value, tuple):
        for v in value:
            _check(v)
    elif isinstance(value, bool) or not isinstance(value, (str, int, float, Msg, Known)):
        raise TypeError(f"a placeholder's value is a text, number, message or tuple of them; got {type(value)}")


def _m(name: str, text: str) -> Template:
    template = Template(name, text)
    TEMPLATES[text] = name
    BY_NAME[name] = template
    return template


class Translator:
    """``t(msg)``: a message in ``lang``; ``t(template, **params)``: a template in ``lang``, filled in with ``params``
    as given; ``t.status(key)``: a status word; ``t.text(text)``: one of the catalog's texts (a spec's title)."""

    def __init__(self, lang: str, locale_dir: Path = LOCALE_DIR):
        if lang not in LANGUAGES:
            raise ValueError(f"unknown language {lang!r}: the grader speaks {', '.join(LANGUAGES)}")
        self.lang = lang
        locale, self.html_lang = LANGUAGES[lang]
        self._catalog = (
            gettext.NullTranslations()
            if lang == "en"
            else gettext.translation(DOMAIN, localedir=locale_dir, languages=[locale])
        )

    def __call__(self, template: str | Msg, /, **params: object) -> str:
        if isinstance(template, Msg):
            return self.say(template)
        return self._tidy(self._catalog.gettext(template).format(**params))

    def say(self, value: Param | None) -> str:
        """A message, or a placeholder's value, in this language (None: the empty text)."""
        if isinstance(value, Msg):
            return self(BY_NAME[value.t], **{k: self.say(v) for k, v in value.p})
        if isinstance(value, Known):
            return self.text(value.text)
        if isinstance(value, tuple):
            return SEPARATORS[self.lang].join(self.say(v) for v in value)
        if isinstance(value, float):
            return f"{value:g}"
        return "" if value is None else str(value)

    def status(self, key: str | None) -> str:
        """A status word (``timeout`` -> ``stopped at the time limit``); an unknown key as it is."""
        return self._catalog.gettext(STATUS_WORDS[key]) if key in STATUS_WORDS else str(key)

    def text(self, text: str) -> str:
        """A whole text of the catalog (a spec's description, title or case label) in this language."""
        return self._catalog.gettext(text) if text.strip() else text  # gettext("") is the catalog's header

    def _tidy(self, text: str) -> str:
        """Chinese: no space beside full-width punctuation (a placeholder's text may end in one)."""
        return re.sub(r" *([（）：；，。、]) *", r"\1", text) if self.lang == "zh" else text


@cache
def translator(lang: str = "en") -> Translator:
    """The grader's words in ``lang`` (``en`` or ``zh``; ``qkv grade --lang``)."""
    return Translator(lang)
