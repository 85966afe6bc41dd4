"""Stand-ins: a student's helper is kept when it is correct, and replaced only when the spec's checks show it wrong.

Layer: sandbox side, above ``tripwires`` and ``limits``; runs inside the sandbox, imports the standard library
(torch lazily, from the worker's process), ``jobs`` (the job's items) and ``tripwires``. An item lists, in ``Item.helpers``, correct versions of the other
exercises' functions that its own function may call. Before the item's cases run, each such helper of the
student's is called on the cases of the item that grades it, next to the stand-in; when it raises or differs,
the stand-in takes its name in the notebook's namespace for this item's calls only (one bug costs one item).
A helper that executes a call this item forbids is kept, so that the item's graded calls run it and are charged.
The stand-in accepts the student's own call: extra positional arguments and keywords it does not know are
dropped. Its code is compiled as the grader's (``tripwires.GRADER_FILE``), so it never counts as the student's.
"""

from __future__ import annotations

import copy
import inspect
from contextlib import contextmanager

from .jobs import JobItem
from .tripwires import GRADER_FILE


def _close(got, want, atol: float, rtol: float) -> bool:
    """``got`` has the nesting and shapes of ``want``, and values within ``atol + rtol * |want|``."""
    import torch

    if isinstance(want, dict):
        return (
            isinstance(got, dict)
            and got.keys() == want.keys()
            and all(_close(got[k], want[k], atol, rtol) for k in want)
        )
    if isinstance(want, (tuple, list)):
        return (
            isinstance(got, (tuple, list))
            and len(got) == len(want)
            and all(_close(g, w, atol, rtol) for g, w in zip(got, want))
        )
    try:
        g = torch.as_tensor(got).detach().to("cpu", torch.float64)
        w = torch.as_tensor(want).detach().to("cpu", torch.float64)
    except (TypeError, ValueError, RuntimeError):
        return False
    return g.shape == w.shape and bool(torch.allclose(g, w, atol=atol, rtol=rtol, equal_nan=True))


def tolerant(function):
    """``function`` called with the arguments it knows of a call that may pass more (the student's own call)."""
    params = inspect.signature(function).parameters.values()
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        return function
    positional = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
    names = {p.name for p in params if p.kind != p.POSITIONAL_ONLY}

    def stand_in(*args, **kwargs):
        return function(*args[:positional], **{k: v for k, v in kwargs.items() if k in names})

    stand_in.__name__ = stand_in.__qualname__ = function.__name__
    return stand_in


class StandIns:
    """The stand-ins of one submission: ``ns`` is the notebook's namespace, ``items`` the job's items, ``guard``
    a context that runs the student's code under the time limit of one call."""

    def __init__(self, ns: dict, items: list[JobItem], guard, wires) -> None:
        self.ns, self.guard, self.wires = ns, guard, wires
        self.scope: dict = {"__name__": "qkv_standins"}
        for item in items:
            for source in item.helpers.values():
                exec(compile(source, GRADER_FILE, "exec"), self.scope)
        self.graded: dict[str, JobItem] = {}  # function name -> the first item that grades it
        for item in items:
            self.graded.setdefault(item.function, item)
        self.verdict: dict[tuple, bool] = {}

    def _correct(self, name: str, calls: dict, forbid: list[str]) -> bool:
        """Whether the student's ``name`` is kept: it gives the stand-in's results on the cases of the item grading
        it, or it calls what ``forbid`` forbids (then the graded calls that use it must run it, and are charged)."""
        key = (name, frozenset(forbid))
        if key not in self.verdict:
            mine, item = self.ns.get(name), self.graded.get(name)
            ok, trips = callable(mine), self.wires.trips
            self.wires.active = set(forbid)
            if ok and item is not None:
                call = calls.get(item.grade_id)
                run = (lambda f, *a, **k: call(f, *a, **k)) if call else (lambda f, *a, **k: f(*a, **k))
                try:
                    for args, kwargs in item.cases:
                        want = run(self.scope[name], *copy.deepcopy(args), **copy.deepcopy(kwargs))
                        with self.guard():
                            got = run(mine, *copy.deepcopy(args), **copy.deepcopy(kwargs))
                        if not _close(got, want, item.atol, item.rtol):
                            ok = False
                            break
                except BaseException:  # a helper that raises or loops is not kept
                    ok = False
            self.wires.active = set()
            self.verdict[key] = ok or self.wires.trips > trips
        return self.verdict[key]

    @contextmanager
    def around(self, item: JobItem, calls: dict):
        """While ``item``'s cases run: its helpers that the checks show wrong are the stand-ins."""
        names = [n for n in item.helpers if n != item.function and not self._correct(n, calls, item.forbid)]
        saved = {n: self.ns[n] for n in names if n in self.ns}
        for n in names:
            self.ns[n] = tolerant(self.scope[n])
        try:
            yield
        finally:
            for n in names:
                self.ns.pop(n, None)
            self.ns.update(saved)
