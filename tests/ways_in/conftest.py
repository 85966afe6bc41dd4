"""The wheel and the Colab-like venv, each built once per run and shared by the modules that use them."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from ways_in_support import CHAPTERS, COLAB_PREINSTALLED, built_once, copy_source, fresh_venv, run

FIND_QKV = "import importlib.util; print(importlib.util.find_spec('qkv'))"


@dataclass(frozen=True)
class Colab:
    python: Path
    found_before: str  # what find_spec("qkv") printed in the fresh venv, before the install cell ran


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built with ``python -m build --no-isolation`` (the pinned setuptools, offline) from a clean copy."""

    def build(folder: Path) -> None:
        src = copy_source(folder / "qkv")
        run([sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", folder / "dist", src], cwd=src)

    (found,) = (built_once(tmp_path_factory, "wheel", build) / "dist").glob("qkv-*.whl")
    return found


@pytest.fixture(scope="session")
def colab(tmp_path_factory, wheel) -> Colab:
    """A Colab-like venv: what Colab preinstalls and no qkv, then the notebooks' install cell run once in it with
    ``QKV_INSTALL_FROM`` pointing at the wheel, as the first notebook a student opens would."""

    def build(folder: Path) -> None:
        python = fresh_venv(folder, COLAB_PREINSTALLED)
        (folder / "found_before.txt").write_text(run([python, "-c", FIND_QKV], folder).stdout.strip())
        cells = nbformat.read(CHAPTERS[0], as_version=4).cells
        install = next(c.source for c in cells if c.cell_type == "code")
        run([python, "-c", install], folder, QKV_INSTALL_FROM=wheel.as_uri())

    folder = built_once(tmp_path_factory, "colab", build)
    return Colab(folder / "venv" / "bin" / "python", (folder / "found_before.txt").read_text())
