"""The built wheel: its contents and metadata; installed (in the Colab-like venv, by the install cell) it runs the
docstring examples and one ``qkv grade`` (``--no-sandbox``: bubblewrap would bind only the venv's prefix, not the
linked packages; the sandbox has its own tests)."""

from __future__ import annotations

import csv
import json
import re
import shutil
import zipfile

from test_docstrings import MODULES
from ways_in_support import ROOT, run


def test_wheel_holds_the_package_and_its_metadata(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "qkv/__init__.py" in names and "qkv/grading/specs/soft_lookup.py" in names and "qkv/py.typed" in names
    assert {"qkv/data/sonnets.txt", "qkv/data/tang_quatrains.tsv", "qkv/data/decoder_tang.pt"} <= set(names)
    assert not [n for n in names if n.startswith(("tests/", "chapters/", "solutions/"))]
    meta = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    version = re.search(r'^__version__ = "(.+)"$', (ROOT / "src/qkv/__init__.py").read_text(), re.M).group(1)
    assert f"\nVersion: {version}\n" in meta and "Requires-Python: >=3.11" in meta
    for extra in ("lab", "grade", "course", "book", "dev"):
        assert f"Provides-Extra: {extra}\n" in meta


def test_wheel_runs_the_docstring_examples(colab, wheel, tmp_path):
    python = colab.python
    run([python, "-m", "pip", "install", "-q", f"qkv[lab] @ {wheel.as_uri()}"], tmp_path)  # the install cell's: a no-op
    script = (
        "import doctest, importlib, qkv\n"
        f"for name in {MODULES!r}:\n"
        "    r = doctest.testmod(importlib.import_module('qkv.' + name), optionflags=doctest.NORMALIZE_WHITESPACE)\n"
        "    print(name, r.attempted, r.failed)\n"
    )
    lines = run([python, "-c", script], tmp_path).stdout.split()
    counts = {lines[i]: (int(lines[i + 1]), int(lines[i + 2])) for i in range(0, len(lines), 3)}
    assert set(counts) == set(MODULES)
    assert all(attempted > 0 and failed == 0 for attempted, failed in counts.values()), counts


def test_wheel_grades_a_lab(colab, tmp_path):
    lab = "soft_lookup"
    solution = ROOT / "solutions" / lab / f"{lab}.ipynb"
    shutil.copytree(solution.parent, tmp_path / "course" / "solutions" / lab)
    (tmp_path / "subs").mkdir()
    shutil.copy(solution, tmp_path / "subs" / "alice.ipynb")
    qkv = colab.python.parent / "qkv"
    course, out = tmp_path / "course", tmp_path / "out"
    options = ["--no-sandbox", "--jobs", "1", "--seed", "0", "--quiet"]
    run([qkv, "grade", lab, tmp_path / "subs", "--course", course, "--out", out, *options], tmp_path)
    (row,) = csv.DictReader((out / "grades.csv").open())
    cells = json.loads(solution.read_text())["cells"]
    autograded = sum(
        c["metadata"]["nbgrader"].get("points", 0)
        for c in cells
        if c["cell_type"] == "code" and c["metadata"].get("nbgrader", {}).get("grade")
    )
    assert autograded > 0
    assert (row["status"], float(row["total"]), float(row["max_total"])) == ("graded", autograded, autograded)


def test_wheel_checks_a_lab_from_an_empty_folder_and_ships_no_solution(colab, wheel, tmp_path):
    """A student with only the wheel: ``qkv check`` in a folder that holds nothing but their notebook (no course,
    no repository above it) grades from the records the package ships; the wheel holds no solution notebook."""
    lab = "soft_lookup"
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        texts = [zf.read(n).decode("utf-8", "replace") for n in names]
    assert f"qkv/grading/specs/{lab}.json" in names
    assert not [n for n in names if n.endswith(".ipynb")]
    regions = re.compile(r"### BEGIN (SOLUTION|HIDDEN TESTS)\n(.*?)\n *### END \1", re.S)
    secret = [
        body
        for path in ROOT.glob("solutions/*/*.ipynb")
        for cell in json.loads(path.read_text())["cells"]
        for _, body in regions.findall("".join(cell["source"]))
        if body.count("\n") >= 2  # three lines or more: a region, not a line any code may hold
    ]
    assert len(secret) >= 8
    leaked = [n for n, t in zip(names, texts, strict=True) if any(body in t for body in secret)]
    assert leaked == [], f"solution or hidden-test code in the wheel: {leaked}"
    cells = json.loads((ROOT / "solutions" / lab / f"{lab}.ipynb").read_text())["cells"]
    autograded = sum(
        c["metadata"]["nbgrader"].get("points", 0)
        for c in cells
        if c["cell_type"] == "code" and c["metadata"].get("nbgrader", {}).get("grade")
    )
    manual = sum(
        c["metadata"]["nbgrader"].get("points", 0)
        for c in cells
        if c["cell_type"] == "markdown" and c["metadata"].get("nbgrader", {}).get("grade")
    )
    empty = tmp_path / "student"
    empty.mkdir()
    qkv = colab.python.parent / "qkv"
    # a finished notebook (the solution's code, as a student who got everything right has it) and the blank lab
    shutil.copy(ROOT / "solutions" / lab / f"{lab}.ipynb", empty / "mine.ipynb")
    shutil.copy(ROOT / "labs" / lab / f"{lab}.ipynb", empty / f"{lab}.ipynb")
    out = run([qkv, "check", lab, "mine.ipynb"], empty).stdout
    assert f"total: {autograded:g} / {autograded:g} autograded points" in out, out
    assert f"(plus {manual:g} points for written answers, graded by hand)" in out, out
    out = run([qkv, "check", lab, f"{lab}.ipynb"], empty).stdout
    assert f"total: 0 / {autograded:g} autograded points" in out, out
    assert sorted(p.name for p in empty.iterdir()) == sorted(["mine.ipynb", f"{lab}.ipynb"])
