"""`qkv grade` as the instructor meets it: exit statuses, no bubblewrap, resuming an interrupted batch,
--fresh, and Gradescope (results.json, the fallback without namespaces, the bundle's run_autograder)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

from qkv.cli import main
from qkv.grading.lab import load_lab, records
from qkv.grading.testing import COURSE

SOLUTION = (COURSE / "solutions/soft_lookup/soft_lookup.ipynb").read_bytes()
BLANK = (COURSE / "labs/soft_lookup/soft_lookup.ipynb").read_bytes()
ATTACKS = Path(__file__).parent / "attacks"


def _subs(folder: Path, n_solution: int = 1, n_blank: int = 1) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n_solution):
        (folder / f"s{i:02d}.ipynb").write_bytes(SOLUTION)
    for i in range(n_blank):
        (folder / f"b{i:02d}.ipynb").write_bytes(BLANK)
    return folder


def test_instructor_mistakes_exit_non_zero_with_a_message(tmp_path, capsys):
    subs = _subs(tmp_path / "subs")
    assert main(["grade", "no_such_lab", str(subs), "--out", str(tmp_path / "o"), "--course", str(COURSE)]) == 2
    assert "unknown lab 'no_such_lab'" in capsys.readouterr().err
    assert (
        main(["grade", "soft_lookup", str(tmp_path / "missing"), "--out", str(tmp_path / "o"), "--course", str(COURSE)])
        == 2
    )
    assert "submissions folder not found" in capsys.readouterr().err


def test_without_a_course_the_grader_reads_the_records_the_package_ships(tmp_path):
    """``qkv check`` where students are (no solutions/): the packaged record of each lab is what the course's
    solution and released lab give (``qkv labs`` writes it; ``qkv labs --check`` fails when it is stale), and no
    record holds the solution's code or its hidden tests."""
    shipped = records(COURSE)
    assert sorted(p.stem for p in shipped) == sorted(p.parent.name for p in COURSE.glob("solutions/*/*.ipynb"))
    for path, text in shipped.items():
        assert path.read_text(encoding="utf-8") == text, f"{path.name} is stale: run `qkv labs`"
        assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text
        course, packaged = load_lab(path.stem, COURSE), load_lab(path.stem, tmp_path)
        assert packaged.course is None and course.course == COURSE
        for field in ("order", "prompts", "locked", "released", "others"):
            assert getattr(packaged, field) == getattr(course, field), (path.stem, field)
        # the released lab's cells in both editions (the Chinese lab's code differs in its messages)
        blanks = [json.loads(p.read_text()) for p in COURSE.glob(f"labs/**/{path.stem}/{path.stem}.ipynb")]
        assert len(blanks) == 2
        assert {"".join(c["source"]).strip() for b in blanks for c in b["cells"]} - {""} == packaged.released


def test_without_bubblewrap_it_refuses_unless_no_sandbox(tmp_path, capsys, monkeypatch):
    subs = _subs(tmp_path / "subs", 1, 0)
    (subs / "crash.ipynb").write_bytes((ATTACKS / "segfault.ipynb.json").read_bytes())
    monkeypatch.setenv("QKV_BWRAP", "")  # as on macOS: no bwrap anywhere
    args = ["grade", "soft_lookup", str(subs), "--course", str(COURSE), "--jobs", "1", "--timeout", "30"]
    assert main([*args, "--out", str(tmp_path / "o1")]) == 2
    err = capsys.readouterr().err
    assert "bubblewrap not found" in err and "apt-get install bubblewrap" in err and "--no-sandbox" in err
    assert not (tmp_path / "o1" / "grades.csv").exists()
    # --no-sandbox warns, then grades; the crashing submission does not change the exit status.
    assert main([*args, "--out", str(tmp_path / "o2"), "--no-sandbox"]) == 0
    out = capsys.readouterr()
    assert "WITHOUT bubblewrap" in out.err
    rows = (tmp_path / "o2" / "grades.csv").read_text().splitlines()
    assert rows[1].startswith("crash,0,10,crashed") and rows[2].startswith("s00,10,10,graded")
    assert json.loads((tmp_path / "o2" / "run.json").read_text())["sandbox"] == "none"


def test_an_interrupted_batch_resumes_without_losing_or_doubling_rows(tmp_path):
    subs = _subs(tmp_path / "subs", 3, 3)
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "qkv.cli",
        "grade",
        "soft_lookup",
        str(subs),
        "--out",
        str(out),
        "--course",
        str(COURSE),
        "--jobs",
        "1",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and len(list((out / "results").glob("*.json"))) < 2 and proc.poll() is None:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # as hard as an interruption gets
    proc.wait()
    graded_before = len(list((out / "results").glob("*.json")))
    assert 2 <= graded_before < 6, "the batch finished before it could be interrupted"
    seed = json.loads((out / "run.json").read_text())["seed"]

    again = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert f"{graded_before} already graded, {6 - graded_before} to grade" in again.stdout
    rows = (out / "grades.csv").read_text().splitlines()
    assert len(rows) == 7 and len({r.split(",")[0] for r in rows[1:]}) == 6
    assert [r.split(",")[1] for r in rows[1:]] == ["0"] * 3 + ["10"] * 3
    assert json.loads((out / "run.json").read_text())["seed"] == seed
    assert not list(out.rglob("*.tmp")), "a half-written file was left behind"

    (subs / "s00.ipynb").write_bytes(BLANK)  # a changed submission is graded again; the rest come from the cache
    assert main([*cmd[3:], "--quiet"]) == 0
    assert (out / "grades.csv").read_text().splitlines()[4].startswith("s00,0,10,graded")
    assert main([*cmd[3:], "--fresh", "--quiet", "--seed", "99"]) == 0
    assert json.loads((out / "run.json").read_text())["seed"] == 99
    assert len(list((out / "results").glob("*.json"))) == 6


def test_gradescope_results_json_sandboxed_and_without_namespaces(tmp_path, capsys, monkeypatch):
    nb = tmp_path / "submission" / "whatever_name.ipynb"
    nb.parent.mkdir()
    nb.write_bytes(SOLUTION)
    assert (
        main(
            [
                "grade",
                "soft_lookup",
                str(nb.parent),
                "--out",
                str(tmp_path / "r1"),
                "--course",
                str(COURSE),
                "--gradescope",
                "--quiet",
            ]
        )
        == 0
    )
    res = json.loads((tmp_path / "r1" / "results.json").read_text())
    assert res["score"] == 10 and [t["name"] for t in res["tests"]] == [
        "test_dot_scores",
        "test_cosine_scores",
        "test_stable_softmax",
        "test_soft_lookup",
    ]
    assert all(t["score"] == t["max_score"] for t in res["tests"]) and "graded by hand" in res["output"]

    # Gradescope's container may forbid namespaces: bubblewrap then fails; the grade still happens, and says how.
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("QKV_BWRAP", str(fake))
    attack = json.loads((ATTACKS / "gradebook_tamper.ipynb.json").read_text().replace("__OUT__", str(tmp_path / "r2")))
    attack["cells"].insert(
        3,
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
            "source": f"open({str(tmp_path / 'r2' / 'results.json')!r}, 'w').write('{{\"score\": 100}}')",
        },
    )
    nb.write_text(json.dumps(attack))
    (tmp_path / "r2").mkdir()
    assert (
        main(
            [
                "grade",
                "soft_lookup",
                str(nb),
                "--out",
                str(tmp_path / "r2"),
                "--course",
                str(COURSE),
                "--gradescope",
                "--quiet",
            ]
        )
        == 0
    )
    res = json.loads((tmp_path / "r2" / "results.json").read_text())
    assert res["score"] == 0 and "bubblewrap unavailable here" in res["output"] and "No permissions" in res["output"]
    assert "bubblewrap unavailable" in capsys.readouterr().err


def test_gradescope_bundle_runs_its_own_run_autograder(tmp_path):
    bundle = tmp_path / "soft_lookup.zip"
    assert main(["gradescope-bundle", "soft_lookup", "--out", str(bundle), "--course", str(COURSE)]) == 0
    root = tmp_path / "autograder"
    with zipfile.ZipFile(bundle) as zf:
        names = set(zf.namelist())
        assert {
            "setup.sh",
            "run_autograder",
            "requirements.txt",
            "solutions/soft_lookup/soft_lookup.ipynb",
            "qkv-src/pyproject.toml",
            "qkv-src/src/qkv/grading/child.py",
            "qkv-src/src/qkv/grading/specs/soft_lookup.py",
        } <= names
        zf.extractall(root / "source")
    torch_txt = (Path(__file__).resolve().parents[2] / "requirements-torch.txt").read_text()
    torch_pin = next(line for line in torch_txt.splitlines() if line.startswith("torch=="))
    assert torch_pin in (root / "source" / "requirements.txt").read_text()
    (root / "submission").mkdir()
    (root / "submission" / "soft_lookup.ipynb").write_bytes(SOLUTION)
    env = {
        **os.environ,
        "AUTOGRADER_ROOT": str(root),
        "QKV_PYTHON": sys.executable,
        "PYTHONPATH": str(root / "source" / "qkv-src" / "src"),
    }  # the bundle's own copy of qkv
    done = subprocess.run(
        ["bash", str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    assert results["score"] == 10, results  # the per-test output says why (one run of the full suite gave 7)
    assert oct((root / "source").stat().st_mode & 0o777) == "0o700"
