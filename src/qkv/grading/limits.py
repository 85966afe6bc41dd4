"""The limits a child runs under: resources, privileges, and the CPU time of one cell or one graded call.

Layer: sandbox side, above ``protocol``, ``jobs`` and ``messages``; runs inside the sandbox, imports the standard
library, ``jobs`` (the job and the worker's configuration it confines a child by) and ``messages`` (a
:class:`TimeLimit` carries its message). The limits themselves are ``jobs.Limits``. :func:`confine` is the first
thing a forked child does; :class:`CallTimer` stops a cell or a call that runs past its share of CPU time, and
:meth:`CallTimer.retire` retires the student's function that a graded call ran past its limit in, so that a looping
function costs only the items that call it.
"""

from __future__ import annotations

import os
import resource
import signal
from time import process_time  # bound here: a cell that patches time.process_time changes nothing
from types import FrameType

from .jobs import Job, WorkerConfig
from .messages import CPU_LIMIT, FUNCTION_IN_CELL, RAN_PAST_EARLIER, Msg

NPROC = 64  # processes (threads included) one submission's uid may have
MAX_FILE = 64 * 1024 * 1024  # bytes of one file it writes
MAX_FILES = 256  # open file descriptors


class TimeLimit(BaseException):
    """Raised in the child when one cell or one graded call runs past its time limit (not ``Exception``, so
    a student's ``except Exception`` does not swallow it). Its one argument is the message that says so."""


def become(uid: int) -> None:
    """Switch this process, for good, to ``uid`` (its group too, and no supplementary groups)."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


def no_new_privs() -> None:
    """Nothing this process executes can gain privileges (setuid binaries, file capabilities)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
    except Exception:  # pragma: no cover
        pass


def confine(fd: int, job: Job, cfg: WorkerConfig) -> int:
    """A freshly forked child: its own session, no standard streams, resource limits, the submission's uid,
    its own working folder. Returns the channel's new descriptor (3; every other one is closed)."""
    os.setsid()  # its own session and process group: the worker kills the group at the end
    devnull = os.open(os.devnull, os.O_RDWR)
    for std in (0, 1, 2):
        os.dup2(devnull, std)  # stdout is not a channel: printed "results" go nowhere
    os.dup2(fd, 3)
    os.closerange(4, 65536)
    vm_kb = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                vm_kb = int(line.split()[1])
    limits = job.limits
    for lim, value in (
        (resource.RLIMIT_AS, vm_kb * 1024 + limits.memory_mb * 1024 * 1024),  # the worker's own size, plus the share
        (resource.RLIMIT_CPU, int(limits.timeout) + 1),
        (resource.RLIMIT_NPROC, NPROC),
        (resource.RLIMIT_FSIZE, MAX_FILE),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NOFILE, MAX_FILES),
    ):
        resource.setrlimit(lim, (value, value))
    if cfg.drop:
        become(cfg.uid)
    no_new_privs()
    os.umask(0o077)  # what it writes, no other uid can read
    assert job.cwd is not None, "the worker gives each job its folder"
    os.chdir(job.cwd)
    return 3


class CallTimer:
    """CPU time, not wall-clock time: an endless loop burns CPU, while a busy machine only stretches the wall
    clock (a limit on it would stop correct code under load). The worker's wall-clock deadline still holds.

    ``arm()`` gives a graded call ``seconds``. ``arm(cell_seconds)`` gives a cell ``cell_seconds`` in all, and
    each call the cell makes to a function of the student's ``seconds``: a tick watches the outermost such call
    running, so a cell that trains (many short calls) runs on while one call that never returns is stopped."""

    def __init__(self, seconds: float) -> None:
        self.seconds = self.armed = seconds
        self.start, self.cell = 0.0, False
        self.watch: tuple[FrameType | None, float] = (None, 0.0)  # the outermost call watched, since when
        self.cell_over = False  # the cell's own limit ran out (not one call's)

    def _alarm(self, signum, frame):
        used = process_time() - self.start
        if not self.cell or used >= self.armed:
            self.cell_over = self.cell
            raise TimeLimit(CPU_LIMIT(seconds=float(self.armed)))
        outer = _outermost_call(frame)
        if outer is None or outer is not self.watch[0]:
            self.watch = (outer, used)  # a new call (or none): watched from now
        elif used - self.watch[1] >= self.seconds:
            self.watch = (None, used)
            raise TimeLimit(CPU_LIMIT(seconds=float(self.seconds)))

    def arm(self, cell_seconds: float | None = None) -> None:
        self.cell = cell_seconds is not None
        self.armed = self.seconds if cell_seconds is None else cell_seconds
        self.start, self.watch, self.cell_over = process_time(), (None, 0.0), False
        if self.armed > 0:
            signal.signal(signal.SIGPROF, self._alarm)  # again each time: the student's code may have changed it
            first = min(self.seconds, self.armed) / 4 if self.cell else self.armed
            # then every quarter of a call's share in a cell, or every second if a graded call swallows the first
            signal.setitimer(signal.ITIMER_PROF, first, first if self.cell else 1.0)

    def disarm(self) -> None:
        signal.setitimer(signal.ITIMER_PROF, 0)
        self.watch = (None, 0.0)

    @staticmethod
    def ran_past(err: BaseException) -> bool:
        """Whether ``err`` is this timer's (not a function retired earlier, nor a student's TimeLimit)."""
        said = err.args[0] if isinstance(err, TimeLimit) and err.args else None
        return isinstance(said, Msg) and said.t == CPU_LIMIT.name

    def retire(self, err: BaseException, ns: dict, *, cells_only: bool = False) -> dict | None:
        """When ``err`` is this timer's: ``{"cell", "function"}``, the student's function that the call entered
        first (the one the grader called, the method its call ran, the one the cell called), retired from ``ns``
        so that it is not run again; function None when none of the student's functions was running. Which
        helper the time ran out in is chance and is never charged. ``cells_only``: one call from a cell ran past
        a call's share: later cells do not run it again, graded calls still do, with their own time. None for
        any other error."""
        if not self.ran_past(err):
            return None
        codes = _where(err)[1][::-1]  # outermost first
        for code in codes:
            where = FUNCTION_IN_CELL(function=code.co_name, cell=int(code.co_filename[6:-1]))
            why = RAN_PAST_EARLIER(functions=(where,), seconds=float(self.seconds))
            retired = _retire(ns, code, why, self if cells_only else None)
            if retired:
                return {"cell": int(code.co_filename[6:-1]), "function": retired}
        return {"cell": int(codes[0].co_filename[6:-1]) if codes else None, "function": None}


def _outermost_call(frame: FrameType | None) -> FrameType | None:
    """The frame of the outermost call of a student's function that the running cell made (None: the cell's
    own top level is running, or a library function it called directly)."""
    outer = None
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith("<cell ") and name.endswith(">"):
            if frame.f_code.co_name == "<module>":
                return outer
            outer = frame
        frame = frame.f_back
    return None


def _where(err: BaseException) -> tuple[int | None, list]:
    """The innermost cell that ``err`` passed through (its number) and the code objects of the student's
    functions it passed through, innermost first (empty when it stopped in the cell's own top level)."""
    cell, codes = None, []
    tb = err.__traceback__
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame.f_code)
        tb = tb.tb_next
    for code in reversed(frames):
        name = code.co_filename
        if name.startswith("<cell ") and name.endswith(">"):
            if cell is None:
                try:
                    cell = int(name[6:-1])
                except ValueError:
                    continue
            if code.co_name == "<module>":
                break
            codes.append(code)
    return cell, codes


def _retire(ns: dict, code, why: Msg, cells: CallTimer | None) -> str | None:
    """Replace the student's function (or method) whose code is ``code``, under every name the namespace binds
    it to, by one that raises at once (while ``cells`` runs a cell, if given; else always). Returns its name."""

    def stub_for(original):
        def stub(*args, **kwargs):
            if cells is None or cells.cell:
                raise TimeLimit(why)
            return original(*args, **kwargs)

        stub.retired_code = code  # type: ignore[attr-defined]  # a stub for cells only is replaced in its turn when a graded call runs past
        return stub

    def same(fn) -> bool:
        return getattr(fn, "__code__", None) is code or getattr(fn, "retired_code", None) is code

    found = []
    for key, obj in list(ns.items()):  # every name it is bound to (``_dot = dot_scores``)
        try:
            if same(obj):
                ns[key] = stub_for(obj)
                found.append(key)
            elif isinstance(obj, type):
                for attr, fn in list(vars(obj).items()):
                    if same(fn):
                        setattr(obj, attr, stub_for(fn))
                        found.append(f"{key}.{attr}")
        except Exception:  # a class of the student's that refuses: leave it, the worker's deadline holds
            continue
    if found:
        return code.co_name if code.co_name in found else found[0]
    return None
