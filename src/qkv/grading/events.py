"""What the child tells the grader while it runs a submission: one dataclass per kind of message.

Layer: the very bottom, below ``protocol`` (whose ``read_messages`` reads them back); runs inside the sandbox too,
so it imports only the standard library. The child (``child``, ``shell``, ``tripwires``, ``worker``) builds a
message and sends ``to_wire()``: a JSON object whose ``"t"`` names its kind. The grader cannot trust what comes back
(the student's code runs in the child and can write any frame), so :func:`parse` checks every field's type and
bounds, here and nowhere else, and refuses a message that is not one the child sends (:class:`Malformed`); the
readers (``scoring``) take the types and bounds as given and only decide.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Self

MAX_INDEX = 100_000  # a cell's or case's index is below it; a cell's number (1-based) at most it
MAX_GRADE_ID = 200  # characters of a grade id: a longer one names no item, and is refused rather than cut
MAX_NAME = 80  # characters of a function's or forbidden call's name, an escape, a note's command
MAX_ERROR = 400  # characters of an exception message kept for feedback
MAX_TRACE = 2000  # characters of the child's own traceback
MAX_SECONDS = 1e6  # a stopped cell's CPU seconds are below it (and finite: JSON from Python may hold NaN)
NOTE_KINDS = ("shell", "magic", "input")  # a shell command, an unknown magic, input(): none was run


class Malformed(ValueError):
    """Not a message the child sends: dropped whole."""


def _index(value: object) -> int:
    if type(value) is not int or not 0 <= value < MAX_INDEX:  # a bool is no index
        raise Malformed("bad index")
    return value


def _cell(value: object) -> int | None:
    """A cell's number as its file name ``<cell n>`` says it (None: not known)."""
    if value is not None and (type(value) is not int or not 0 < value <= MAX_INDEX):
        raise Malformed("bad cell")
    return value


def _text(value: object, cut: int) -> str:
    if type(value) is not str:
        raise Malformed("not a text")
    return value[:cut]


def _grade_id(value: object) -> str:
    if type(value) is not str or len(value) > MAX_GRADE_ID:
        raise Malformed("bad grade id")
    return value


def _item(value: object) -> str | None:
    """The grade id whose cases ran, or None: the cells ran."""
    return None if value is None else _grade_id(value)


def _flag(value: object) -> bool:
    if type(value) is not bool:
        raise Malformed("not a flag")
    return value


@dataclass(frozen=True)
class Message:
    """A message of the child's: its fields are the wire's, in the wire's order, under ``"t": KIND``."""

    KIND: ClassVar[str]

    def to_wire(self) -> dict[str, Any]:
        return {"t": self.KIND, **{f.name: getattr(self, f.name) for f in fields(self)}}

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Self:
        """The message ``data`` holds, its fields checked (``Malformed`` when one is not as the child sends it)."""
        return cls()


Send = Callable[[Message], None]  # the child's channel to the grader (``child.sender``)


@dataclass(frozen=True)
class At(Message):
    """The child starts code cell ``i`` (0-based)."""

    KIND: ClassVar[str] = "at"
    i: int

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Self:
        return cls(_index(data.get("i")))


@dataclass(frozen=True)
class Stopped(Message):
    """Code cell ``i`` used its ``seconds`` of CPU time: the notebook stops there."""

    KIND: ClassVar[str] = "stopped"
    i: int
    seconds: float

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Self:
        seconds = data.get("seconds")
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds < MAX_SECONDS:
            raise Malformed("bad seconds")  # NaN fails the comparison too
        return cls(_index(data.get("i")), float(seconds))


@dataclass(frozen=True)
class Slow(Message):
    """A student's ``function`` (in code cell ``cell``, 1-based, if known) ran past its time limit and was retired:
    in a graded call of ``item``, or in a cell (``item`` None)."""

    KIND: ClassVar[str] = "slow"
    cell: int | None
    function: str
    item: str | None

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Self:
        return cls(_cell(data.get("cell")), _text(data.get("function"), MAX_NAME), _item(data.get("item")))


@dataclass(frozen=True)
class CellError(Message):
    """Code cell ``i`` raised ``error`` (``Type: message``)."""

    KIND: ClassVar[str] = "cell"
    i: int
    error: str

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Self:
        return cls(_index(data.get("i")), _text(data.get("error"), MAX_ERROR))


@dataclass(frozen=True)
class SlowCall:
    """Where a graded call ran past its time: the student's function it entered first, and that function's cell."""

    function: str
    cell: int | None

    @classmethod
    def from_wire(cls, data: object) -> SlowCall:
        if type(data) is not dict:
            raise Malformed("bad slow call")
        return cls(_text(data.get("function"), MAX_NAME), _cell(data.get("cell")))


@dataclass(frozen=True)
class Case(Message):
    """Case ``case`` of ``item``: the value returned (``out``, as ``child._encode`` writes it; decoded by
    ``results.decode_value``, which trusts nothing in it), or the ``error`` raised, with why: the result could
    not be encoded (``unreadable``), the call ran past its time (``slow``: where, or True when not known), the
    exception carried one of our messages (``said``: its JSON, checked by the grader against ``CHILD_SAYS``), a
    forbidden call (``forbidden``)."""

    KIND: ClassVar[str] = "case"
    item: str
    case: int
    out: object = None
    unreadable: bool = False
    slow: SlowCall | bool = False
    error: str | None = None
    said: dict[str, Any] | None = None
    forbidden: bool = False

    def to_wire(self) -> dict[str, Any]:
        # No isinstance, no super(): the student's code may have replaced builtins by the time a case is sent.
        wire, slow = Message.to_wire(self), self.slow
        if not (slow is True or slow is False):
            wire["slow"] = {"function": slow.function, "cell": slow.cell}
        return {k: v for k, v in wire.items() if v is not None and v is not False}  # what did not happen is left out

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Self:
        slow, error, said = data.get("slow", False), data.get("error"), data.get("said")
        if said is not None and type(said) is not dict:
            raise Malformed("bad said")
        return cls(
            _grade_id(data.get("item")),
            _index(data.get("case")),
            data.get("out"),
            _flag(data.get("unreadable", False)),
            slow if type(slow) is bool else SlowCall.from_wire(slow),
            None if error is None else _text(error, MAX_ERROR),
            said,
            _flag(data.get("forbidden", False)),
        )


@dataclass(frozen=True)
class OutOfMemory(Message):
    """A cell or a graded call ran out of memory."""

    KIND: ClassVar[str] = "memory"


@dataclass(frozen=True)
class Done(Message):
    """The child ran every cell and every case."""

    KIND: ClassVar[str] = "done"


@dataclass(frozen=True)
class Note(Message):
    """What code cell ``i`` asked for that the sandbox did not run (``kind``, one of :data:`NOTE_KINDS`)."""

    KIND: ClassVar[str] = "note"
    i: int
    kind: str
    text: str

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Self:
        kind = data.get("kind")
        if kind not in NOTE_KINDS:
            raise Malformed("bad note kind")
        return cls(_index(data.get("i")), kind, _text(data.get("text"), MAX_NAME))


@dataclass(frozen=True)
class Forbidden(Message):
    """The student's code called ``name``, forbidden in ``item``'s graded calls."""

    KIND: ClassVar[str] = "forbidden"
    item: str | None
    name: str

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Self:
        return cls(_item(data.get("item")), _text(data.get("name"), MAX_NAME))


@dataclass(frozen=True)
class Escape(Message):
    """The student's code reached around the watchers (``what``), during ``item``'s calls or in a cell (None)."""

    KIND: ClassVar[str] = "escape"
    item: str | None
    what: str

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Self:
        return cls(_item(data.get("item")), _text(data.get("what"), MAX_NAME))


@dataclass(frozen=True)
class Internal(Message):
    """The child itself failed (the grader's bug, or the student's doing): the ``error`` and the ``trace``'s end."""

    KIND: ClassVar[str] = "internal"
    error: str
    trace: str

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Self:
        return cls(_text(data.get("error"), MAX_ERROR), _text(data.get("trace"), MAX_TRACE))


KINDS: dict[str, type[Message]] = {
    k.KIND: k for k in (At, Stopped, Slow, CellError, Case, OutOfMemory, Done, Note, Forbidden, Escape, Internal)
}


def parse(data: object) -> Message:
    """The message a JSON value from the child is, every field checked; ``Malformed`` when it is none of ours."""
    if isinstance(data, dict) and type(kind := data.get("t")) is str and kind in KINDS:
        return KINDS[kind].from_wire(data)
    raise Malformed("not a message")
