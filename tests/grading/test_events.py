"""The child's messages (``events``): every kind round-trips through the wire, and whatever the student's code
forges on the channel is dropped, or read back within the bounds the grader reads it with (no sandbox, fast)."""

from __future__ import annotations

import json
import math
import struct
import types
from dataclasses import fields, is_dataclass
from typing import Any, Union, get_args, get_origin, get_type_hints

from hypothesis import given, settings
from hypothesis import strategies as st

from qkv.grading import events as E
from qkv.grading.protocol import frame, read_messages

EXAMPLES: list[E.Message] = [
    E.At(3),
    E.Stopped(2, 7.5),
    E.Slow(None, "train", None),
    E.Slow(4, "attend", "test_soft_lookup"),
    E.CellError(0, "ValueError: no"),
    E.Case("test_soft_lookup", 0, out={"shape": [1], "data": "AAAAAAAA8D8="}),
    E.Case("test_soft_lookup", 1, unreadable=True, error="TypeError: returned a str, not a tensor"),
    E.Case("test_soft_lookup", 2, slow=E.SlowCall("attend", 4), error="TimeLimit: 1 s", said={"t": "X", "p": {}}),
    E.Case("test_soft_lookup", 3, slow=True, error="ForbiddenCall: torch.softmax", forbidden=True),
    E.OutOfMemory(),
    E.Done(),
    E.Note(1, "shell", "!pip install torch"),
    E.Note(2, "input", "Your name: "),
    E.Forbidden("test_soft_lookup", "torch.softmax"),
    E.Escape(None, "sys._getframe"),
    E.Internal("RuntimeError: ours", "Traceback (most recent call last): ..."),
]
# Characters of each text field as the grader reads it today (a longer grade id names no item: dropped).
CAPS = {"function": 80, "name": 80, "what": 80, "text": 80, "kind": 5, "error": 400, "trace": 2000, "item": 200}
WRONG = [None, True, False, 0, -1, 7, 99_999, 100_000, 10**30, 1.5, math.nan, math.inf, "", "x" * 5000, [], [1], {}]


def _raw(*wires: object) -> bytes:
    return b"".join(frame(json.dumps(w).encode()) for w in wires)


def _conforms(value: Any, hint: Any) -> bool:
    """``value`` is of the field's declared type (a bool is no int; a nested dataclass is checked field by field)."""
    if hint is object or hint is Any:
        return True
    if get_origin(hint) in (Union, types.UnionType):
        return any(_conforms(value, h) for h in get_args(hint))
    origin = get_origin(hint) or hint
    if is_dataclass(origin):
        return type(value) is origin and _fields_conform(value)
    return value is None if origin is type(None) else type(value) is origin


def _fields_conform(m: Any) -> bool:
    hints = get_type_hints(type(m), vars(E))
    return all(_conforms(getattr(m, f.name), hints[f.name]) for f in fields(m))


def _check_bounds(m: Any) -> None:
    for f in fields(m):
        v = getattr(m, f.name)
        if type(v) is str and f.name != "out":  # a case's value is read by results.decode_value, no text passes
            assert len(v) <= CAPS[f.name], (m, f.name)
        if f.name in ("i", "case"):
            assert 0 <= v < 100_000
        if f.name == "cell" and v is not None:
            assert 0 < v <= 100_000
        if f.name == "seconds":
            assert math.isfinite(v) and v >= 0
        if f.name == "kind":
            assert v in ("shell", "magic", "input")
        if is_dataclass(v):
            _check_bounds(v)


def _check_read(msgs: list[E.Message]) -> None:
    """Every message read is of its declared types, within bounds, and reads back as itself."""
    for m in msgs:
        assert type(m) in E.KINDS.values() and _fields_conform(m), m
        _check_bounds(m)
        again = read_messages(_raw(m.to_wire()))
        assert [json.dumps(a.to_wire()) for a in again] == [json.dumps(m.to_wire())]  # NaN in ``out`` too


def test_every_kind_round_trips():
    assert {type(m) for m in EXAMPLES} == set(E.KINDS.values())
    assert read_messages(_raw(*(m.to_wire() for m in EXAMPLES))) == EXAMPLES
    for m in EXAMPLES:
        assert read_messages(_raw(m.to_wire())) == [m]


def test_the_wire_is_the_childs_json():
    """The JSON the child sent before its messages were typed, key for key."""
    assert E.Case("a", 0, out={"list": []}).to_wire() == {"t": "case", "item": "a", "case": 0, "out": {"list": []}}
    assert EXAMPLES[7].to_wire() == {
        "t": "case",
        "item": "test_soft_lookup",
        "case": 2,
        "slow": {"function": "attend", "cell": 4},
        "error": "TimeLimit: 1 s",
        "said": {"t": "X", "p": {}},
    }
    assert E.Slow(None, "f", None).to_wire() == {"t": "slow", "cell": None, "function": "f", "item": None}
    assert E.Note(0, "input", "x").to_wire() == {"t": "note", "i": 0, "kind": "input", "text": "x"}


ABSENT = object()


def _unset(value: object) -> bool:
    """How a field that did not happen is sent, or left out (``is``: a 0 is no False)."""
    return value is ABSENT or value is None or value is False


def _forgeries(wire: dict, path: tuple = ()):
    """(path, value, missing): each field of ``wire``, nested ones too, left out or replaced by each wrong value."""
    for key, value in wire.items():
        yield (*path, key), None, True
        for wrong in WRONG:
            yield (*path, key), wrong, False
        if type(value) is dict and key == "slow":
            yield from _forgeries(value, (*path, key))


def _replaced(wire: dict, path: tuple, value: object, missing: bool) -> dict:
    if len(path) > 1:
        return {**wire, path[0]: _replaced(wire[path[0]], path[1:], value, missing)}
    return {k: v for k, v in wire.items() if k != path[0]} if missing else {**wire, path[0]: value}


def _at(wire: object, path: tuple) -> object:
    for key in path:
        wire = wire.get(key, ABSENT) if type(wire) is dict else ABSENT
    return wire


def test_forged_fields_are_dropped_or_bounded_never_coerced():
    seen = dropped = 0
    for example in EXAMPLES:
        wire = example.to_wire()
        for path, wrong, missing in _forgeries(wire):
            forged, sent = _replaced(wire, path, wrong, missing), ABSENT if missing else wrong
            got = read_messages(_raw(forged))
            seen += 1
            assert len(got) <= 1
            _check_read(got)
            if not got:
                dropped += 1
                continue
            kept, name = _at(got[0].to_wire(), path), path[-1]
            if _unset(kept) or sent is ABSENT:
                assert _unset(kept) and _unset(sent), (forged, got)
            elif type(sent) is str and name in CAPS:
                assert kept == sent[: CAPS[name]], (forged, got)  # cut, never refused for its length
            elif name == "seconds":
                assert kept == sent and type(sent) in (int, float), (forged, got)
            else:
                assert json.dumps(kept) == json.dumps(sent), (forged, got)  # as sent: no bool for an int, no text
    assert seen > 1000 and dropped > seen * 3 // 4, (seen, dropped)


def test_what_is_not_a_message_is_dropped():
    good = E.Done().to_wire()
    for junk in (None, 1, "done", [good], {}, {"T": "done"}, *({"t": t} for t in (None, ["done"], "score", "DONE"))):
        assert read_messages(_raw(junk, good)) == [E.Done()]
    body = json.dumps(good).encode()
    for raw in (
        struct.pack(">I", 3) + b"{no" + frame(body),  # not JSON
        frame(b"\xff\xfe{}") + frame(body),  # not text
        frame(b"[" * 100_000) + frame(body),  # nested too deeply
    ):
        assert read_messages(raw) == [E.Done()]
    assert read_messages(frame(body) + struct.pack(">I", 1000) + body) == [E.Done()]  # truncated: the rest is lost
    assert read_messages(frame(body) + b"\x00\x00") == [E.Done()]
    assert read_messages(_raw({**good, "extra": "ignored"})) == [E.Done()]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=500),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
field_names = sorted({f.name for k in E.KINDS.values() for f in fields(k)} | {"function", "cell"})


@settings(max_examples=100, deadline=None, database=None)
@given(
    st.fixed_dictionaries(
        {"t": st.sampled_from(sorted(E.KINDS))},
        optional={name: json_values | st.integers(-5, 100_005) for name in field_names},
    )
)
def test_any_forged_message_is_dropped_or_well_formed(forged):
    _check_read(read_messages(_raw(forged)))


@settings(max_examples=100, deadline=None, database=None)
@given(st.lists(st.binary(max_size=40) | json_values.map(lambda v: frame(json.dumps(v).encode())), max_size=6))
def test_any_bytes_read_as_well_formed_messages(chunks):
    _check_read(read_messages(b"".join(chunks)))
