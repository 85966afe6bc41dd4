"""Tripwires: forbidden calls seen at run time, charged to the graded call that executed them.

Layer: sandbox side, above ``protocol``; runs inside the sandbox, imports only the standard library and ``events``
(what it reports; torch lazily, from the worker's process). Three watchers, all judging what runs, never names in
the source:

* a **wrapper** in place of each forbidden callable, wherever a module binds it (``torch.softmax``,
  ``torch._C._VariableFunctions.softmax``, ``qkv.positional.sinusoidal_positional_encoding``);
* a **torch function mode** during each graded call, which sees a forbidden torch function however it was
  reached (a wrapper unwrapped through its closure, ``torch.ops.aten``, ``torch._C.TensorBase``);
* an **audit hook** (it cannot be removed) for what rewrites the runtime: frames, code objects, the garbage
  collector's object graph, ``ctypes``, tracing.

A call is the student's when the innermost frame outside the installed libraries is a cell the student wrote
(or code made at run time); the course's cells (``course``) and the grader's own calls keep every right. A
forbidden call counts only while an item's cases run (``active``); anything in the cells themselves is free.
Reaching around a wrapper, or rewriting the runtime, is an ``escape``: no item with forbidden calls can be
verified then.
"""

from __future__ import annotations

import importlib
import os
import sys
import sysconfig

from .events import Escape, Forbidden, Send

GRADER_FILE = "<grader>"  # the file name the spec's own code (calls, stand-ins) is compiled with
# Audit events that read or rewrite the runtime behind the grader's back, when the student's code raises them.
# What switches the torch function mode off or steps around it: called from the student's code, an escape.
MODE_SWITCHES = (
    "torch._C.DisableTorchFunction",
    "torch._C.DisableTorchFunctionSubclass",
    "torch._C._pop_torch_function_stack",
    "torch._C._set_torch_function_state",
    "torch._C._set_skip_next_torch_function",
    "torch._C._skip_one_hop_torch_function",
    "torch.overrides._pop_mode",
    "torch.overrides._pop_mode_temporarily",
)
ESCAPES = {"sys._getframe", "sys.settrace", "sys.setprofile", "gc.get_referrers", "gc.get_referents", "gc.get_objects"}
ESCAPE_ATTRS = {"__code__", "tb_frame", "gi_frame", "cr_frame", "ag_frame"}  # object.__getattr__ of these
OPS_FILE = os.path.join("torch", "_ops.py")


class ForbiddenCall(BaseException):
    """Raised by a tripwire. A BaseException, so that a bare ``except Exception`` in student code does not hide it."""


def _roots() -> tuple[str, ...]:
    """Folders of installed code (the standard library, site-packages, the sandbox's copy of qkv and of this
    package): frames there are libraries, never the student's."""
    paths = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths.add(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for name in ("torch", "numpy", "qkv"):
        module = sys.modules.get(name)
        if module is not None and (file := getattr(module, "__file__", None)):
            paths.add(os.path.dirname(os.path.dirname(file)))
    return tuple(sorted({os.path.join(q, "") for p in paths for q in (p, os.path.realpath(p))}))


class Tripwires:
    """The child's watchers: ``active`` holds the dotted names that are forbidden right now, ``item`` the
    grade_id whose cases run (sent with each report through ``send``), ``course`` the file names of the
    course's cells."""

    def __init__(self, send: Send) -> None:
        self.send = send
        self.item: str | None = None
        self.active: set[str] = set()
        self.course: set[str] = {GRADER_FILE}
        self.roots = _roots()
        self.escaped: set[str] = set()
        self.ops: set[str] = set()
        self.busy = False
        self.trips = 0  # forbidden calls refused so far

    # --- whose code is it ----------------------------------------------------------------------------------
    def _students(self, frame, skip_libraries: bool) -> str | None:
        """The file name of the student's code responsible for ``frame`` (None: a library's or the course's).
        ``skip_libraries``: walk out of library frames to the code that called them."""
        while frame is not None:
            name = frame.f_code.co_filename
            if name.startswith(self.roots):
                if not (skip_libraries or name.endswith(OPS_FILE)):
                    return None
                frame = frame.f_back
                continue
            return None if name in self.course else name
        return None

    def trip(self, name: str, where: str) -> None:
        self.trips += 1
        if not where.startswith("<cell "):
            self.escape("exec")  # the call came from code made from a string at run time
        self.send(Forbidden(self.item, name))
        raise ForbiddenCall(f"{name} is not allowed here")

    def escape(self, what: str) -> None:
        if what not in self.escaped and len(self.escaped) < 20:
            self.escaped.add(what)
            self.send(Escape(self.item, what))

    # --- the wrappers --------------------------------------------------------------------------------------
    def install(self, names: list[str]) -> None:
        originals: dict[int, tuple[str, object]] = {}
        for dotted in names:
            owner, attr = _resolve_owner(dotted)
            if owner is not None:
                originals.setdefault(id(getattr(owner, attr)), (dotted, getattr(owner, attr)))
        wrapped = {key: self._wrap(dotted, obj) for key, (dotted, obj) in originals.items()}
        for dotted in MODE_SWITCHES if names else ():
            owner, attr = _resolve_owner(dotted)
            if owner is not None:
                wrapped.setdefault(id(getattr(owner, attr)), self._switch(dotted, getattr(owner, attr)))
        owners = [m for n, m in list(sys.modules.items()) if n.split(".")[0] in ("torch", "qkv")]
        torch = sys.modules.get("torch")
        if torch is not None:
            owners += [torch._C._VariableFunctions, torch._C._nn, torch.Tensor]
        for owner in owners:
            try:
                items = list(vars(owner).items())
            except TypeError:
                continue
            for attr, value in items:
                if id(value) in wrapped and not attr.startswith("__"):
                    try:
                        setattr(owner, attr, wrapped[id(value)])
                    except (AttributeError, TypeError):
                        pass
        for dotted in names:  # names bound elsewhere (a class's attribute) get theirs too
            owner, attr = _resolve_owner(dotted)
            if owner is not None and id(getattr(owner, attr)) in wrapped:
                setattr(owner, attr, wrapped[id(getattr(owner, attr))])

    def _wrap(self, dotted: str, original):
        wires = self

        def check(frame) -> None:
            if dotted in wires.active and (where := wires._students(frame, True)) is not None:
                wires.trip(dotted, where)

        if isinstance(original, type):

            class Tripwire(original):
                def __init__(self, *args, **kwargs):
                    check(sys._getframe(1))
                    super().__init__(*args, **kwargs)

            Tripwire.__name__ = Tripwire.__qualname__ = original.__name__
            Tripwire.__module__ = original.__module__
            return Tripwire

        def tripwire(*args, **kwargs):
            check(sys._getframe(1))
            return original(*args, **kwargs)

        tripwire.__name__ = getattr(original, "__name__", dotted)
        return tripwire

    def _switch(self, dotted: str, original):
        """``original`` (a mode switch), reporting an escape when the student's own code calls it, in a cell too:
        a mode switched off in a cell stays off for the graded calls after it."""
        wires = self

        def switch(*args, **kwargs):
            if wires._students(sys._getframe(1), False) is not None:
                wires.escape(dotted.rsplit(".", 1)[-1])
            return original(*args, **kwargs)

        switch.__name__ = getattr(original, "__name__", dotted)
        return switch

    # --- the torch function mode and the audit hook ---------------------------------------------------------
    def watching(self):
        """A context for one item's cases: a torch function mode that sees a forbidden torch function called
        straight from the student's code, i.e. around its wrapper."""
        from torch.overrides import TorchFunctionMode

        wires = self

        class Watch(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                name = str(getattr(func, "__name__", "")).split(".")[0]
                if name and name in wires.ops and wires._students(sys._getframe(1), False) is not None:
                    wires.escape(name)  # reached around its wrapper
                    wires.trip(name, "<cell>")
                return func(*args, **(kwargs or {}))

        self.ops = {d.rsplit(".", 1)[-1] for d in self.active}
        return Watch()

    def audit(self, event: str, args: tuple) -> None:
        """The audit hook (``sys.addaudithook``): an escape when the student's own code raised the event."""
        if event in ESCAPES or event.startswith("ctypes.") or event == "object.__setattr__":
            pass
        elif not (event == "object.__getattr__" and len(args) > 1 and args[1] in ESCAPE_ATTRS):
            return
        if self.busy:  # reading the caller's frame raises sys._getframe itself
            return
        self.busy = True
        try:
            caller = sys._getframe(1)
        finally:
            self.busy = False
        if self._students(caller, False) is not None:
            self.escape(str(args[1])[:40] if event.startswith("object.") and len(args) > 1 else event)


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
