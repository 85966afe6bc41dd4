"""`qkv gradescope-bundle`: its options reach the grader, it carries its own lab's spec only and pins what the
grader needs, its README names the container from the measured peak, and its run_autograder, in a folder laid
out like Gradescope's /autograder, writes results.json in Gradescope's schema for a correct and a broken
submission, with no false error line for correct students, with and without bubblewrap."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile

from qkv.cli import main
from qkv.grading.gradescope import layout
from qkv.grading.testing import COURSE, completed_lab, with_function

LAB = "soft_lookup"
# Gradescope's container sizes (Autograder Settings): (CPUs, memory in MB).
SIZES = [(0.5, 768), (1.0, 1536), (2.0, 3072), (4.0, 6144)]


def _auto_points(lab: str) -> dict[str, float]:
    """The autograded cells of the solution notebook and their points (nbgrader's own metadata)."""
    nb = json.loads((COURSE / "solutions" / lab / f"{lab}.ipynb").read_text())
    meta = [c["metadata"].get("nbgrader", {}) for c in nb["cells"]]
    return {m["grade_id"]: float(m["points"]) for m in meta if m.get("grade") and not m.get("solution")}


def test_bundle_options_spec_and_readme(tmp_path, capsys):
    bundle = tmp_path / "b.zip"
    assert (
        main(
            [
                "gradescope-bundle",
                LAB,
                "--out",
                str(bundle),
                "--course",
                str(COURSE),
                "--timeout",
                "77",
                "--memory",
                "333",
            ]
        )
        == 0
    )
    with zipfile.ZipFile(bundle) as zf:
        names = zf.namelist()
        requirements = zf.read("requirements.txt").decode().split()
        run = zf.read("run_autograder").decode()
        readme = " ".join(zf.read("README.txt").decode().split())  # words, whatever the line breaks
    specs = {n.rsplit("/", 1)[-1] for n in names if "/grading/specs/" in n}
    # no other lab's spec; contracts.py: the helpers the specs share (masks' imports it)
    assert specs == {"__init__.py", "contracts.py", f"{LAB}.py"}
    assert not [n for n in names if n.startswith("solutions/") and not n.startswith(f"solutions/{LAB}/")]
    assert "--timeout 77" in run and "--memory 333" in run
    assert "77 s wall clock" in readme and "333 MB" in readme
    # the released lab rides along (its cells are not the student's); nbgrader is pinned as requirements.lock pins it
    assert f"labs/{LAB}/{LAB}.ipynb" in names and f"labs/zh/{LAB}/{LAB}.ipynb" in names
    lock = (COURSE / "requirements.lock").read_text()
    nbgrader = next(line.split()[0] for line in lock.splitlines() if line.lower().startswith("nbgrader=="))
    assert nbgrader in requirements

    measured = json.loads((COURSE / "benchmarks/results/gradescope_memory.json").read_text())["labs"][LAB]
    need = measured["peak_mb"] + 333
    cpus, mb = next(s for s in SIZES if s[1] >= need)
    expected = f"{cpus:g} CPU, {mb / 1024:g} GB" if mb >= 1024 else f"{cpus:g} CPU, {mb} MB"
    assert f"Container size: {expected}" in readme, readme
    assert f"peaked at {measured['peak_mb']:.0f} MB" in readme and f"took {measured['seconds']:.0f} s" in readme

    assert main(["gradescope-bundle", LAB, "--out", str(bundle), "--course", str(COURSE), "--timeout", "0"]) == 2
    assert "must be positive" in capsys.readouterr().err


def test_run_autograder_writes_gradescope_results(tmp_path):
    bundle = tmp_path / "b.zip"
    assert main(["gradescope-bundle", LAB, "--out", str(bundle), "--course", str(COURSE)]) == 0
    points = _auto_points(LAB)
    # correct students: the released lab filled in with the solution's answers (graded with bubblewrap where it
    # works, as here), and another correct softmax (graded without bubblewrap, as in a container that forbids it)
    completed = tmp_path / "completed.ipynb"
    completed.write_text(json.dumps(completed_lab(LAB)))
    variant = tmp_path / "variant.ipynb"
    softmax = (
        "def stable_softmax(scores):\n"
        "    s = scores.double()\n"
        "    return torch.exp(s - torch.logsumexp(s, dim=-1, keepdim=True)).to(scores.dtype)\n"
    )
    variant.write_text(json.dumps(with_function(completed_lab(LAB), "stable_softmax", softmax)))
    for name, notebook, expected, bwrap in [
        ("solution", COURSE / "solutions" / LAB / f"{LAB}.ipynb", points, None),
        ("broken", COURSE / "labs" / LAB / f"{LAB}.ipynb", dict.fromkeys(points, 0.0), None),
        ("completed", completed, points, None),
        ("variant", variant, points, ""),  # QKV_BWRAP="": no bubblewrap
    ]:
        res = _run_autograder(bundle, tmp_path / name / "autograder", notebook, bwrap)
        assert {t["name"]: t["score"] for t in res["tests"]} == expected, name
        assert {t["name"]: t["max_score"] for t in res["tests"]} == points
        assert all(isinstance(t["output"], str) for t in res["tests"])
        assert res["score"] == sum(expected.values())
        if name in ("completed", "variant"):  # what a correct student reads: no error of any kind
            text = _clean_text(res)
            assert name != "variant" or "bubblewrap unavailable" in text, text  # the no-bubblewrap path it took


def test_a_lab_whose_spec_uses_contracts(tmp_path):
    """masks' spec imports the shared contracts.py: its bundle grades a correct student to full marks, cleanly."""
    bundle = tmp_path / "b.zip"
    assert main(["gradescope-bundle", "masks", "--out", str(bundle), "--course", str(COURSE)]) == 0
    notebook = tmp_path / "masks.ipynb"
    notebook.write_text(json.dumps(completed_lab("masks")))
    res = _run_autograder(bundle, tmp_path / "autograder", notebook, None)
    assert {t["name"]: t["score"] for t in res["tests"]} == _auto_points("masks")
    _clean_text(res)


def _run_autograder(bundle, root, notebook, bwrap: str | None) -> dict:
    """The bundle's run_autograder on ``notebook`` in ``root`` laid out like /autograder (``bwrap``: QKV_BWRAP)."""
    env = layout(bundle, root, notebook)
    if bwrap is not None:
        env["QKV_BWRAP"] = bwrap
    done = subprocess.run(
        [str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr
    return json.loads((root / "results" / "results.json").read_text())


def _clean_text(res: dict) -> str:
    """All that results.json shows the student, asserted free of any error line."""
    text = "\n".join([res.get("output", ""), *(t["output"] for t in res["tests"])])
    assert not any(w in text.lower() for w in ("error", "forbidden", "traceback")), text
    return text


def test_setup_refuses_a_cuda_torch(tmp_path):
    """setup.sh's check after the install: this venv's torch (a CPU build) passes; a torch reporting a CUDA build
    (what pip takes from PyPI when PyTorch's CPU index is unreachable) stops the setup with a message."""
    bundle = tmp_path / "b.zip"
    assert main(["gradescope-bundle", LAB, "--out", str(bundle), "--course", str(COURSE)]) == 0
    setup = zipfile.ZipFile(bundle).read("setup.sh").decode()
    check = setup[setup.index("# torch-check") : setup.index("# end torch-check")]
    stub = tmp_path / "stub" / "torch"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text('__version__ = "2.13.0+cu128"\n\n\nclass version:\n    cuda = "12.8"\n')

    def run(pythonpath: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "PY": sys.executable, "PYTHONPATH": pythonpath}
        return subprocess.run(["bash", "-euo", "pipefail", "-c", check], env=env, capture_output=True, text=True)

    cpu = run("")
    assert cpu.returncode == 0, cpu.stderr
    cuda = run(str(stub.parent))
    assert cuda.returncode != 0
    assert "torch 2.13.0+cu128 (CUDA 12.8) is not the CPU build" in cuda.stderr
    assert "download.pytorch.org/whl/cpu" in cuda.stderr
