"""Starting the sandboxed workers: bubblewrap, the filesystem a submission sees, the unprivileged uid.

A worker (``child.py``) is started once per parallel job inside its own bubblewrap sandbox: new PID, network,
IPC and UTS namespaces, no network, read-only binds of the Python runtime and the installed packages only,
a private ``/tmp``, and a copy of ``qkv`` without the grader. As root, the worker keeps only CAP_SETUID,
CAP_SETGID and CAP_KILL, and each child it forks switches to the job's own uid (``uid_base() + job``) before
running anything of the student's, so RLIMIT_NPROC holds and no child can touch the worker.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pickle
import select
import shutil
import struct
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

BASE_UID = 61000  # children run as uid uid_base() + job index (no such user needs to exist)


UID_BLOCKS = 4096  # blocks of 64 uids each, one per grader process
# (block, its locked file descriptor): held, and so reserved, until this process ends
_held_block: list[tuple[int, int]] = []


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
            fd = os.open(folder / f"{block}.lock", os.O_RDONLY | os.O_CREAT, 0o644)  # flock needs no write access
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


BWRAP_HINT = (
    "bubblewrap (bwrap) is required to grade untrusted notebooks safely. Install it with "
    "`sudo apt-get install bubblewrap` (Debian/Ubuntu; `make system` does it), `sudo dnf install bubblewrap` "
    "(Fedora). On macOS there is no bubblewrap: grade on Linux (or in Docker), or pass --no-sandbox to run "
    "the submissions with resource limits only."
)
PRELOAD = [
    "matplotlib.pyplot",
    "ipywidgets",
    "IPython.display",
    "IPython.core.inputtransformer2",
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


def bwrap_path() -> str | None:
    """The bubblewrap binary (``QKV_BWRAP`` overrides the lookup; tests use it to simulate a missing one)."""
    override = os.environ.get("QKV_BWRAP")
    if override is not None:
        return override if override and os.access(override, os.X_OK) else None
    return shutil.which("bwrap")


def bwrap_works(bwrap: str) -> tuple[bool, str]:
    """Whether bubblewrap can create its namespaces here (it cannot in some containers, e.g. Gradescope's)."""
    cmd = bwrap_command(bwrap, Path("/usr"), program=["/usr/bin/env", "true"])  # the very flags a worker gets
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as err:
        return False, str(err)
    return done.returncode == 0, done.stderr.strip()


def _runtime_roots() -> list[str]:
    """Folders the Python runtime and the installed packages live in (bound read-only into the sandbox)."""
    roots = {sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        roots.add(sysconfig.get_paths()[key])
    roots = {os.path.realpath(r) for r in roots if r and os.path.exists(r)}
    keep = []
    for r in sorted(roots):
        if r == "/" or r.startswith("/usr/") or r == "/usr":
            continue
        if not any(r.startswith(k.rstrip("/") + "/") for k in keep):
            keep.append(r)
    return keep


def python_executable() -> str:
    """This interpreter by a path that exists inside the sandbox: its folder resolved (a virtual environment
    reached through a symbolic link is bound under its real path), its name kept (so the venv stays active)."""
    return os.path.join(os.path.realpath(os.path.dirname(sys.executable)), os.path.basename(sys.executable))


def make_lib(course_src: Path, dest: Path) -> Path:
    """A copy of ``qkv`` (without the grader, its specs or the solutions) plus ``child.py``: all a sandbox sees of ours."""
    lib = dest / "lib"
    shutil.copytree(
        course_src,
        lib / "qkv",
        ignore=shutil.ignore_patterns("grading", "__pycache__", "*.pyc", "*.egg-info"),
    )
    shutil.copy(Path(__file__).with_name("child.py"), lib / "qkv_grader_child.py")
    for p in [lib, *lib.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    dest.chmod(0o755)
    return lib


def bwrap_command(bwrap: str, lib: Path, program: list[str] | None = None) -> list[str]:
    cmd = [
        bwrap,
        "--unshare-ipc",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    for top in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        p = Path("/") / top
        if p.is_symlink():
            cmd += ["--symlink", os.readlink(p), f"/{top}"]
        elif p.is_dir():
            cmd += ["--ro-bind", str(p), f"/{top}"]
    for etc in (
        "/etc/ld.so.cache",
        "/etc/ld.so.conf",
        "/etc/ld.so.conf.d",
        "/etc/alternatives",
        "/etc/fonts",
        "/etc/localtime",
    ):
        if os.path.exists(etc):
            cmd += ["--ro-bind", etc, etc]
    made = {"/", "/usr", "/tmp", "/proc", "/dev", "/etc", "/opt"}
    for root in _runtime_roots():
        # bubblewrap creates a bind's missing parent folders mode 0700: the unprivileged child could not
        # enter them and would see only the modules the worker imported. Make them 0755 first (they hold
        # nothing but the read-only binds below).
        for parent in reversed(Path(root).parents):
            if str(parent) not in made:
                made.add(str(parent))
                cmd += ["--perms", "0755", "--dir", str(parent)]
        cmd += ["--ro-bind", root, root]
    cmd += ["--ro-bind", str(lib), "/opt/qkv-grader", "--chdir", "/tmp"]
    if os.geteuid() == 0:
        cmd += [
            "--cap-drop",
            "ALL",
            "--cap-add",
            "CAP_SETUID",
            "--cap-add",
            "CAP_SETGID",
            "--cap-add",
            "CAP_KILL",
            "--cap-add",
            "CAP_CHOWN",
        ]
    cmd += [
        "--clearenv",
        "--setenv",
        "HOME",
        "/tmp",
        "--setenv",
        "PATH",
        "/usr/bin:/bin",
        "--setenv",
        "MPLCONFIGDIR",
        "/tmp",
        "--setenv",
        "LANG",
        "C.UTF-8",
    ]
    cmd += program or [python_executable(), "-I", "-B", "/opt/qkv-grader/qkv_grader_child.py"]
    return cmd


def _read_exact(stream, n: int, deadline: float) -> bytes:
    fd = stream.fileno()
    buf = bytearray()
    while len(buf) < n:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError("the worker did not answer in time")
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            raise EOFError("the worker ended")
        buf += chunk
    return bytes(buf)


class Worker:
    """One pre-started sandboxed worker (one per parallel job); restarts itself if it dies."""

    def __init__(self, index: int, lib: Path, *, sandbox: bool, log: Path, max_bytes: int = 32 << 20) -> None:
        self.index, self.lib, self.sandbox, self.log = index, lib, sandbox, log
        root = os.geteuid() == 0
        self.cfg = {
            "uid": uid_base() + index % 64,
            "drop": root,
            "nproc": 64,
            "max_bytes": max_bytes,
            "preload": PRELOAD,
            "kill": "namespace" if sandbox else ("uid" if root else "group"),
            "lib": "/opt/qkv-grader" if sandbox else str(lib),
            "tmp": "/tmp" if sandbox else None,
        }
        self.proc: subprocess.Popen | None = None
        self.tmp: str | None = None
        self.info: dict = {}

    def start(self) -> None:
        if self.sandbox:
            bwrap = bwrap_path()
            if bwrap is None:
                raise SandboxError(BWRAP_HINT)
            cmd = bwrap_command(bwrap, self.lib)
        else:
            self.tmp = tempfile.mkdtemp(prefix="qkv-grade-")
            os.chmod(self.tmp, 0o711)
            self.cfg["tmp"] = self.tmp
            cmd = [sys.executable, "-I", "-B", str(self.lib / "qkv_grader_child.py")]
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
            # its own session: a Ctrl-C meant for `qkv grade` must not kill a worker mid-submission
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env, start_new_session=True
            )
        self._send(pickle.dumps(self.cfg))
        try:
            self.info = json.loads(self._recv(time.monotonic() + 300))
        except (EOFError, TimeoutError) as err:
            self.stop()
            raise SandboxError(f"the grading worker did not start ({err}); see {self.log}") from None

    def _send(self, payload: bytes) -> None:
        assert self.proc and self.proc.stdin
        self.proc.stdin.write(struct.pack(">I", len(payload)) + payload)
        self.proc.stdin.flush()

    def _recv(self, deadline: float) -> bytes:
        assert self.proc and self.proc.stdout
        (n,) = struct.unpack(">I", _read_exact(self.proc.stdout, 4, deadline))
        return _read_exact(self.proc.stdout, n, deadline)

    def run(self, job: dict) -> tuple[dict, bytes]:
        """Grade one job; a worker that dies or hangs is restarted and the job reported as crashed."""
        try:
            if self.proc is None or self.proc.poll() is not None:
                # An OSError here (fork refused on a busy machine: EAGAIN, ENOMEM; a sandbox that exits at once)
                # is this job's failure, reported like a worker that died: before, it escaped as a grader error
                # and left the result without its items.
                self.start()
            self._send(pickle.dumps(job))
            deadline = time.monotonic() + job["timeout"] + 60
            header = json.loads(self._recv(deadline))
            raw = self._recv(deadline)
            return header, raw
        except (EOFError, TimeoutError, BrokenPipeError, OSError) as err:
            self.stop()
            return {"state": "worker", "signal": None, "exit": None, "wall": 0.0, "bytes": 0, "error": str(err)}, b""

    def stop(self) -> None:
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
