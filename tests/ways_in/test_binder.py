"""Binder-like: repo2docker's steps, ``pip install --no-cache-dir -r binder/requirements.txt`` from the repository
root, then ``binder/postBuild``, over the student's set (requirements-lab.txt) linked in; then a lab runs."""

from __future__ import annotations

import json
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


def test_binder_shows_students_no_solutions_and_no_instructor_tools(tmp_path):
    """What a student sees on Binder: the repository without solutions/ (nor tests/, whose corpus holds correct
    submissions), nbgrader's formgrader, create-assignment and course list off (server and JupyterLab), and
    `qkv check` grading a finished lab there from the installed package."""
    lab_pins = [
        line.split("==")[0]
        for line in (ROOT / "requirements-lab.txt").read_text().splitlines()
        if re.match(r"^[A-Za-z0-9]", line)
    ]
    python = fresh_venv(tmp_path, [*lab_pins, "torch"])
    path = f"{python.parent}{os.pathsep}{os.environ['PATH']}"
    run([python.parent / "pip", "install", "--no-cache-dir", "-r", "binder/requirements.txt"], ROOT, PATH=path)
    repo = copy_source(tmp_path / "repo", "chapters")
    run(["bash", "binder/postBuild"], repo, PATH=path)
    assert not (repo / "solutions").exists() and not (repo / "tests").exists()
    assert not [p for p in repo.rglob("*.ipynb") if "BEGIN SOLUTION" in p.read_text()]
    assert (repo / "labs" / "masks" / "masks.ipynb").is_file()

    server = run([python, "-m", "jupyter_server.extension.serverextension", "list"], repo, PATH=path)
    said = re.sub(r"\x1b\[[0-9;]*m", "", server.stdout + server.stderr)  # without its colours
    for ext, state in (("formgrader", "disabled"), ("course_list", "disabled"), ("assignment_list", "enabled")):
        assert re.search(rf"nbgrader\.server_extensions\.{ext}\s+{state}", said), said
    page = (  # the page configuration JupyterLab serves, merged from every config folder as JupyterLab does
        "import json; from jupyter_core.paths import jupyter_path; from jupyterlab_server.config import "
        "get_page_config; print(json.dumps(get_page_config(jupyter_path('labextensions'))))"
    )
    disabled = json.loads(run([python, "-c", page], repo, PATH=path).stdout)["disabledExtensions"]
    for plugin in ("formgrader", "create-assignment", "course-list"):
        assert f"@jupyter/nbgrader:{plugin}" in disabled, disabled  # JupyterLab lists the disabled ones

    solution = json.loads((ROOT / "solutions" / "masks" / "masks.ipynb").read_text())
    auto = sum(
        c["metadata"]["nbgrader"].get("points", 0)
        for c in solution["cells"]
        if c["cell_type"] == "code" and c["metadata"].get("nbgrader", {}).get("grade")
    )
    (repo / "labs" / "masks" / "mine.ipynb").write_text(json.dumps(solution))  # the student's finished lab
    out = run([python.parent / "qkv", "check", "masks", "labs/masks/mine.ipynb"], repo, PATH=path).stdout
    assert f"total: {auto:g} / {auto:g} autograded points" in out, out
