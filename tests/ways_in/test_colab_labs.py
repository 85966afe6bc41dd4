"""Colab-like (see test_colab_chapters.py): every lab's solution runs top to bottom in the venv's kernel."""

from __future__ import annotations

import pytest
from ways_in_support import ROOT, SOLUTIONS, execute


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: str(p.relative_to(ROOT)))
def test_colab_runs_every_lab(path, colab, wheel, tmp_path, monkeypatch):
    execute(path, colab.python, tmp_path, monkeypatch, QKV_INSTALL_FROM=wheel.as_uri())
