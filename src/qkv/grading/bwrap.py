"""Bubblewrap: finding it, checking it can make its namespaces here, and the command that starts a worker in it.

Layer: grader side, the bottom; imports only the standard library. The sandbox a worker gets: new PID, network, IPC
and UTS namespaces, no network, read-only binds of the Python runtime and the installed packages only, a private
``/tmp``, and ``/opt/qkv-grader`` (the copy of ``qkv`` without the grader that ``sandbox.make_lib`` makes). As root,
the worker keeps only CAP_SETUID, CAP_SETGID, CAP_KILL and CAP_CHOWN.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

INSIDE = "/opt/qkv-grader"  # where the sandbox sees the lib folder

BWRAP_HINT = (
    "bubblewrap (bwrap) is required to grade untrusted notebooks safely. Install it with "
    "`sudo apt-get install bubblewrap` (Debian/Ubuntu; `make system` does it), `sudo dnf install bubblewrap` "
    "(Fedora). On macOS there is no bubblewrap: grade on Linux (or in Docker), or pass --no-sandbox to run "
    "the submissions with resource limits only."
)


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
    # Site folders that a .pth file added (a venv layered on another, as the JupyterHub course's users' Python).
    roots.update(p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages"))
    roots = {os.path.realpath(r) for r in roots if r and os.path.exists(r)}
    keep: list[str] = []
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


def bwrap_command(bwrap: str, lib: Path, program: list[str]) -> list[str]:
    """The command that runs ``program`` in a fresh sandbox that sees ``lib`` at INSIDE."""
    cmd = [
        bwrap,
        "--unshare-ipc",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
    ]
    mounts = [("--proc", "/proc"), ("--dev", "/dev"), ("--tmpfs", "/tmp"), ("--ro-bind", "/usr", "/usr")]
    for top in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        p = Path("/") / top
        if p.is_symlink():
            mounts.append(("--symlink", os.readlink(p), f"/{top}"))
        elif p.is_dir():
            mounts.append(("--ro-bind", str(p), f"/{top}"))
    for etc in (
        "/etc/ld.so.cache",
        "/etc/ld.so.conf",
        "/etc/ld.so.conf.d",
        "/etc/alternatives",
        "/etc/fonts",
        "/etc/localtime",
    ):
        if os.path.exists(etc):
            mounts.append(("--ro-bind", etc, etc))
    mounts += [("--ro-bind", root, root) for root in _runtime_roots()]
    mounts.append(("--ro-bind", str(lib), INSIDE))
    return cmd + _with_parents(mounts) + ["--chdir", "/tmp"] + _rights(program)


def _with_parents(mounts: list[tuple[str, ...]]) -> list[str]:
    """The mounts' arguments, each preceded by a mode-0755 ``--dir`` for every parent folder of it that no
    mount provides. Bubblewrap creates a missing parent with the grader's umask (0700 under umask 077) or, in
    some versions, 0700 outright: the unprivileged child could not enter it (``/opt`` of ``/opt/qkv-grader``,
    ``/etc``, ``/root`` of a runtime under ``/root``) and would see only the modules the worker imported."""
    targets = {m[-1] for m in mounts}
    made: set[str] = {"/"}
    args: list[str] = []
    for m in mounts:
        for parent in reversed(Path(m[-1]).parents):
            if str(parent) not in made and str(parent) not in targets:
                made.add(str(parent))
                args += ["--perms", "0755", "--dir", str(parent)]
        args += list(m)
    return args


def _rights(program: list[str]) -> list[str]:
    """The worker's capabilities (as root: only those it needs to drop to the children's uids), its
    environment, and the program."""
    cmd: list[str] = []
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
    return cmd + program
