"""The pins and the install story stay consistent: locks, extras, Binder, one version, one install cell.

The environments themselves (wheel, Colab, Binder) are built and run in ``tests/ways_in/``.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import re
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _name(text: str) -> str:
    return re.sub(r"[-_.]+", "-", text).lower()


def pins(path: Path) -> dict[str, str]:
    """``name==version`` lines of a requirements file (hash and option lines skipped)."""
    found = {}
    for line in path.read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)", line)
        if m:
            found[_name(m.group(1))] = m.group(2)
    return found


def load_tool():
    spec = importlib.util.spec_from_file_location("install_cell", ROOT / "tools" / "install_cell.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("lock", ["requirements.lock", "requirements-lab.txt"])
def test_locks_pin_every_package_with_hashes_and_no_machine_notes(lock):
    text = (ROOT / lock).read_text()
    blocks = re.split(r"\n(?=[A-Za-z0-9])", text.split("\n", 1)[1])
    entries = [b for b in blocks if re.match(r"^[A-Za-z0-9]", b)]
    assert len(entries) == len(pins(ROOT / lock)) > 50
    unhashed = [b.split()[0] for b in entries if "--hash=sha256:" not in b]
    assert unhashed == [], f"{lock}: pins without a hash: {unhashed}"
    assert not re.search(r"/opt/|file://|this machine|^--(find-links|index-url|extra-index-url)", text, re.M), (
        f"{lock} mentions this machine's package sources"
    )
    assert "torch" not in pins(ROOT / lock), "torch is installed by its own step (requirements-torch.txt)"
    cuda = [n for n in pins(ROOT / lock) if n.startswith("nvidia-") or n == "triton"]
    assert cuda == [], f"{lock} holds the CUDA build's dependencies (lock against the CPU build): {cuda}"


def test_lock_pins_the_course_and_the_tools():
    # which versions is the lock's business (a bump is no failure); that each of these is pinned exactly is ours
    lock = pins(ROOT / "requirements.lock")
    tools = ("jupyter-book", "nbgrader", "numpy", "ruff", "pip-tools", "build", "setuptools")
    assert [t for t in tools if t not in lock] == []
    assert list(pins(ROOT / "requirements-torch.txt")) == ["torch"]


def test_every_declared_dependency_is_locked():
    project = PYPROJECT["project"]
    declared = list(project["dependencies"]) + [r for extra in project["optional-dependencies"].values() for r in extra]
    lock = pins(ROOT / "requirements.lock") | pins(ROOT / "requirements-torch.txt")
    for line in declared:
        req = Requirement(line)
        assert _name(req.name) in lock, f"{req.name} is declared in pyproject.toml but not locked"
        assert req.specifier.contains(lock[_name(req.name)]), f"{req}: the lock has {lock[_name(req.name)]}"


def test_students_lock_is_a_small_subset_of_the_authors_lock():
    lock, lab = pins(ROOT / "requirements.lock"), pins(ROOT / "requirements-lab.txt")
    assert {n: v for n, v in lab.items() if lock.get(n) != v} == {}, "the two locks disagree"
    for needed in ("jupyterlab", "ipywidgets", "matplotlib", "nbgrader", "numpy"):
        assert needed in lab
    for authoring in ("jupyter-book", "sphinx", "pytest", "playwright", "hypothesis", "nbval", "pip-tools"):
        assert authoring not in lab, f"{authoring} is an authoring tool, not for students"


def test_one_version_source_and_a_true_python_requirement():
    project = PYPROJECT["project"]
    assert "version" not in project and project["dynamic"] == ["version"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "qkv.__version__"}
    assert re.search(r'^__version__ = "\d+\.\d+\.\d+"$', (ROOT / "src/qkv/__init__.py").read_text(), re.M)
    assert project["requires-python"] == ">=3.11"
    assert "Python 3.11" in (ROOT / "README.md").read_text()
    assert (ROOT / "binder" / "runtime.txt").read_text().strip() == "python-3.11"


def test_binder_installs_cpu_torch_and_the_students_versions_only():
    text = (ROOT / "binder" / "requirements.txt").read_text()
    assert re.search(r"^--extra-index-url https://download.pytorch.org/whl/cpu$", text, re.M)
    binder, lab = pins(ROOT / "binder" / "requirements.txt"), pins(ROOT / "requirements-lab.txt")
    assert binder.pop("torch") == pins(ROOT / "requirements-torch.txt")["torch"]
    assert {n: v for n, v in binder.items() if lab.get(n) != v} == {}, "Binder's pins differ from the students' lock"
    assert "--no-deps" in (ROOT / "binder" / "postBuild").read_text()


def test_every_chapter_and_lab_opens_with_the_install_cell_from_the_config():
    tool = load_tool()
    code = tool.source()
    url, branch = (yaml.safe_load((ROOT / "_config.yml").read_text())["repository"][k] for k in ("url", "branch"))
    assert f'"git+{url}@{branch}"' in code and "QKV_INSTALL_FROM" in code and "qkv[lab] @" in code
    notebooks = tool.notebooks() + sorted(ROOT.glob("labs/*/*.ipynb"))
    assert len(notebooks) == 10 + 8 + 8
    for path in notebooks:
        cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
        first = cells[0]
        assert "".join(first["source"]) == code, f"{path.relative_to(ROOT)}: run tools/install_cell.py"
        assert "remove-cell" in first["metadata"]["tags"] and first["metadata"]["nbgrader"]["locked"]
        others = "".join("".join(c["source"]) for c in cells[1:])
        assert "pip install" not in others and url not in others, f"{path.relative_to(ROOT)}: a second install"


def test_a_fork_changes_the_source_in_one_place(tmp_path):
    tool = load_tool()
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["repository"].update(url="https://example.org/fork/qkv/", branch="spring")
    (tmp_path / "_config.yml").write_text(yaml.safe_dump(config))
    nb = json.loads((ROOT / "chapters" / "soft_lookup.ipynb").read_text())
    fork = copy.deepcopy(nb)
    assert tool.apply(fork, tool.source(tmp_path / "_config.yml")) is True
    assert tool.apply(fork, tool.source(tmp_path / "_config.yml")) is False, "the tool is not idempotent"
    text = json.dumps(fork)
    assert "git+https://example.org/fork/qkv@spring" in text and config["repository"]["url"] not in text.replace(
        "https://example.org/fork/qkv@", ""
    )
    assert len(fork["cells"]) == len(nb["cells"])
    assert tool.apply(copy.deepcopy(nb), tool.source()) is False, "the committed notebook is not what the tool writes"


def test_the_tool_replaces_the_old_hard_coded_install_once():
    tool = load_tool()
    nb = json.loads((ROOT / "chapters" / "soft_lookup.ipynb").read_text())
    cells = [c for c in nb["cells"] if c.get("id") != tool.CELL_ID]
    setup = next(c for c in cells if c["cell_type"] == "code")
    body = "".join(setup["source"])
    legacy = (
        tool.LEGACY_START + '  # e.g. on Colab: install qkv\n    url = "git+https://github.com/qkv-course/qkv"\n'
        '    pip = [sys.executable, "-m", "pip", "install", "-q"]\n'
        '    subprocess.run([*pip, f"qkv[course] @ {url}"], check=True)\n\n'
    )
    setup["source"] = tool._lines(legacy + body)
    old = {**nb, "cells": cells}
    assert tool.apply(old, tool.source()) is True
    assert old == nb, "the old block was not replaced by exactly the committed cells"
