"""The worker: started once per parallel job inside the sandbox, it forks one fresh child per submission.

Layer: sandbox side, the top of it; runs inside the sandbox, started by ``sandbox.py`` as
``qkv_grader.worker`` from the copy that ``sandbox.make_lib`` makes; imports the standard library and the
sandbox side below it (``events``, ``protocol``, ``jobs``, ``limits``, ``child``). The worker (trusted) imports torch and friends
once, then for each job forks a child (``child.py``), enforces the wall-clock limit, caps the bytes read, kills
every process the submission started, removes its files, and relays the child's raw bytes to the grader.
"""

from __future__ import annotations

import json
import os
import pickle
import select
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import replace

from .child import run_child, short
from .events import MAX_TRACE, Internal
from .jobs import Header, Job, Ready, WorkerConfig
from .limits import become
from .protocol import read_frame, write_frame


def _as_uid(cfg: WorkerConfig, fn) -> None:
    """Run ``fn`` in a short-lived helper process with the submission's uid."""
    helper = os.fork()
    if helper == 0:
        try:
            become(cfg.uid)
            fn()
        except BaseException:
            pass
        os._exit(0)
    os.waitpid(helper, 0)


def _remove_own_files() -> None:
    uid = os.getuid()
    for top in ("/tmp", "/var/tmp", "/dev/shm"):
        try:
            entries = os.listdir(top)
        except OSError:
            continue
        for name in entries:
            path = os.path.join(top, name)
            try:
                if os.lstat(path).st_uid != uid:
                    continue
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.unlink(path)
            except OSError:
                pass


def _kill_leftovers(pid: int, cfg: WorkerConfig, cwd: str) -> None:
    """Every process the submission started is gone, and its files too, when this returns."""
    for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            target()
        except (ProcessLookupError, PermissionError):
            pass
    mode = cfg.kill
    if mode == "namespace":  # the worker is alone in its PID namespace: -1 reaches every other process in it
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
    elif mode == "uid":  # a helper with the submission's uid kills every process of that uid (but itself)
        _as_uid(cfg, lambda: os.kill(-1, signal.SIGKILL))
        _as_uid(cfg, _remove_own_files)  # no sandbox: /tmp and /dev/shm are shared; leave nothing for the next one
    while True:  # reap
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break
    if cfg.drop:  # the files belong to the submission's uid: remove them as that uid
        _as_uid(cfg, lambda: shutil.rmtree(cwd, ignore_errors=True))
        try:
            os.rmdir(cwd)
        except OSError:
            pass
    else:
        shutil.rmtree(cwd, ignore_errors=True)


def run_job(job: Job, cfg: WorkerConfig) -> tuple[Header, bytes]:
    """Fork a child for ``job``, collect what it writes until it ends or its time is up; the header says how it ended."""
    cwd = tempfile.mkdtemp(prefix="sub-", dir=cfg.tmp)
    if cfg.drop:
        os.chown(cwd, cfg.uid, cfg.uid)
    job = replace(job, cwd=cwd)
    r, w = os.pipe()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child
        try:
            os.close(r)
            run_child(job, w, cfg)
        except BaseException as err:  # the grader's own failure (or the student's doing): report it if possible
            try:
                import traceback

                msg = Internal(short(err), traceback.format_exc()[-MAX_TRACE:])
                write_frame(3, json.dumps(msg.to_wire()).encode())
            except BaseException:
                pass
        finally:
            os._exit(0)
    os.close(w)
    deadline = start + job.limits.timeout
    buf = bytearray()
    state, exit_status = "exited", None
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    eof = False
    while True:
        now = time.monotonic()
        if now >= deadline:
            state = "timeout"
            break
        watch = [r] if not eof else []
        if pidfd is not None:
            watch.append(pidfd)
        ready, _, _ = select.select(watch, [], [], min(deadline - now, 0.5 if pidfd is None else deadline - now))
        if r in ready:
            chunk = os.read(r, 1 << 16)
            if not chunk:
                eof = True
            else:
                buf += chunk
                if len(buf) > cfg.max_bytes:
                    state = "output"
                    break
        done_pid, status = os.waitpid(pid, os.WNOHANG)
        if done_pid:
            exit_status = status
            # drain what the child wrote before it ended (its descendants may hold the pipe open)
            while select.select([r], [], [], 0)[0]:
                chunk = os.read(r, 1 << 16)
                if not chunk or len(buf) > cfg.max_bytes:
                    break
                buf += chunk
            break
    _kill_leftovers(pid, cfg, cwd)
    if exit_status is None:
        try:
            exit_status = os.waitpid(pid, 0)[1]
        except ChildProcessError:
            exit_status = 0
    for fdx in (r, pidfd):
        if fdx is not None:
            os.close(fdx)
    header = Header(
        state=state,
        signal=os.WTERMSIG(exit_status) if os.WIFSIGNALED(exit_status) else None,
        exit=os.WEXITSTATUS(exit_status) if os.WIFEXITED(exit_status) else None,
        wall=round(time.monotonic() - start, 3),
        bytes=len(buf),
    )
    return header, bytes(buf[: cfg.max_bytes])


def main() -> None:
    """The worker's loop: a configuration frame, then one job frame per submission, until the grader closes stdin."""
    inp, out = sys.stdin.fileno(), sys.stdout.fileno()
    cfg = WorkerConfig.from_wire(pickle.loads(read_frame(inp)))
    os.environ.update({"MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONHASHSEED": "0"})
    environment = dict(os.environ)
    import numpy  # noqa: F401  everything a submission is likely to import, loaded once here
    import torch

    torch.set_num_threads(1)
    for name in cfg.preload:
        try:
            __import__(name)
        except Exception as err:  # pragma: no cover
            print(f"preload {name}: {err}", file=sys.stderr)
    library = sys.modules.get("qkv")  # preloaded; it loads its names on first use (qkv/__init__.py): load them once
    for public in getattr(library, "__all__", ()):
        getattr(library, public)
    import matplotlib

    matplotlib.use("Agg")
    # Imports may set variables (torch's inductor sets TORCHINDUCTOR_CACHE_DIR when a module of it first loads):
    # a notebook sees the configured environment, whichever modules its worker had to import itself.
    os.environ.clear()
    os.environ.update(environment)
    if not cfg.drop:  # same uid as the children: at least keep them from ptracing or reading this worker
        try:
            import ctypes

            ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
        except Exception:  # pragma: no cover
            pass
    import gc

    # What the worker loaded lives as long as it does: the children's garbage collections skip it, and its pages
    # stay shared instead of being copied into each child (the scaling lab's plotting cell: 1.4 -> 1.0 s of CPU).
    gc.freeze()
    write_frame(out, json.dumps(Ready(os.getpid(), os.getuid()).to_wire()).encode())
    while True:
        try:
            job = Job.from_wire(pickle.loads(read_frame(inp)))
        except EOFError:
            # The grader is done with this worker. Nothing is left to flush or clean (each job cleaned up after
            # itself), and a normal interpreter exit would tear down torch's modules for seconds: leave at once.
            os._exit(0)
        header, raw = run_job(job, cfg)
        write_frame(out, json.dumps(header.to_wire()).encode())
        write_frame(out, raw)
