"""Typed results: what the grader decided for one student and for each item, and their two serial forms.

Layer: grader side, above ``protocol`` and ``messages``; imports numpy, the standard library, ``protocol`` (for the
wire's limits) and ``messages`` (a result's notes and lines are messages, rendered only by the reports).
:class:`Result` is written to the cache as JSON (:meth:`Result.to_json`, :meth:`Result.from_json`) and read by
attribute only (``qkv.grading.testing.english`` reads a message as the tests compare it). :func:`decode_value` reads
one value the sandboxed child sent back, trusting nothing in it.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field, fields

import numpy as np

from .messages import Msg
from .protocol import MAX_LEAF

FORMAT = 2  # of the cached JSON: 2, messages as {"t", "p"} (1 held English lines); another is graded again
STATUSES = ("graded", "malformed", "timeout", "memory", "crashed", "ambiguous", "duplicate", "wrong_lab")


@dataclass
class ItemResult:
    """One autograded item: the points earned, the item's maximum and the feedback lines."""

    points: float
    max: float
    lines: list[Msg]


@dataclass
class Result:
    """One student's result. Built with only ``student`` (and a status and note when the submission cannot be
    graded at all), it is the empty result: no items, no answers."""

    student: str
    status: str | None = None  # one of STATUSES once graded
    note: Msg | None = None  # why it was not graded, or what was not run as Jupyter would
    items: dict[str, ItemResult] = field(default_factory=dict)  # grade_id -> result, autograded items only
    answers: dict[str, str | None] = field(default_factory=dict)  # written answers, for the manual pages
    cell_errors: list[Msg] = field(default_factory=list)  # errors of the student's own cells, for feedback
    sha256: str | None = None  # of the submission's bytes
    wall: float = 0.0  # seconds in the sandbox

    @property
    def points(self) -> float:
        """The autograded points earned."""
        return sum(i.points for i in self.items.values())

    def to_json(self) -> dict:
        """The plain-data form (nested dicts and lists), as cached."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        items = {
            g: {"points": i.points, "max": i.max, "lines": [m.to_json() for m in i.lines]}
            for g, i in self.items.items()
        }
        return {
            **data,
            "format": FORMAT,
            "note": self.note and self.note.to_json(),
            "items": items,
            "answers": dict(self.answers),
            "cell_errors": [m.to_json() for m in self.cell_errors],
        }

    @classmethod
    def from_json(cls, data: dict) -> Result:
        """The result :meth:`to_json` gave (missing fields take their defaults); ``TypeError``, ``KeyError`` or
        ``ValueError`` for anything else (another format among them)."""
        if data.get("format") != FORMAT:
            raise ValueError(f"a result of format {data.get('format')}, not {FORMAT}")
        items = {
            gid: ItemResult(item["points"], item["max"], [Msg.from_json(m) for m in item["lines"]])
            for gid, item in data["items"].items()
        }
        note = Msg.from_json(data["note"]) if data.get("note") else None
        errors = [Msg.from_json(m) for m in data.get("cell_errors", [])]
        rest = {k: v for k, v in data.items() if k not in ("format", "items", "note", "cell_errors")}
        return cls(**rest, items=items, note=note, cell_errors=errors)


def decode_value(obj, depth: int = 0):
    """One value as the child encodes it (``{"shape", "data"}`` or ``{"list"}``) -> float64 arrays in nested
    lists; ``ValueError`` for anything malformed, too deep or too large."""
    if depth > 4 or not isinstance(obj, dict):
        raise ValueError("bad value")
    if "list" in obj:
        if not isinstance(obj["list"], list) or len(obj["list"]) > 16:
            raise ValueError("bad list")
        return [decode_value(v, depth + 1) for v in obj["list"]]
    shape = obj.get("shape")
    if (
        not isinstance(shape, list)
        or len(shape) > 8
        or not all(isinstance(n, int) and 0 <= n <= MAX_LEAF for n in shape)
    ):
        raise ValueError("bad shape")
    size = int(np.prod(shape)) if shape else 1
    data = obj.get("data")
    if size > MAX_LEAF or not isinstance(data, str) or len(data) > 4 * (8 * size + 2) // 3 + 8:
        raise ValueError("bad data")
    raw = base64.b64decode(data, validate=True)
    if len(raw) != 8 * size:
        raise ValueError("bad data length")
    return np.frombuffer(raw, dtype="<f8").astype(np.float64).reshape(shape)
