"""The grader's end of the sandbox: the lib a worker sees, its unprivileged uids, and the worker process itself.

Layer: grader side, above ``bwrap``, ``protocol`` and ``jobs``; imports the standard library, those three and ``forked`` (it
starts the sandbox side as a program, never imports it). A worker (``worker.py``) is started once per parallel job,
in its own bubblewrap sandbox (``bwrap.py``) or, with ``--no-sandbox``, as a plain process. As root, each child it
forks switches to the job's own uid (``uid_base() + job``) before running anything of the student's, so RLIMIT_NPROC
holds and no child can touch the worker.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from .bwrap import BWRAP_HINT, INSIDE, bwrap_command, bwrap_path, python_executable
from .forked import ForkedWorker
from .jobs import Header, Job, Ready, WorkerConfig
from .protocol import read_frame, write_frame

BASE_UID = 61000  # children run as uid uid_base() + job index (no such user needs to exist)
# The sandbox side of the grader, copied as the package qkv_grader next to the copy of qkv: each of these modules
# imports only the standard library and the others (tests/grading/test_layers.py checks it).
INSIDE_PACKAGE = "qkv_grader"
INSIDE_MODULES = (
    "events",
    "protocol",
    "jobs",
    "words",
    "messages",
    "tripwires",
    "limits",
    "shell",
    "standins",
    "child",
    "worker",
)

UID_BLOCKS = 4096  # blocks of 64 uids each, one per grader process
# (block, its locked file descriptor): held, and so reserved, until this process ends
_held_block: list[tuple[int, int]] = []


def _open_lock(path: Path) -> int | None:
    """A read-only descriptor of a block's lock file (flock needs no write access), created if it is missing;
    None where the block is not this process's to take.

    An existing file is opened without O_CREAT: in a sticky folder such as /tmp, Linux refuses O_CREAT on another
    user's file (``fs.protected_regular``), and the files here are made by every user who grades on the machine.
    """
    try:
        return os.open(path, os.O_RDONLY)
    except PermissionError:  # another user's file that this user may not read: that user's block
        return None
    except FileNotFoundError:
        try:
            return os.open(path, os.O_RDONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:  # another grader made it just now: that grader's block
            return None


def uid_base() -> int:
    """This grader process's first uid: batches running side by side never share a uid (nor its limits).

    Each process takes a block of 64 uids by holding an exclusive lock on the block's file in the system's temp
    folder (released by the kernel when the process ends, however it ends); it starts looking at ``pid % 4096``.
    """
    if not _held_block:
        folder = Path(tempfile.gettempdir()) / "qkv-grade-uids"
        folder.mkdir(exist_ok=True)
        with contextlib.suppress(PermissionError):  # shared by every user who grades here, like /tmp itself
            os.chmod(folder, 0o1777)
        for i in range(UID_BLOCKS):
            block = (os.getpid() + i) % UID_BLOCKS
            fd = _open_lock(folder / f"{block}.lock")
            if fd is None:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            _held_block.append((block, fd))
            break
        else:
            raise RuntimeError(f"all {UID_BLOCKS} uid blocks of {folder} are taken by running graders")
    return BASE_UID + _held_block[0][0] * 64


PRELOAD = [
    "matplotlib.pyplot",
    "ipywidgets",
    "IPython.display",
    "qkv",
    "math",
    "json",
    "re",
    "random",
    "time",
    "warnings",
    "signal",
    "glob",
    "socket",
    "collections",
    "itertools",
    "functools",
    "struct",
    "base64",
    "string",
    "typing",
    "dataclasses",
    "copy",
    "statistics",
    "fractions",
    "decimal",
    "ctypes",
    # torch imports these lazily: SDPA with an attn_mask (sympy via symbolic_shapes), any optimizer's step
    # (torch._dynamo); a child that cannot read a private runtime (/root/.pyenv) could not import them itself.
    "torch.fx.experimental.symbolic_shapes",
    "torch._dynamo",
    "torch.optim",
]


def private_runtime_dirs() -> list[str]:
    """Folders of the Python runtime that other users cannot enter (then, without bubblewrap, a submission
    running as an unprivileged uid can only use the modules the worker imported beforehand)."""
    bad = []
    for root in {sys.prefix, sys.base_prefix}:
        p = Path(root).resolve()
        for d in [p, *p.parents]:
            if not d.stat().st_mode & 0o001:
                bad.append(str(d))
                break
    return sorted(set(bad))


class SandboxError(RuntimeError):
    pass


def make_lib(course_src: Path, dest: Path) -> Path:
    """All a sandbox sees of ours: a copy of ``qkv`` without the grader (its specs hold the references), and the
    sandbox side of the grader as the package INSIDE_PACKAGE."""
    lib = dest / "lib"
    shutil.copytree(
        course_src,
        lib / "qkv",
        ignore=shutil.ignore_patterns("grading", "__pycache__", "*.pyc", "*.egg-info"),
    )
    package = lib / INSIDE_PACKAGE
    package.mkdir()
    (package / "__init__.py").write_text(
        '"""The sandbox side of the qkv grader (a copy made by qkv.grading.sandbox)."""\n'
    )
    for name in INSIDE_MODULES:
        shutil.copy(Path(__file__).with_name(f"{name}.py"), package / f"{name}.py")
    for p in [lib, *lib.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    dest.chmod(0o755)
    return lib


def worker_program(python: str, lib: str) -> list[str]:
    """The command line of a worker whose lib folder is at ``lib``. ``-I`` puts neither the environment nor the
    current folder on ``sys.path``; the lib folder alone is added."""
    boot = f"import sys; sys.path.insert(0, {lib!r}); from {INSIDE_PACKAGE}.worker import main; main()"
    return [python, "-I", "-B", "-c", boot]


class Worker:
    """One pre-started sandboxed worker (one per parallel job); restarts itself if it dies. ``fork`` (without the
    sandbox only: ``qkv check``): forked from this process instead of started afresh (``forked.py``)."""

    def __init__(
        self, index: int, lib: Path, *, sandbox: bool, log: Path, max_bytes: int = 32 << 20, fork: bool = False
    ) -> None:
        if fork and sandbox:
            raise ValueError("a sandboxed worker is always started afresh")
        self.index, self.lib, self.sandbox, self.log, self.fork = index, lib, sandbox, log, fork
        root = os.geteuid() == 0
        self.cfg = WorkerConfig(
            uid=uid_base() + index % 64,
            drop=root,
            max_bytes=max_bytes,
            preload=PRELOAD,
            kill="namespace" if sandbox else ("uid" if root else "group"),
            tmp="/tmp" if sandbox else None,
        )
        self.proc: subprocess.Popen | ForkedWorker | None = None
        self.tmp: str | None = None
        self.info: Ready | None = None

    def start(self) -> None:
        if self.sandbox:
            bwrap = bwrap_path()
            if bwrap is None:
                raise SandboxError(BWRAP_HINT)
            cmd = bwrap_command(bwrap, self.lib, worker_program(python_executable(), INSIDE))
        else:
            self.tmp = tempfile.mkdtemp(prefix="qkv-grade-")
            os.chmod(self.tmp, 0o711)
            self.cfg = replace(self.cfg, tmp=self.tmp)
            cmd = worker_program(sys.executable, str(self.lib))
        env = (
            None
            if self.sandbox
            else {
                "PATH": "/usr/bin:/bin",
                "HOME": self.tmp or "/tmp",
                "LANG": "C.UTF-8",
                "MPLCONFIGDIR": self.tmp or "/tmp",
            }
        )
        with open(self.log, "ab") as log:
            if self.fork:
                self.proc = ForkedWorker(cmd[-1], env or {}, log.fileno())  # the program of ``python -c``
            else:  # its own session: a Ctrl-C meant for `qkv grade` must not kill a worker mid-submission
                self.proc = subprocess.Popen(
                    cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env, start_new_session=True
                )
        self._send(pickle.dumps(self.cfg.to_wire()))
        try:
            self.info = Ready.from_wire(json.loads(self._recv(time.monotonic() + 300)))
        except (EOFError, TimeoutError) as err:
            self.stop()
            raise SandboxError(f"the grading worker did not start ({err}); see {self.log}") from None

    def _send(self, payload: bytes) -> None:
        assert self.proc and self.proc.stdin
        write_frame(self.proc.stdin.fileno(), payload)

    def _recv(self, deadline: float) -> bytes:
        assert self.proc and self.proc.stdout
        return read_frame(self.proc.stdout.fileno(), deadline)

    def run(self, job: Job) -> tuple[Header, bytes]:
        """Grade one job; a worker that dies or hangs is restarted and the job reported as crashed."""
        try:
            if self.proc is None or self.proc.poll() is not None:
                # An OSError here (fork refused on a busy machine: EAGAIN, ENOMEM; a sandbox that exits at once)
                # is this job's failure, reported like a worker that died: before, it escaped as a grader error
                # and left the result without its items.
                self.start()
            self._send(pickle.dumps(job.to_wire()))
            deadline = time.monotonic() + job.limits.timeout + 60
            header = Header.from_wire(json.loads(self._recv(deadline)))
            raw = self._recv(deadline)
            return header, raw
        except (EOFError, TimeoutError, BrokenPipeError, OSError) as err:
            self.stop()
            return Header("worker", error=str(err)), b""

    def stop(self) -> None:
        """Close the worker's stdin (it exits at once on end of file) and wait for it; kill it if it lingers."""
        if self.proc is not None:
            try:
                self.proc.stdin.close()  # type: ignore[union-attr]
            except OSError:
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None
