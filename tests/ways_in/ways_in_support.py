"""The ways in, each from a clean venv with nothing of the repository on the path: the built wheel, Colab, Binder.

The fresh venvs get their preinstalled packages (torch, numpy, JupyterLab...) by linking those distributions, and
only those with what they require, from this test's own environment through a ``.pth`` file: offline, no
multi-minute torch install per venv, and pip inside the venv sees them as installed (and never uninstalls them:
they lie outside its prefix). Everything else goes through pip with ``--no-index``, exactly as a user's pip would
install it. One module per environment, so that pytest-xdist (``--dist loadscope``) spreads them over its workers;
what several modules share (the wheel, the Colab-like venv) is built once per run by whichever worker asks first.
"""

from __future__ import annotations

import fcntl
import importlib.metadata as md
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbformat import NotebookNode
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted(ROOT.glob("chapters/*.ipynb"))
SOLUTIONS = sorted(ROOT.glob("solutions/*/*.ipynb"))
COLAB_PREINSTALLED = ["torch", "numpy", "matplotlib", "ipywidgets", "ipykernel"]
# A clean environment for every command: none of the repository's paths, pip offline and quiet.
CLEAN_ENV = {
    "PYTHONPATH": None,
    "PIP_NO_INDEX": "1",
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    "PIP_NO_INPUT": "1",
    "MPLBACKEND": "Agg",
    "PYTHONNOUSERSITE": "1",
}
# What a copy of the repository leaves out: git, venvs, build outputs, the student's work/.
NOT_SOURCE = (".*", "_build", "node_modules", "work", "dist", "build", "*.egg-info", "__pycache__")


def _name(text: str) -> str:
    return re.sub(r"[-_.]+", "-", text).lower()


def closure(names: list[str]) -> set[str]:
    """The distributions ``names`` need at run time, extras asked for included, as installed in this environment."""
    todo, seen = [(_name(n), frozenset()) for n in names], set()
    while todo:
        name, extras = todo.pop()
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        for line in md.distribution(name).requires or []:
            req = Requirement(line)
            if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in {"", *extras}):
                todo.append((_name(req.name), frozenset(req.extras)))
    return {name for name, _ in seen}


def fresh_venv(where: Path, preinstalled: list[str]) -> Path:
    """A new venv at ``where/venv`` that sees exactly ``preinstalled`` (and what they require); its python."""
    subprocess.run([sys.executable, "-m", "venv", str(where / "venv")], check=True)
    shelf = where / "preinstalled"  # outside the venv's prefix: pip there never uninstalls these
    shelf.mkdir()
    for name in sorted(closure(preinstalled)):
        dist = md.distribution(name)
        for top in {f.parts[0] for f in dist.files or [] if f.parts[0] != ".."}:
            src = Path(dist.locate_file(top))
            if src.exists() and not (shelf / top).exists() and not top.endswith(".pth") and top != "__pycache__":
                (shelf / top).symlink_to(src)
    python = where / "venv" / "bin" / "python"
    # the venv's own setuptools (Python 3.11 bundles one) would hide the linked, pinned one
    subprocess.run([python, "-m", "pip", "uninstall", "-q", "-y", "setuptools"], check=True)
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(purelib, "_preinstalled.pth").write_text(f"{shelf}\n")
    return python


def copy_source(dest: Path, *leave_out: str) -> Path:
    """A clean copy of the repository at ``dest`` (builds there leave no build/ or egg-info in the worktree)."""
    shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(*NOT_SOURCE, *leave_out))
    return dest


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """The folder ``name`` that ``build`` fills once per test run: the first xdist worker to ask builds it while
    the others wait on a lock, then all use it (their temporary folders share this run's parent)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    folder = base / name
    with open(base / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not (folder / ".built").exists():
            shutil.rmtree(folder, ignore_errors=True)  # a build that failed in another worker
            folder.mkdir()
            build(folder)
            (folder / ".built").touch()
    return folder


def run(cmd: list, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    full.update({k: v for k, v in {**CLEAN_ENV, **env}.items() if v is not None})
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, env=full, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (
        f"{' '.join(map(str, cmd))} failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    )
    return done


def execute(path: Path, python: Path, kernels: Path, monkeypatch: pytest.MonkeyPatch, **env: str) -> NotebookNode:
    """Run the notebook at ``path`` top to bottom in a kernel of ``python``, in the notebook's own folder; the
    notebook with its outputs (an error is allowed only in a cell tagged ``raises-exception``)."""
    spec = kernels / "kernels" / "fresh"
    spec.mkdir(parents=True, exist_ok=True)
    argv = [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "fresh", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(kernels))
    monkeypatch.delenv("PYTHONPATH", raising=False)
    for key, value in {**CLEAN_ENV, **env}.items():
        if value is not None:
            monkeypatch.setenv(key, value)
    nb = nbformat.read(path, as_version=4)
    return NotebookClient(
        nb, kernel_name="fresh", timeout=180, resources={"metadata": {"path": str(path.parent)}}
    ).execute()
