"""Colab-like (see test_colab_chapters.py): every lab's solution runs top to bottom in the venv's kernel, and none of
its cells tagged ``raises-exception`` raises (they check the lab's functions: in the blank lab they must raise, which
nbval's run of labs/ checks through the root conftest.py)."""

from __future__ import annotations

import pytest
from ways_in_support import ROOT, SOLUTIONS, execute


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: str(p.relative_to(ROOT)))
def test_colab_runs_every_lab(path, colab, wheel, tmp_path, monkeypatch):
    nb = execute(path, colab.python, tmp_path, monkeypatch, QKV_INSTALL_FROM=wheel.as_uri())
    raised = [
        f"cell {i}: {o.ename}: {o.evalue}"
        for i, c in enumerate(nb.cells)
        if "raises-exception" in c.metadata.get("tags", [])
        for o in c.get("outputs", [])
        if o.output_type == "error"
    ]
    assert not raised, f"{path.name}: tagged cells raise in the solution: {raised}"
