"""The child: one submission's code cells run in order, then the student's functions called on the grader's inputs.

Layer: sandbox side, above ``tripwires``, ``limits`` and ``shell``; runs inside the sandbox (forked by ``worker.py``),
imports the standard library and the sandbox side below it (``events``, ``protocol``, ``jobs``, ``messages``,
``tripwires``, ``limits``, ``shell``); torch and numpy were imported by the worker. The cells arrive as Python (the
grader transformed IPython's syntax). It writes plain arrays and short reports (``events``) to its pipe; the grader
trusts none of them: it compares values with its own reference and reads the rest only as feedback.
"""

from __future__ import annotations

import base64
import builtins
import json
import os
import sys
from contextlib import contextmanager
from dataclasses import replace

from .events import MAX_ERROR, At, Case, CellError, Done, Message, OutOfMemory, Send, Slow, SlowCall, Stopped
from .jobs import Job, JobItem, WorkerConfig
from .limits import CallTimer, TimeLimit, confine
from .messages import Msg
from .protocol import MAX_LEAF, write_frame
from .shell import NoInput, Shell
from .standins import StandIns
from .tripwires import GRADER_FILE, ForbiddenCall, Tripwires


def short(err: BaseException) -> str:
    """``Type: message``, cut to MAX_ERROR characters."""
    text = f"{type(err).__name__}: {err}"
    return text if len(text) <= MAX_ERROR else text[: MAX_ERROR - 3] + "..."


def said(err: BaseException) -> dict | None:
    """The JSON of the message ``err`` carries, if one of ours (a function retired at its time limit, a broken
    return-type contract): the grader words the case's failure from it, not from the text."""
    msg = err.args[0] if len(err.args) == 1 else None
    return msg.to_json() if isinstance(msg, Msg) else None


def _is_memory(err: BaseException) -> bool:
    return isinstance(err, MemoryError) or (isinstance(err, RuntimeError) and "allocate" in str(err).lower())


def _encode(x, depth: int = 0):
    """A result as the wire carries it: ``{"shape", "data"}`` (base64 of little-endian float64) or ``{"list"}``."""
    import numpy as np
    import torch

    if depth > 3:
        raise TypeError("the result is nested too deeply")
    if isinstance(x, torch.Tensor):
        if x.is_complex():
            raise TypeError("returned a complex tensor")
        a = x.detach().to("cpu").to(torch.float64).numpy()
    elif isinstance(x, np.ndarray):
        a = np.asarray(x, dtype=np.float64)
    elif isinstance(x, (bool, int, float, np.number)):
        a = np.asarray(float(x), dtype=np.float64)
    elif isinstance(x, (tuple, list)):
        if len(x) > 16:
            raise TypeError(f"returned a sequence of {len(x)} values")
        return {"list": [_encode(v, depth + 1) for v in x]}
    else:
        raise TypeError(f"returned a {type(x).__name__}, not a tensor")
    if a.size > MAX_LEAF:
        raise TypeError(f"returned {a.size} numbers, far more than expected")
    return {"shape": list(a.shape), "data": base64.b64encode(np.ascontiguousarray(a, dtype="<f8").tobytes()).decode()}


def _quiet_print(*args, file=None, **kwargs):
    """``print`` in the sandbox: its standard streams go nowhere, so printing there is skipped (a print
    must never stop a cell or cost time); printing into a file the code opened still works."""
    if file is None or file is sys.stdout or file is sys.stderr:
        return None
    return builtins.print(*args, file=file, **kwargs)


def _quiet_display(*args, **kwargs):
    return None


def sender(fd: int) -> Send:
    """``send(msg)``: one message, framed as JSON, to ``fd``, with ``os.write`` and ``json.dumps`` kept from now
    (patching them later changes nothing here)."""
    write, dumps = os.write, json.dumps

    def send(msg: Message) -> None:
        write_frame(fd, dumps(msg.to_wire()).encode(), write)

    return send


def run_child(job: Job, fd: int, cfg: WorkerConfig) -> None:
    """Everything after fork: limits, privileges, tripwires, cells, cases."""
    send = sender(confine(fd, job, cfg))
    wires = Tripwires(send)
    names = sorted({n for item in job.items for n in item.forbid})
    wires.install(names)
    wires.course |= {f"<cell {i + 1}>" for i in job.course}  # the released lab's cells
    sys.addaudithook(wires.audit)
    ns = {"__name__": "__main__", "__builtins__": builtins, "display": _quiet_display, "print": _quiet_print}
    shell = ns["get_ipython"] = Shell(ns, send)
    ns["input"] = shell.input
    timer, cell_seconds = CallTimer(job.limits.call_timeout), job.limits.cell_timeout

    # Python already: the grader transformed the magics (magics.py); nothing is forbidden in the cells themselves,
    # only graded calls count
    for i, src in enumerate(job.cells):
        shell.cell = i
        send(At(i))
        try:
            code = compile(src, f"<cell {i + 1}>", "exec")
            timer.arm(cell_seconds)
            try:
                exec(code, ns)
            finally:
                timer.disarm()
        except BaseException as err:  # a failing cell does not stop the rest
            if timer.ran_past(err) and timer.cell_over:  # the cell used its time: it is charged, and only it
                send(Stopped(i, cell_seconds))
                return
            # One call of the cell's that ran past a call's share (an endless loop?) stopped the cell only: later
            # cells do not run that function again; graded calls of it still do, with their own time.
            slow = timer.retire(err, ns, cells_only=True)
            if slow is not None and slow["function"] is not None:
                send(Slow(slow["cell"], slow["function"], None))
            if not isinstance(err, NoInput):  # input() was noted; in Jupyter someone would have typed
                send(CellError(i, short(err)))
            if _is_memory(err):
                send(OutOfMemory())

    calls = {}  # grade_id -> the spec's call, compiled as the grader's code
    for item in job.items:
        if item.call:
            scope: dict = {}
            exec(compile(item.call, GRADER_FILE, "exec"), scope)
            calls[item.grade_id] = scope[item.call_name]

    @contextmanager
    def guard():
        timer.arm()
        try:
            yield
        finally:
            timer.disarm()

    helpers = StandIns(ns, job.items, guard, wires)
    for item in job.items:
        wires.item, wires.active = None, set()
        with helpers.around(item, calls):
            wires.item, wires.active = item.grade_id, set(item.forbid)
            _cases(item, calls.get(item.grade_id), ns, wires, timer, send)
    wires.item, wires.active = None, set()
    send(Done())


def _cases(item: JobItem, call, ns: dict, wires: Tripwires, timer: CallTimer, send: Send) -> None:
    """The item's cases, each one graded call watched by the tripwires; one message per case."""
    for n, (args, kwargs) in enumerate(item.cases):
        msg = Case(item.grade_id, n)
        try:
            target = ns.get(item.function)
            if target is None:
                raise NameError(f"{item.function} is not defined")
            timer.arm()
            try:
                with wires.watching():
                    out = call(target, *args, **kwargs) if call else target(*args, **kwargs)
            finally:
                timer.disarm()
            try:
                msg = replace(msg, out=_encode(out))
            except BaseException as err:
                msg = replace(msg, unreadable=True)
                raise err
        except BaseException as err:
            slow = timer.retire(err, ns)  # the function the grader called is the one that used the time
            ran: SlowCall | bool = isinstance(err, TimeLimit)
            if slow is not None:
                ran = SlowCall(slow["function"] or item.function, slow["cell"])
                send(Slow(ran.cell, ran.function, item.grade_id))
            forbidden = isinstance(err, ForbiddenCall)
            msg = replace(msg, slow=ran, error=short(err), said=said(err), forbidden=forbidden)
            if _is_memory(err):
                send(OutOfMemory())
        send(msg)
