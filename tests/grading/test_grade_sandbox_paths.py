"""The sandbox imports every installed module whatever the grader's umask and install prefix.

Bubblewrap creates a missing parent folder of a bind with the caller's umask (0700 under umask 077 with
Debian 12's bubblewrap 0.8.0): ``/opt`` of ``/opt/qkv-grader`` was such a folder, so the unprivileged child
could not import ``qkv.selfcheck`` and every lab's self-check cells stopped at that import. Every parent folder
of every mount must be made traversable; here under umask 077, with a runtime under a 0700 parent folder.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from qkv.grading import bwrap, sandbox
from qkv.grading.testing import COURSE

PROBE = """
import os, sys
for path in sys.argv[1:]:
    for parent in [*reversed(__import__('pathlib').Path(path).parents), __import__('pathlib').Path(path)]:
        mode = os.stat(parent).st_mode & 0o777
        if not mode & 0o001:
            raise SystemExit(f"{parent} is mode {mode:o}: others cannot enter it")
if os.geteuid() == 0:  # as the grader does: the child runs as an unprivileged uid
    os.setgroups([])
    os.setresgid(61000, 61000, 61000)
    os.setresuid(61000, 61000, 61000)
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import qkv.selfcheck, probe_module
print(probe_module.VALUE)
"""


def test_every_parent_of_every_mount_is_made_traversable(monkeypatch):
    """The principle, on the command line: each mount's missing parent folders get an explicit mode 0755."""
    monkeypatch.setattr(bwrap, "_runtime_roots", lambda: ["/srv/private/a/runtime", "/opt/python"])
    cmd = bwrap.bwrap_command("bwrap", Path("/somewhere/lib"), ["true"])
    targets, dirs = [], set()
    for i, arg in enumerate(cmd):
        if arg in ("--ro-bind", "--symlink"):
            targets.append(cmd[i + 2])
        elif arg in ("--proc", "--dev", "--tmpfs"):
            targets.append(cmd[i + 1])
        elif arg == "--dir":
            assert cmd[i - 2 : i] == ["--perms", "0755"], cmd[i - 2 : i + 2]
            dirs.add(cmd[i + 1])
    assert bwrap.INSIDE in targets and "/srv/private/a/runtime" in targets
    for target in targets:
        for parent in Path(target).parents:
            if str(parent) != "/":
                assert str(parent) in dirs or str(parent) in targets, f"{parent} of {target} is left to bwrap"
    assert {"/opt", "/etc", "/srv", "/srv/private", "/srv/private/a"} <= dirs


def test_the_child_imports_everything_under_umask_077_and_a_private_prefix(tmp_path, monkeypatch):
    """A runtime folder under a mode-0700 parent (as a venv under /root), the grader under umask 077."""
    private = tmp_path / "private"
    site = private / "site"
    site.mkdir(parents=True)
    (site / "probe_module.py").write_text("VALUE = 'imported'\n")
    site.chmod(0o755)
    (site / "probe_module.py").chmod(0o644)
    private.chmod(0o700)
    roots = bwrap._runtime_roots()
    monkeypatch.setattr(bwrap, "_runtime_roots", lambda: [*roots, str(site)])
    lib = sandbox.make_lib(COURSE / "src" / "qkv", tmp_path / "lib-copy")
    cmd = bwrap.bwrap_command(
        bwrap.bwrap_path() or "bwrap",
        lib,
        [bwrap.python_executable(), "-I", "-c", PROBE, bwrap.INSIDE, str(site), *roots],
    )
    old = os.umask(0o077)
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    finally:
        os.umask(old)
    assert done.returncode == 0 and done.stdout.strip() == "imported", done.stderr[-2000:]
