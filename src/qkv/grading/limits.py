"""The limits a child runs under: resources, privileges, and the CPU time of one cell or one graded call.

Layer: sandbox side, above ``protocol``; runs inside the sandbox, imports only the standard library (nothing of the
grader). :func:`confine` is the first thing a forked child does; :class:`CallTimer` stops a cell or a call that runs
past its share of CPU time, and :meth:`CallTimer.retire` retires the student's function that a graded call ran past
its limit in, so that a looping function costs only the items that call it.
"""

from __future__ import annotations

import os
import resource
import signal

NPROC = 64  # processes (threads included) one submission's uid may have
MAX_FILE = 64 * 1024 * 1024  # bytes of one file it writes
MAX_FILES = 256  # open file descriptors


class TimeLimit(BaseException):
    """Raised in the child when one cell or one graded call runs past its time limit (not ``Exception``, so
    a student's ``except Exception`` does not swallow it)."""


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


def confine(fd: int, job: dict, cfg: dict) -> int:
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
    for lim, value in (
        (resource.RLIMIT_AS, vm_kb * 1024 + job["memory_mb"] * 1024 * 1024),  # the worker's own size, plus the share
        (resource.RLIMIT_CPU, int(job["timeout"]) + 1),
        (resource.RLIMIT_NPROC, NPROC),
        (resource.RLIMIT_FSIZE, MAX_FILE),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NOFILE, MAX_FILES),
    ):
        resource.setrlimit(lim, (value, value))
    if cfg["drop"]:
        become(cfg["uid"])
    no_new_privs()
    os.umask(0o077)  # what it writes, no other uid can read
    os.chdir(job["cwd"])
    return 3


class CallTimer:
    """CPU time, not wall-clock time: an endless loop burns CPU, while a busy machine only stretches the wall
    clock (a limit on it would stop correct code under load). The worker's wall-clock deadline still holds.
    ``seconds``: a graded call's share; a cell is given its own (``arm(cell_seconds)``)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = self.armed = seconds

    def _alarm(self, signum, frame):
        raise TimeLimit(f"ran past the time limit of {self.armed:g} s of CPU time")

    def arm(self, seconds: float | None = None) -> None:
        self.armed = self.seconds if seconds is None else seconds
        if self.armed > 0:
            signal.signal(signal.SIGPROF, self._alarm)  # again each time: the student's code may have changed it
            signal.setitimer(signal.ITIMER_PROF, self.armed, 1.0)  # and again every second if the first is swallowed

    def disarm(self) -> None:
        signal.setitimer(signal.ITIMER_PROF, 0)

    @staticmethod
    def ran_past(err: BaseException) -> bool:
        """Whether ``err`` is this timer's (not a function retired earlier, nor a student's TimeLimit)."""
        return isinstance(err, TimeLimit) and str(err).startswith("ran past")

    def retire(self, err: BaseException, ns: dict) -> dict | None:
        """When a graded call's ``err`` is this timer's: ``{"cell", "function"}``, the student's function that
        the call entered first (the one the grader called, or the method its call ran), retired from ``ns`` so
        that it is not run again; function None when none of the student's functions was running. Which helper
        the time ran out in is chance and is never charged. None for any other error."""
        if not self.ran_past(err):
            return None
        codes = _where(err)[1][::-1]  # outermost first
        for code in codes:
            why = (
                f"{code.co_name} (code cell {code.co_filename[6:-1]}) ran past the time limit of {self.seconds:g} s "
                "of CPU time earlier, so it was not run again"
            )
            retired = _retire(ns, [code], why)
            if retired:
                return {"cell": int(code.co_filename[6:-1]), "function": retired}
        return {"cell": int(codes[0].co_filename[6:-1]) if codes else None, "function": None}


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


def _retire(ns: dict, codes: list, why: str) -> str | None:
    """Replace the first of the student's functions (or methods) in ``codes`` found in the namespace by
    one that raises at once: a function that looped is not run again. Returns its name."""

    def stub(*args, **kwargs):
        raise TimeLimit(why)

    for code in codes:
        found = []
        for key, obj in list(ns.items()):  # every name it is bound to (``_dot = dot_scores``)
            try:
                if getattr(obj, "__code__", None) is code:
                    ns[key] = stub
                    found.append(key)
                elif isinstance(obj, type):
                    for attr, fn in list(vars(obj).items()):
                        if getattr(fn, "__code__", None) is code:
                            setattr(obj, attr, stub)
                            found.append(f"{key}.{attr}")
            except Exception:  # a class of the student's that refuses: leave it, the worker's deadline holds
                continue
        if found:
            return code.co_name if code.co_name in found else found[0]
    return None
