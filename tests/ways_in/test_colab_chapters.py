"""Colab-like: torch, numpy, matplotlib, ipywidgets, ipykernel and no qkv; the notebooks' own install cell installs
``qkv[lab]`` from the wheel (``QKV_INSTALL_FROM``), then every chapter runs top to bottom in that venv's kernel.
The labs' solutions run in test_colab_labs.py (another module, so another xdist worker)."""

from __future__ import annotations

import json

import pytest
from ways_in_support import CHAPTERS, ROOT, execute, run


def test_colab_install_cell_installs_qkv_from_the_source_given(colab, wheel, tmp_path):
    assert colab.found_before == "None", "the Colab-like venv must start without qkv"
    where = run([colab.python, "-c", "import qkv; print(qkv.__file__)"], tmp_path).stdout.strip()
    assert where.startswith(str(colab.python.parents[1])), f"qkv imported from {where}, not the venv's own install"
    dists = run([colab.python, "-m", "pip", "list", "--format=json"], tmp_path).stdout
    assert {"name": "qkv", "version": wheel.name.split("-")[1]} in json.loads(dists)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_colab_runs_every_chapter(path, colab, wheel, tmp_path, monkeypatch):
    execute(path, colab.python, tmp_path, monkeypatch, QKV_INSTALL_FROM=wheel.as_uri())
