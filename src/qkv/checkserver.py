"""A resident ``qkv check`` for one student: the first check starts it, the next ones skip importing torch.

Most of a cold ``qkv check`` is start-up: importing torch and the modules a notebook may use (about 3 s), against
a notebook that runs in a fraction of a second. So after a check, the ``qkv check`` process (torch imported) stays
behind in the background as a checker that has loaded all of that, listening on a Unix socket that only its user
can reach. The next ``qkv check`` of that user (a process that imports no torch: ``import qkv`` is lazy) sends it
its arguments and prints its answer. Each check runs in a process forked for it, so no check sees another's.

The checker leaves when no check has come for ``QKV_CHECK_SERVER`` seconds (600 unless set; ``0`` turns the
checker off), and as soon as the processes it was started from are all gone (the terminal, the notebook server: the
first check's ancestors of the same user), so that it never outlives the student's session. It serves only the
code it was started with: the socket's name holds a fingerprint of the installed ``qkv`` and the interpreter, so
after an update the next check starts a new checker. Where anything fails (no checker, a stale socket, a checker
killed mid-check) the client checks as before, in its own process.

Layer: beside ``check`` (the command); imports the standard library, and the grader only in the checker.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

__all__ = ["ask", "idle_limit", "socket_path", "start"]

IDLE = 600.0  # seconds without a check before the checker leaves (QKV_CHECK_SERVER overrides; 0: no checker)
POLL = 1.0  # how often the checker looks whether its session's processes are still there
Answer = tuple[int, str, str]  # exit status, standard output, standard error


def idle_limit() -> float:
    """Seconds the checker waits for the next check; 0 when the checker is off (or this system cannot fork)."""
    if not hasattr(os, "fork") or not hasattr(socket, "AF_UNIX"):
        return 0.0
    try:
        return max(0.0, float(os.environ.get("QKV_CHECK_SERVER", IDLE)))
    except ValueError:
        return IDLE


def _folder() -> Path | None:
    """This user's folder for checkers' sockets: created mode 0700, and used only if it is still that."""
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    folder = Path(base) / f"qkv-check-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = folder.lstat()
    except OSError:
        return None
    mine = stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077
    return folder if mine else None


def _fingerprint() -> str:
    """The interpreter and every file of the installed ``qkv`` (name, size, time): a change makes a new checker."""
    package = Path(__file__).resolve().parent
    digest = hashlib.sha256(f"{sys.executable}\0{package}".encode())
    for path in sorted(package.rglob("*")):
        if "__pycache__" not in path.parts and path.is_file():
            info = path.stat()
            digest.update(f"\0{path.relative_to(package)}\0{info.st_size}\0{info.st_mtime_ns}".encode())
    return digest.hexdigest()[:20]


def socket_path() -> Path | None:
    """Where this user's checker for the installed code listens; None where there can be none: the folder is not
    the user's alone, or its path is too long for a Unix socket (108 bytes on Linux, a pid's suffix included)."""
    folder = _folder()
    path = None if folder is None else folder / f"{_fingerprint()}.sock"
    return path if path is not None and len(os.fsencode(path)) <= 90 else None


def _send(conn: socket.socket, message: dict) -> None:
    conn.sendall(json.dumps(message).encode() + b"\n")


def _receive(conn: socket.socket) -> dict:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(1 << 16)
        if not chunk:
            raise ConnectionError("the other end closed the connection")
        data += chunk
    return json.loads(data)


def ask(request: dict) -> Answer | None:
    """The running checker's answer to ``request`` (the check's arguments); None where there is none to ask or
    it gave no answer (the caller then checks by itself)."""
    path = socket_path() if idle_limit() else None
    if path is None or not path.exists():
        return None
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(str(path))
            _send(conn, request)
            answer = _receive(conn)
        return int(answer["rc"]), str(answer["out"]), str(answer["err"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


# --- the checker ---


def _started(pid: int) -> str | None:
    """When process ``pid`` started (so that a reused pid is not taken for it); None when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)  # no /proc: at least whether it exists
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return "?"


def _session() -> list[tuple[int, str | None]]:
    """This process's ancestors that belong to its user (pid and start time), nearest first; the checker lives
    while any of them does. Without /proc, the parent only."""
    out: list[tuple[int, str | None]] = []
    pid = os.getppid()
    while pid > 1:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return out or [(os.getppid(), _started(os.getppid()))]
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields["Uid"].split()[0]) == os.getuid():
            out.append((pid, _started(pid)))
        pid = int(fields["PPid"])
    return out


def start(serve: Callable[[dict], Answer]) -> None:
    """After a check by this process: leave a checker behind that answers requests with ``serve`` (in a process
    forked for each). Returns at once in this process; nothing when the checker is off or there is no session
    of this user to tie it to (a check run for the user by another user's process, as a grader's script does)."""
    idle, session = idle_limit(), _session()
    path = socket_path() if idle else None
    if path is None or not session:
        return
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    first = os.fork()
    if first:
        os.waitpid(first, 0)  # the middle process leaves at once; the checker is no child of this one
        return
    try:
        os.setsid()
        if os.fork():
            os._exit(0)
        null = os.open(os.devnull, os.O_RDWR)
        log = os.open(path.with_suffix(".log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        for fd, to in ((0, null), (1, null), (2, log)):  # the caller's pipes and terminal are not held open
            os.dup2(to, fd)
        _serve(path, serve, idle, session)
    except BaseException:
        traceback.print_exc()  # into the checker's log, beside its socket
    finally:
        os._exit(0)


def _serve(path: Path, serve: Callable[[dict], Answer], idle: float, session: list[tuple[int, str | None]]) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    fresh = path.with_name(f"{path.name}.{os.getpid()}")
    listener.bind(str(fresh))
    listener.listen(16)
    os.rename(fresh, path)  # atomically: of two checkers started at once, the later one answers
    mine = path.stat().st_ino
    _preload()
    listener.settimeout(POLL)
    last, children = time.monotonic(), set[int]()
    while True:
        children = {pid for pid in children if os.waitpid(pid, os.WNOHANG)[0] == 0}
        gone = all(_started(pid) != started for pid, started in session)
        try:
            replaced = path.stat().st_ino != mine
        except OSError:
            replaced = True
        if replaced or (not children and (gone or time.monotonic() - last > idle)):
            break
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            continue
        last = time.monotonic()
        pid = os.fork()
        if pid == 0:
            listener.close()
            _answer(conn, serve)
            os._exit(0)
        conn.close()
        children.add(pid)
    listener.close()
    if not replaced:
        path.unlink(missing_ok=True)
        path.with_suffix(".log").unlink(missing_ok=True)


def _answer(conn: socket.socket, serve: Callable[[dict], Answer]) -> None:
    try:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
        if int.from_bytes(creds[4:8], sys.byteorder) != os.getuid():
            return  # the folder is the user's own; this is a second lock
    except (AttributeError, OSError):
        pass
    try:
        rc, out, err = serve(_receive(conn))
        _send(conn, {"rc": rc, "out": out, "err": err})
    except Exception:  # no answer: the client checks by itself
        pass
    finally:
        conn.close()


def _preload() -> None:
    """What each check's worker would import first, imported once here (forked checks share it)."""
    import gc

    os.environ["MPLBACKEND"] = "Agg"
    from .grading.sandbox import PRELOAD

    for name in ["numpy", "torch", *PRELOAD]:
        try:
            __import__(name)
        except Exception:  # the worker reports it, as without the checker
            pass
    import torch

    import qkv

    for public in qkv.__all__:  # qkv loads its names lazily: the checks' worker loads them all
        getattr(qkv, public)
    torch.set_num_threads(1)  # forked checks must not find a thread pool of this process's
    gc.freeze()
