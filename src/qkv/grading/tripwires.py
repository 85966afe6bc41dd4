"""Tripwires: the callables an item forbids, replaced in the child by wrappers that report and refuse a call.

Layer: sandbox side, above ``protocol``; runs inside the sandbox, imports only the standard library (nothing of the
grader). The static analysis (``analysis.py``) finds forbidden calls in the student's source; a tripwire catches the
calls made at run time, however the name was reached.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable


class ForbiddenCall(BaseException):
    """Raised by a tripwire. A BaseException, so that a bare ``except Exception`` in student code does not hide it."""


class Tripwires:
    """The child's tripwires: ``active`` holds the dotted names that raise right now, ``item`` the grade_id whose
    cases are running (reported with each tripped call through ``send``)."""

    def __init__(self, send: Callable[[dict], None]) -> None:
        self.send = send
        self.item: str | None = None
        self.active: set[str] = set()

    def install(self, names: list[str]) -> None:
        for dotted in names:
            owner, attr = _resolve_owner(dotted)
            if owner is None:
                continue
            setattr(owner, attr, self._wrap(dotted, getattr(owner, attr)))

    def _wrap(self, dotted: str, original):
        wires = self

        def check() -> None:
            if dotted in wires.active:
                wires.send({"t": "forbidden", "item": wires.item, "name": dotted})
                raise ForbiddenCall(f"{dotted} is not allowed here")

        if isinstance(original, type):

            class Tripwire(original):  # type: ignore[misc, valid-type]
                def __init__(self, *args, **kwargs):
                    check()
                    super().__init__(*args, **kwargs)

            Tripwire.__name__ = Tripwire.__qualname__ = original.__name__
            return Tripwire

        def tripwire(*args, **kwargs):
            check()
            return original(*args, **kwargs)

        tripwire.__name__ = getattr(original, "__name__", dotted)
        return tripwire


def _resolve_owner(dotted: str):
    """The object that holds the last part of ``dotted`` (a module, a class) and that part's name."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for p in parts[cut:-1]:
                obj = getattr(obj, p)
            getattr(obj, parts[-1])
        except AttributeError:
            return None, None
        return obj, parts[-1]
    return None, None
