"""The ways in, each from a clean venv with nothing of the repository on the path: the built wheel, Colab, Binder.

One wheel is built per session (``python -m build --no-isolation``: the pinned setuptools, offline). The fresh
venvs get their preinstalled packages (torch, numpy, JupyterLab...) by linking those distributions, and only those
with what they require, from this test's own environment through a ``.pth`` file: offline, no multi-minute torch
install per venv, and pip inside the venv sees them as installed (and never uninstalls them: they lie outside its
prefix). Everything else goes through pip with ``--no-index``, exactly as a user's pip would install it.

* Colab-like: torch, numpy, matplotlib, ipywidgets, ipykernel and no qkv; the notebooks' own install cell installs
  ``qkv[lab]`` from the wheel (``QKV_INSTALL_FROM``), then every chapter and every lab's solution runs top to bottom
  in that kernel. The same venv is then the wheel's: docstring examples and one ``qkv grade`` (``--no-sandbox``:
  bubblewrap would bind only the venv's prefix, not the linked packages; the sandbox has its own tests).
* Binder-like: repo2docker's steps, ``pip install --no-cache-dir -r binder/requirements.txt`` from the repository
  root, then ``binder/postBuild``, over the student's set (requirements-lab.txt) linked in; then a lab runs.
"""

from __future__ import annotations

import csv
import importlib.metadata as md
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from packaging.requirements import Requirement
from test_docstrings import MODULES

ROOT = Path(__file__).resolve().parents[1]
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


def run(cmd: list, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    full.update({k: v for k, v in {**CLEAN_ENV, **env}.items() if v is not None})
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, env=full, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (
        f"{' '.join(map(str, cmd))} failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    )
    return done


def execute(path: Path, python: Path, kernels: Path, monkeypatch: pytest.MonkeyPatch, **env: str) -> None:
    """Run the notebook at ``path`` top to bottom in a kernel of ``python``, in the notebook's own folder."""
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
    NotebookClient(nb, kernel_name="fresh", timeout=180, resources={"metadata": {"path": str(path.parent)}}).execute()


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    src = tmp_path_factory.mktemp("src") / "qkv"  # a clean copy: no build/ or egg-info left in the worktree
    shutil.copytree(
        ROOT,
        src,
        ignore=shutil.ignore_patterns(
            ".*", "_build", "node_modules", "work", "dist", "build", "*.egg-info", "__pycache__"
        ),
    )
    run([sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", out, src], cwd=src)
    (found,) = out.glob("qkv-*.whl")
    return found


@pytest.fixture(scope="session")
def colab(tmp_path_factory) -> Path:
    """A Colab-like venv (its python): what Colab preinstalls, no qkv."""
    return fresh_venv(tmp_path_factory.mktemp("colab"), COLAB_PREINSTALLED)


def test_wheel_holds_the_package_and_its_metadata(wheel):
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    assert "qkv/__init__.py" in names and "qkv/grading/specs/soft_lookup.py" in names and "qkv/py.typed" in names
    assert not [n for n in names if n.startswith(("tests/", "chapters/", "solutions/"))]
    meta = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    version = re.search(r'^__version__ = "(.+)"$', (ROOT / "src/qkv/__init__.py").read_text(), re.M).group(1)
    assert f"\nVersion: {version}\n" in meta and "Requires-Python: >=3.11" in meta
    for extra in ("lab", "grade", "course", "book", "dev"):
        assert f"Provides-Extra: {extra}\n" in meta


def test_colab_install_cell_installs_qkv_from_the_source_given(colab, wheel, tmp_path):
    probe = [colab, "-c", "import importlib.util; print(importlib.util.find_spec('qkv'))"]
    assert run(probe, tmp_path).stdout.strip() == "None", "the Colab-like venv must start without qkv"
    cell = nbformat.read(CHAPTERS[0], as_version=4).cells
    code = next(c.source for c in cell if c.cell_type == "code")
    run([colab, "-c", code], tmp_path, QKV_INSTALL_FROM=wheel.as_uri())
    where = run([colab, "-c", "import qkv; print(qkv.__file__)"], tmp_path).stdout.strip()
    assert where.startswith(str(colab.parents[1])), f"qkv imported from {where}, not from the venv's own install"
    dists = run([colab, "-m", "pip", "list", "--format=json"], tmp_path).stdout
    assert {"name": "qkv", "version": wheel.name.split("-")[1]} in json.loads(dists)


@pytest.mark.parametrize("path", CHAPTERS + SOLUTIONS, ids=lambda p: str(p.relative_to(ROOT)))
def test_colab_runs_every_chapter_and_lab(path, colab, wheel, tmp_path, monkeypatch):
    execute(path, colab, tmp_path, monkeypatch, QKV_INSTALL_FROM=wheel.as_uri())


def test_wheel_runs_the_docstring_examples(colab, wheel, tmp_path):
    run([colab, "-m", "pip", "install", "-q", f"qkv[grade] @ {wheel.as_uri()}"], tmp_path)  # already there: a no-op
    script = (
        "import doctest, importlib, qkv\n"
        f"for name in {MODULES!r}:\n"
        "    r = doctest.testmod(importlib.import_module('qkv.' + name), optionflags=doctest.NORMALIZE_WHITESPACE)\n"
        "    print(name, r.attempted, r.failed)\n"
    )
    lines = run([colab, "-c", script], tmp_path).stdout.split()
    counts = {lines[i]: (int(lines[i + 1]), int(lines[i + 2])) for i in range(0, len(lines), 3)}
    assert set(counts) == set(MODULES)
    assert all(attempted > 0 and failed == 0 for attempted, failed in counts.values()), counts


def test_wheel_grades_a_lab(colab, wheel, tmp_path):
    lab = "soft_lookup"
    solution = ROOT / "solutions" / lab / f"{lab}.ipynb"
    shutil.copytree(solution.parent, tmp_path / "course" / "solutions" / lab)
    (tmp_path / "subs").mkdir()
    shutil.copy(solution, tmp_path / "subs" / "alice.ipynb")
    qkv = colab.parent / "qkv"
    run(
        [
            qkv,
            "grade",
            lab,
            tmp_path / "subs",
            "--course",
            tmp_path / "course",
            "--out",
            tmp_path / "out",
            "--no-sandbox",
            "--jobs",
            "1",
            "--seed",
            "0",
            "--quiet",
        ],
        tmp_path,
    )
    (row,) = csv.DictReader((tmp_path / "out" / "grades.csv").open())
    cells = json.loads(solution.read_text())["cells"]
    autograded = sum(
        c["metadata"]["nbgrader"].get("points", 0)
        for c in cells
        if c["cell_type"] == "code" and c["metadata"].get("nbgrader", {}).get("grade")
    )
    assert autograded > 0 and (row["status"], float(row["total"]), float(row["max_total"])) == (
        "graded",
        autograded,
        autograded,
    )


def test_binder_builds_the_way_repo2docker_does_and_runs_a_lab(tmp_path, monkeypatch):
    lab_pins = [
        line.split("==")[0]
        for line in (ROOT / "requirements-lab.txt").read_text().splitlines()
        if re.match(r"^[A-Za-z0-9]", line)
    ]
    python = fresh_venv(tmp_path, [*lab_pins, "torch"])
    bindir = str(python.parent)
    path = f"{bindir}{os.pathsep}{os.environ['PATH']}"
    run([python.parent / "pip", "install", "--no-cache-dir", "-r", "binder/requirements.txt"], ROOT, PATH=path)
    # postBuild builds qkv from the repository; a copy keeps build/ and *.egg-info out of the worktree
    repo = tmp_path / "repo"
    shutil.copytree(
        ROOT,
        repo,
        ignore=shutil.ignore_patterns(
            ".*", "_build", "node_modules", "work", "dist", "build", "*.egg-info", "__pycache__", "labs", "chapters"
        ),
    )
    run(["bash", "binder/postBuild"], repo, PATH=path)
    where = run([python, "-c", "import qkv; print(qkv.__file__)"], tmp_path).stdout.strip()
    assert where.startswith(str(tmp_path / "venv")), where
    execute(ROOT / "solutions" / "masks" / "masks.ipynb", python, tmp_path / "kernels", monkeypatch)
