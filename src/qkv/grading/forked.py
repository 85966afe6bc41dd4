"""A worker forked from the grader's own process, for ``qkv check`` (no sandbox): torch is imported already, so
the worker skips a fresh interpreter and a second import of torch (most of what a check waited for).

Layer: grader side, beside ``bwrap``; imports the standard library only (torch where the grader has it loaded). The
forked process becomes what ``sandbox.worker_program`` starts: its environment, ``sys.path`` and ``sys.argv`` are
those of ``python -I -B``, ``qkv`` is imported again from the worker's lib folder (not the grader's, whose
``qkv.grading`` holds the references), torch's global generator is reset to a fresh one, and the sandbox side's
``main`` runs. Never for ``qkv grade``: the grader's memory (its references, the batch's seed) would be readable
to the submissions.
"""

from __future__ import annotations

import builtins
import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
import types
from importlib.machinery import BuiltinImporter

_lock = threading.Lock()
_parent_ends: set = set()  # this process's ends of the forked workers' pipes (files): none may leak into another


class ForkedWorker:
    """A forked worker process, with the part of ``subprocess.Popen`` that ``sandbox.Worker`` uses: ``program`` is
    what a started one would run with ``python -I -B -c``, ``env`` its environment, ``log_fd`` its standard error."""

    def __init__(self, program: str, env: dict[str, str], log_fd: int) -> None:
        path = isolated_path()
        with _lock:  # the pipes and the fork together: a worker forked meanwhile would hold this one's ends
            r_in, w_in = os.pipe()
            r_out, w_out = os.pipe()
            for stream in (sys.stdout, sys.stderr):
                stream.flush()  # nothing buffered here is written twice, once by the fork
            pid = os.fork()
            if pid == 0:
                try:
                    for fd in [w_in, r_out, *(f.fileno() for f in _parent_ends if not f.closed)]:
                        os.close(fd)
                    _become_worker(path, env, r_in, w_out, log_fd)
                    exec(compile(program, "<string>", "exec"), sys.modules["__main__"].__dict__)
                except BaseException:
                    traceback.print_exc()  # into the worker's log, as a started worker's would be
                finally:
                    os._exit(1)  # main() leaves by os._exit(0) when the grader closes its stdin
            os.close(r_in)
            os.close(w_out)
            self.stdin, self.stdout = open(w_in, "wb", buffering=0), open(r_out, "rb", buffering=0)
            _parent_ends.update((self.stdin, self.stdout))
        self.pid, self.args = pid, ["forked worker", program]
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.returncode = os.waitstatus_to_exitcode(status)
                with _lock:
                    for f in (self.stdin, self.stdout):
                        f.close()
                        _parent_ends.discard(f)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
            time.sleep(0.01)
        return self.returncode  # type: ignore[return-value]

    def kill(self) -> None:
        if self.returncode is None:
            os.kill(self.pid, signal.SIGKILL)


def isolated_path() -> list[str]:
    """``sys.path`` of ``python -I`` (no script folder, no ``PYTHONPATH``, no user site): asked of a bare
    interpreter (hundredths of a second), so the forked worker finds the very modules a started one would."""
    done = subprocess.run(
        [sys.executable, "-I", "-c", "import json, sys; print(json.dumps(sys.path))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def _become_worker(path: list[str], env: dict[str, str], stdin: int, stdout: int, log_fd: int) -> None:
    os.setsid()  # its own session, as the started worker: a Ctrl-C meant for the grader does not reach it
    for fd, std in ((stdin, 0), (stdout, 1), (log_fd, 2)):
        os.dup2(fd, std)
    for fd in (stdin, stdout):
        os.close(fd)
    # the standard streams of a fresh interpreter (the grader's may be replaced, e.g. by pytest's capture)
    sys.stdin, sys.stdout, sys.stderr = (
        open(fd, m, buffering=1, closefd=False) for fd, m in ((0, "r"), (1, "w"), (2, "w"))
    )
    os.environ.clear()
    os.environ.update(env)
    sys.path[:] = path
    sys.dont_write_bytecode = True
    sys.argv = ["-c"]
    main = sys.modules["__main__"] = types.ModuleType("__main__")
    vars(main).update(__builtins__=builtins, __annotations__={}, __loader__=BuiltinImporter)
    for name in [n for n in sys.modules if n == "qkv" or n.startswith("qkv.")]:
        del sys.modules[name]  # the worker's preload imports qkv again, from lib: the copy without the grader
    # The grader's specs seed and draw: the global generators start afresh, from the system's entropy, as in a
    # started interpreter (a notebook that seeds them draws the same numbers either way).
    for name, reseed in (("random", "seed"), ("numpy.random", "seed"), ("torch", "seed")):
        if name in sys.modules:
            getattr(sys.modules[name], reseed)()
