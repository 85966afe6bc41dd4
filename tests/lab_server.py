"""A JupyterLab server for a test: on 127.0.0.1, a free port, a fresh token, no news or update check.

Used by test_course.py (the hub image's configuration) and browser/test_jupyterlab.py (the labs in Chromium);
each passes the environment that chooses the configuration it tests.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

START_TIMEOUT_S = 180  # two busy cores: 20 to 40 s seen while other tests ran


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except OSError:  # not listening yet
        return False


@contextlib.contextmanager
def running_jupyterlab(root: Path, env: dict[str, str], log: Path) -> Iterator[tuple[str, str]]:
    """JupyterLab serving `root` with `env`, its output in `log`; yields (base URL ending in "/", token) once
    /api/status answers, and stops the server after. Fails the test, with the log's end, if the server exits
    or does not answer within START_TIMEOUT_S."""
    token = secrets.token_hex(24)
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")
    with open(log, "wb") as out:
        server = subprocess.Popen(command, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _answers(f"{base}api/status?token={token}"):
            if server.poll() is not None:
                pytest.fail(f"JupyterLab exited with {server.returncode}:\n{log.read_text()[-3000:]}", pytrace=False)
            if time.monotonic() > deadline:
                pytest.fail(
                    f"JupyterLab did not start in {START_TIMEOUT_S} s:\n{log.read_text()[-3000:]}", pytrace=False
                )
            time.sleep(0.5)
        yield base, token
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
