"""Binder-like: repo2docker's steps, ``pip install --no-cache-dir -r binder/requirements.txt`` from the repository
root, then ``binder/postBuild``, over the student's set (requirements-lab.txt) linked in; then a lab runs."""

from __future__ import annotations

import os
import re

from ways_in_support import ROOT, copy_source, execute, fresh_venv, run


def test_binder_builds_the_way_repo2docker_does_and_runs_a_lab(tmp_path, monkeypatch):
    lab_pins = [
        line.split("==")[0]
        for line in (ROOT / "requirements-lab.txt").read_text().splitlines()
        if re.match(r"^[A-Za-z0-9]", line)
    ]
    python = fresh_venv(tmp_path, [*lab_pins, "torch"])
    path = f"{python.parent}{os.pathsep}{os.environ['PATH']}"
    run([python.parent / "pip", "install", "--no-cache-dir", "-r", "binder/requirements.txt"], ROOT, PATH=path)
    # postBuild builds qkv from the repository's root: a clean copy of it, without the notebooks
    repo = copy_source(tmp_path / "repo", "labs", "chapters")
    run(["bash", "binder/postBuild"], repo, PATH=path)
    where = run([python, "-c", "import qkv; print(qkv.__file__)"], tmp_path).stdout.strip()
    assert where.startswith(str(tmp_path / "venv")), where
    execute(ROOT / "solutions" / "masks" / "masks.ipynb", python, tmp_path / "kernels", monkeypatch)
