"""Self-checks for the labs: assertions that say what is wrong, where, by how much, and the likely step.

The labs' self-check cells call these, cheapest first (the shape, then the rows summing to one, then the
comparison with a reference), so a student reads "weights: row 2 sums to 0.37" rather than "does not match".
Each raises ``AssertionError`` explicitly (an ``assert`` statement would vanish under ``python -O``).

Their own words come in the lab's language: a lab's setup cell calls ``use_language("en")``, and the Chinese lab,
generated from the same solution, ``use_language("zh_CN")`` (``qkv.i18n`` writes the edition's language in). The
Chinese words are the grader's catalog's (locales/zh_CN/LC_MESSAGES/grader.po, compiled into the package).

Example::

    >>> import torch
    >>> from qkv.selfcheck import expect_close
    >>> expect_close(torch.tensor([1.0, 2.5]), torch.tensor([1.0, 2.0]), "out", hint="check the scale")
    Traceback (most recent call last):
    ...
    AssertionError: out: differs from the reference by up to 0.5 in 1 of 2 entries (worst at index (1,): got 2.5, expected 2); likely: check the scale
"""

from __future__ import annotations

import gettext
from pathlib import Path

import torch

__all__ = ["expect_close", "expect_rows_sum_to_one", "expect_shape", "matching_mistake", "use_language"]

# The catalog the grader ships (qkv.grading.messages reads the same file; this layer imports none of it).
LOCALE_DIR, DOMAIN = Path(__file__).parent / "grading" / "locale", "qkv_grade"
NOT_A_TENSOR = "{what} should be a tensor of shape {shape}; got a {kind}"
WRONG_SHAPE = "{what} should have shape {shape}; got {got}"
NOT_FINITE = "{what} has NaN or inf where the reference is finite (first at index {index})"
DIFFERS = (
    "{what}: differs from the reference by up to {diff} in {bad} of {n} entries"
    " (worst at index {index}: got {got}, expected {expected})"
)
EQUALS_MISTAKE = "{message}; it equals what {mistake} gives"
LIKELY = "{message}; likely: {hint}"
HAS_NAN = "{what} contains NaN (first at index {index})"
NEGATIVE = "{what} has a negative entry ({low}): weights from a softmax are never negative"
ROW_SUM = "{what} along axis {axis} (one row per query) should sum to 1; the row at {index} sums to {total}"
NORMALISE = "normalise over the last axis, the keys"
MESSAGES: tuple[str, ...] = (
    NOT_A_TENSOR,
    WRONG_SHAPE,
    NOT_FINITE,
    DIFFERS,
    EQUALS_MISTAKE,
    LIKELY,
    HAS_NAN,
    NEGATIVE,
    ROW_SUM,
)
MESSAGES += (NORMALISE,)
_words: gettext.NullTranslations = gettext.NullTranslations()


def use_language(language: str) -> None:
    """The language of the self-checks' own words: ``"en"`` or a catalog's (``"zh_CN"``). A lab in another
    language also gets the course's CJK font as matplotlib's fallback, so the student's own plots can say it."""
    global _words
    _words = (
        gettext.NullTranslations()
        if language == "en"
        else gettext.translation(DOMAIN, localedir=LOCALE_DIR, languages=[language])
    )
    if language != "en":
        from . import figures  # imports matplotlib: only for a lab that needs the font

        figures.use_cjk_font()


def _say(template: str, **params: object) -> str:
    return _words.gettext(template).format(**params)


def _shape(shape) -> str:
    shape = tuple(shape)
    return "(" + ", ".join(str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"


def _fail(message: str, hint: str = "") -> None:
    raise AssertionError(_say(LIKELY, message=message, hint=hint) if hint else message)


def expect_shape(got, shape, what: str, hint: str = "") -> None:
    """``got`` must be a tensor of exactly ``shape``."""
    if not isinstance(got, torch.Tensor):
        _fail(_say(NOT_A_TENSOR, what=what, shape=_shape(shape), kind=type(got).__name__), hint)
    if tuple(got.shape) != tuple(shape):
        _fail(_say(WRONG_SHAPE, what=what, shape=_shape(shape), got=_shape(got.shape)), hint)


def matching_mistake(got: torch.Tensor, mistakes: dict[str, torch.Tensor], atol: float = 1e-5) -> str | None:
    """The name of the first known mistake whose result ``got`` equals (same shape, within ``atol``), or None."""
    for name, wrong in mistakes.items():
        if tuple(wrong.shape) == tuple(got.shape) and torch.allclose(
            got.detach().double().cpu(), wrong.detach().double().cpu(), atol=atol, rtol=0
        ):
            return name
    return None


def expect_close(
    got,
    expected: torch.Tensor,
    what: str,
    *,
    atol: float = 1e-5,
    rtol: float = 1e-5,
    hint: str = "",
    mistakes: dict[str, torch.Tensor] | None = None,
) -> None:
    """``got`` must equal ``expected`` within ``atol + rtol * |expected|``, entry by entry.

    On failure the message gives the largest difference, how many entries are off and the worst one's index
    and values. If ``got`` equals one of ``mistakes`` (results of known wrong steps, by name) the message says
    which; otherwise it ends with ``hint``.
    """
    expect_shape(got, expected.shape, what, hint)
    g, e = got.detach().double().cpu(), expected.detach().double().cpu()
    broken = ~torch.isfinite(g) & torch.isfinite(e)
    if broken.any():
        index = tuple(int(i) for i in broken.nonzero()[0])
        _fail(_say(NOT_FINITE, what=what, index=index), hint)
    diff = torch.where(torch.isfinite(e), (g - e).abs(), torch.zeros_like(e))
    bad = diff > atol + rtol * e.abs()
    if not bad.any():
        return
    worst = int(torch.argmax(torch.where(bad, diff, torch.zeros_like(diff))))
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(worst), e.shape)) if e.dim() else ()
    message = _say(
        DIFFERS,
        what=what,
        diff=f"{float(diff.max()):.3g}",
        bad=int(bad.sum()),
        n=bad.numel(),
        index=index,
        got=f"{float(g[index]):.4g}",
        expected=f"{float(e[index]):.4g}",
    )
    mistake = matching_mistake(got, mistakes or {})
    if mistake:
        _fail(_say(EQUALS_MISTAKE, message=message, mistake=mistake))
    _fail(message, hint)


def expect_rows_sum_to_one(
    weights,
    what: str = "weights",
    *,
    dim: int = -1,
    atol: float = 1e-5,
    rows: torch.Tensor | None = None,
    hint: str = "",
) -> None:
    """Every row of ``weights`` (along ``dim``) is non-negative and sums to one (only where ``rows`` is True)."""
    w = weights.detach().double().cpu()
    if torch.isnan(w).any():
        index = tuple(int(i) for i in torch.isnan(w).nonzero()[0])
        _fail(_say(HAS_NAN, what=what, index=index), hint)
    if (w < 0).any():
        _fail(_say(NEGATIVE, what=what, low=f"{float(w.min()):.3g}"), hint)
    sums = w.sum(dim=dim)
    off = (sums - 1).abs() > atol
    if rows is not None:
        off &= rows.expand_as(off)
    if off.any():
        index = tuple(int(i) for i in off.nonzero()[0])
        axis = dim % w.dim()
        _fail(
            _say(ROW_SUM, what=what, axis=axis, index=index, total=f"{float(sums[index]):.4g}"),
            hint or _say(NORMALISE),
        )
