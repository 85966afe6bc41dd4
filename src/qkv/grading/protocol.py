"""The one wire framing of the grader: a 4-byte big-endian length, then the payload.

Layer: the bottom of both sides, shared by both ends, above ``events`` (it runs inside the sandbox too, so it imports
only the standard library and ``events``). The channels it frames:

  grader -> worker (stdin):  pickle of a dict (trusted direction: the grader wrote it): ``jobs``' types
  worker -> grader (stdout): a JSON header (``jobs.Header``), then one frame of the child's raw bytes
  child  -> worker (pipe):   JSON messages {"t": "at" | "case" | "note" | ..., ...}, one per frame: ``events``' types

The child's bytes are read back with :func:`read_messages`, which trusts nothing in them.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time

from .events import Message, parse

LENGTH = struct.Struct(">I")
MAX_LEAF = 4_000_000  # float64 entries in one returned array (the child refuses more, the grader too)
MAX_MESSAGES = 100_000  # messages read from one child's bytes; the rest are ignored


def frame(payload: bytes) -> bytes:
    """``payload`` with its length in front."""
    return LENGTH.pack(len(payload)) + payload


def write_frame(fd: int, payload: bytes, write=os.write) -> None:
    """Write one whole frame to ``fd`` (``write``: the child passes the ``os.write`` it saved before any
    student code ran, so that patching ``os.write`` changes nothing)."""
    data = frame(payload)
    while data:
        data = data[write(fd, data) :]


def read_exact(fd: int, n: int, deadline: float | None = None) -> bytes:
    """``n`` bytes from ``fd``; ``EOFError`` when the other end closes first, ``TimeoutError`` past ``deadline``
    (a ``time.monotonic()`` value; None waits for ever)."""
    buf = bytearray()
    while len(buf) < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError("the worker did not answer in time")
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            raise EOFError("the other end closed the channel")
        buf += chunk
    return bytes(buf)


def read_frame(fd: int, deadline: float | None = None) -> bytes:
    """The payload of the next frame on ``fd`` (see :func:`read_exact` for the errors)."""
    (n,) = LENGTH.unpack(read_exact(fd, LENGTH.size, deadline))
    return read_exact(fd, n, deadline)


def read_messages(raw: bytes) -> list[Message]:
    """The child's messages framed in ``raw`` (its bytes, untrusted), each checked by :func:`.events.parse`: a
    truncated last frame, what is not JSON and what is not a message the child sends are dropped."""
    msgs: list[Message] = []
    pos = 0
    while pos + LENGTH.size <= len(raw) and len(msgs) < MAX_MESSAGES:
        (n,) = LENGTH.unpack(raw[pos : pos + LENGTH.size])
        body = raw[pos + LENGTH.size : pos + LENGTH.size + n]
        pos += LENGTH.size + n
        if len(body) < n:
            break
        try:
            msgs.append(parse(json.loads(body)))
        except (ValueError, RecursionError):  # events.Malformed is a ValueError
            continue
    return msgs
