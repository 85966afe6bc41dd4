"""`qkv check`'s resident checker (qkv.checkserver), walked as a student uses it: checks one after another from a
shell in an empty folder. The second check answers what a check of its own would (the notebook read afresh,
right or wrong), without importing torch; the checker leaves when its session's processes are gone or when no
check came for its idle time; a socket folder that others could write is never used.

Each test has a socket folder of its own (XDG_RUNTIME_DIR), so no checker of another test or of the user answers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from qkv import checkserver
from qkv.grading.testing import COURSE, completed_lab

LAB = "soft_lookup"
PATIENCE = 120  # seconds to wait for the checker to appear or leave: generous, the machine may be loaded


def _env(runtime: Path, idle: float) -> dict[str, str]:
    return dict(os.environ, XDG_RUNTIME_DIR=str(runtime), QKV_CHECK_SERVER=str(idle))


def _check(nb: Path, env: dict, *flags: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, *flags, "-m", "qkv.cli", "check", LAB, nb.name, "--course", str(COURSE)]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=nb.parent, env=env, timeout=600)


def _sockets(runtime: Path) -> list[Path]:
    return sorted(runtime.glob("qkv-check-*/*.sock"))


def _wait(condition, what: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while not condition():
        assert time.monotonic() < deadline, f"waited {PATIENCE} s for {what}"
        time.sleep(0.2)


@pytest.fixture
def runtime():
    """The test's socket folder (short: a Unix socket's path has at most 108 bytes); afterwards its sockets are
    removed, which makes any checker left leave."""
    folder = Path(tempfile.mkdtemp(prefix="qkv-", dir="/tmp"))
    yield folder
    for path in _sockets(folder):
        path.unlink()
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def notebooks(tmp_path):
    folder = tmp_path / "work"
    folder.mkdir()
    solved, blank = folder / f"{LAB}.ipynb", folder / "blank.ipynb"
    solved.write_text(json.dumps(completed_lab(LAB)), encoding="utf-8")
    blank.write_bytes((COURSE / "labs" / LAB / f"{LAB}.ipynb").read_bytes())
    return solved, blank


def test_the_next_checks_are_answered_by_the_checker_as_a_check_of_their_own(tmp_path, runtime, notebooks):
    solved, blank = notebooks
    alone = {nb: _check(nb, _env(runtime, 0)) for nb in (solved, blank)}  # no checker: each check by itself
    assert not _sockets(runtime)
    assert "total: 10 / 10" in alone[solved].stdout and alone[blank].stdout != alone[solved].stdout

    env = _env(runtime, 300)
    first = _check(solved, env)
    assert (first.returncode, first.stdout) == (0, alone[solved].stdout), first.stderr
    _wait(lambda: _sockets(runtime), "the checker's socket")
    for nb in (blank, solved, blank):  # the notebook is read afresh each time
        served = _check(nb, env, "-X", "importtime")
        assert (served.returncode, served.stdout) == (0, alone[nb].stdout), served.stderr[-3000:]
        imported = {line.rsplit("|", 1)[-1].strip() for line in served.stderr.splitlines() if "|" in line}
        assert "qkv.check" in imported and "torch" not in imported, "the checker did not answer"
    missing = _check(tmp_path / "nowhere.ipynb", env)
    assert missing.returncode == 2 and "notebook not found" in missing.stderr


def test_the_checker_leaves_when_idle(tmp_path, runtime, notebooks):
    assert _check(notebooks[0], _env(runtime, 5))  # leaves 5 s after the preloads.returncode == 0
    _wait(lambda: _sockets(runtime), "the checker's socket")
    _wait(lambda: not _sockets(runtime), "the idle checker to leave")


def test_the_checker_leaves_with_the_session_that_started_it(tmp_path, runtime, notebooks):
    """A shell outside this test's process tree (its parent gone: `setsid -f`) checks, then ends: the checker,
    whose idle time is long, leaves with it."""
    nb, done = notebooks[0], tmp_path / "done"
    script = (
        f"{sys.executable} -m qkv.cli check {LAB} {nb.name} --course {COURSE} > out.txt 2>&1; touch {done}; sleep 3"
    )
    subprocess.run(["setsid", "-f", "bash", "-c", script], cwd=nb.parent, env=_env(runtime, 3600), check=True)
    _wait(done.exists, "the shell's check")
    assert "total: 10 / 10" in (nb.parent / "out.txt").read_text()
    _wait(lambda: not _sockets(runtime), "the checker to leave with its shell")


def test_no_checker_where_the_socket_path_is_too_long(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / ("x" * 80)))
    monkeypatch.setenv("QKV_CHECK_SERVER", "300")
    (tmp_path / ("x" * 80)).mkdir()
    assert checkserver.socket_path() is None
    assert checkserver.ask({"lab": LAB}) is None


def test_a_socket_folder_others_could_write_is_not_used(runtime, monkeypatch, notebooks):
    (runtime / f"qkv-check-{os.getuid()}").mkdir()
    os.chmod(runtime / f"qkv-check-{os.getuid()}", 0o777)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("QKV_CHECK_SERVER", "300")
    assert checkserver.socket_path() is None
    assert _check(notebooks[0], _env(runtime, 300)).returncode == 0
    time.sleep(1)
    assert not _sockets(runtime)
