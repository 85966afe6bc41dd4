"""The adversarial suite: every attack in tests/grading/attacks/ graded in one sandboxed batch.

Each attack is the soft_lookup solution or blank lab with something hostile added (see attacks/build.py).
The batch must finish, give every student a row, and give each attack no more than its real functions earn.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from qkv.grading import sandbox
from qkv.grading.command import run_batch
from qkv.grading.jobs import Job, Limits
from qkv.grading.results import Result
from qkv.grading.testing import COURSE

ATTACKS = Path(__file__).parent / "attacks"
SOLUTION = (COURSE / "solutions/soft_lookup/soft_lookup.ipynb").read_bytes()
BLANK = (COURSE / "labs/soft_lookup/soft_lookup.ipynb").read_bytes()
TIMEOUT = 12

# attack -> (status, autograded points out of 10)
EXPECTED = {
    "solution": ("graded", 10),
    "blank": ("graded", 0),
    "allclose_patched": ("graded", 0),  # nbgrader and otter: full marks
    "gradebook_tamper": ("graded", 0),  # sees no grader file, solution or other submission; writes nothing
    "duplicate_cell_ids": ("graded", 10),  # stops a whole nbgrader batch
    "stderr_warnings": ("graded", 10),  # nbgrader scores a test cell with stderr output 0
    "infinite_loop": ("timeout", 0),  # otter run has no timeout
    "fork_bomb": ("graded", 10),
    "daemon_left_behind": ("graded", 10),
    "memory_100gb": ("memory", 10),  # both allocations fail; the rest of the notebook still runs
    "exit_early_sys": ("graded", 10),
    "exit_early_os": ("crashed", 0),
    "fake_stdout": ("graded", 0),
    "forged_channel": ("graded", 0),
    "kill_the_worker": ("graded", 0),
    # Escape hatches (torch._C, torch.ops.aten, __closure__, exec) anywhere in a notebook: no item with forbidden
    # calls can be verified, so every such item scores 0. A forbidden call caught, then worked around: still 0.
    "tripwire_evasion": ("graded", 0),
    "closure_unwrap": ("graded", 0),
    "catch_the_tripwire": ("graded", 4),
    "redefine_with_exec": ("graded", 0),  # exec() anywhere: items with forbidden calls cannot be verified
    "patch_runtime": ("crashed", 0),  # breaking isinstance breaks the child's own runner: no results, 0
    "segfault": ("crashed", 0),
    "network": ("graded", 0),
    "metadata_claims": ("graded", 0),
    "stripped_metadata": ("graded", 10),
    "cells_deleted_and_added": ("graded", 10),
    "huge_outputs": ("graded", 10),
    "written_answer_html": ("graded", 10),
    "recursion_and_baseexceptions": ("graded", 7),
    "weird_return_types": ("graded", 6),  # dot_scores and cosine_scores fail (soft_lookup runs a correct dot_scores)
    "collusion_writer": ("graded", 10),
    "collusion_reader": ("graded", 0),
    "malformed_json": ("malformed", 0),
    "empty_file": ("malformed", 0),
    "not_utf8": ("malformed", 0),
    "json_list": ("malformed", 0),
    "nbformat3": ("malformed", 0),
    "Zoë 张": ("graded", 10),
    "=HYPERLINK(1)": ("graded", 0),
    "<img src=x onerror=alert(1)>": ("graded", 0),
    "ambiguous_folder": ("ambiguous", 0),
    "twice": ("duplicate", 0),
    "nbgrader_layout": ("graded", 10),
    "several_named": ("graded", 10),
    "empty_folder": ("malformed", 0),
}


def _uids_alive() -> list[int]:
    pids = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            uid = int(next(line for line in status.read_text().splitlines() if line.startswith("Uid:")).split()[1])
        except (OSError, StopIteration, ValueError):
            continue
        if sandbox.uid_base() <= uid < sandbox.uid_base() + 64:  # this test process's batches
            pids.append(int(status.parent.name))
    return pids


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("attacks")
    subs, out = tmp / "submissions", tmp / "out"
    subs.mkdir()
    for f in ATTACKS.glob("*.ipynb.json"):
        data = f.read_bytes()
        for key, value in (("__COURSE__", str(COURSE)), ("__OUT__", str(out)), ("__SUBS__", str(subs))):
            data = data.replace(key.encode(), value.encode())
        if f.name.startswith("huge_outputs"):
            data = data.replace(b'"HUGE"', json.dumps("y" * 20_000_000).encode())
        (subs / f.name.removesuffix(".json")).write_bytes(data)
    (subs / "solution.ipynb").write_bytes(SOLUTION)
    (subs / "blank.ipynb").write_bytes(BLANK)
    (subs / "Zoë 张.ipynb").write_bytes(SOLUTION)
    (subs / "=HYPERLINK(1).ipynb").write_bytes(BLANK)
    (subs / "<img src=x onerror=alert(1)>.ipynb").write_bytes(BLANK)
    (subs / "ambiguous_folder").mkdir()
    (subs / "ambiguous_folder" / "a.ipynb").write_bytes(SOLUTION)
    (subs / "ambiguous_folder" / "b.ipynb").write_bytes(SOLUTION)
    (subs / "twice.ipynb").write_bytes(SOLUTION)
    (subs / "twice").mkdir()
    (subs / "twice" / "soft_lookup.ipynb").write_bytes(SOLUTION)
    (subs / "nbgrader_layout" / "soft_lookup").mkdir(parents=True)
    (subs / "nbgrader_layout" / "soft_lookup" / "soft_lookup.ipynb").write_bytes(SOLUTION)
    (subs / "nbgrader_layout" / ".ipynb_checkpoints").mkdir()
    (subs / "nbgrader_layout" / ".ipynb_checkpoints" / "soft_lookup-checkpoint.ipynb").write_bytes(BLANK)
    (subs / "several_named").mkdir()
    (subs / "several_named" / "scratch.ipynb").write_bytes(BLANK)
    (subs / "several_named" / "soft_lookup.ipynb").write_bytes(SOLUTION)
    (subs / "empty_folder").mkdir()
    (subs / ".hidden.ipynb").write_bytes(SOLUTION)
    (subs / "README.txt").write_text("not a submission")
    results = run_batch(
        "soft_lookup",
        subs,
        out,
        course=COURSE,
        jobs=2,
        limits=Limits.of(TIMEOUT, 1024),
        seed=7,
        log=lambda *a, **k: None,
    )
    return {"results": {r.student: r for r in results}, "out": out, "subs": subs, "alive": _uids_alive()}


def _total(res: Result) -> float:
    return sum(i.points for i in res.items.values())


def test_every_student_has_a_row_and_no_more(batch):
    assert sorted(batch["results"]) == sorted(EXPECTED)
    rows = list(csv.DictReader(open(batch["out"] / "grades.csv", encoding="utf-8")))
    assert len(rows) == len(EXPECTED)
    names = [r["student"].removeprefix("'") for r in rows]
    assert names == sorted(names)


@pytest.mark.parametrize("student", sorted(EXPECTED))
def test_attack_earns_no_more_than_its_real_functions(batch, student):
    res = batch["results"][student]
    status, points = EXPECTED[student]
    assert (res.status, _total(res)) == (status, points), res


def test_no_process_survives_the_batch(batch):
    assert batch["alive"] == [], "processes of the sandbox uids still running"


def test_tamper_wrote_nothing_outside_its_sandbox(batch):
    assert not list(batch["out"].rglob("owned.json")) and not list(batch["subs"].rglob("owned.json"))
    assert not (COURSE / "gradebook.db").exists()


def test_csv_neutralises_formulas_and_keeps_unicode(batch):
    text = (batch["out"] / "grades.csv").read_text(encoding="utf-8")
    assert "\n'=HYPERLINK(1)," in text and "\nZoë 张,10,10,graded," in text
    header = text.splitlines()[0].split(",")
    assert header == [
        "student",
        "total",
        "max_total",
        "status",
        "test_dot_scores",
        "test_cosine_scores",
        "test_stable_softmax",
        "test_soft_lookup",
        "written_soft_vs_hard",
    ]


def test_html_escapes_everything_students_wrote(batch):
    out = batch["out"]
    manual = (out / "manual" / "written_soft_vs_hard.html").read_text(encoding="utf-8")
    assert "<script>" not in manual and "&lt;script&gt;alert(&#x27;xss&#x27;)&lt;/script&gt;" in manual
    summary = (out / "summary.html").read_text(encoding="utf-8")
    assert "<img src=x" not in summary and "&lt;img src=x onerror=alert(1)&gt;" in summary
    feedback = list((out / "feedback").glob("*img*"))
    assert len(feedback) == 1 and "<img src=x" not in feedback[0].read_text(encoding="utf-8")


def test_feedback_says_why_in_plain_words(batch):
    out = batch["out"] / "feedback"
    closure = (out / "closure_unwrap.html").read_text(encoding="utf-8")
    assert "forbids" in closure and "torch.softmax" in closure
    blank = (out / "blank.html").read_text(encoding="utf-8")
    assert "not written yet" in blank
    loop = (out / "infinite_loop.html").read_text(encoding="utf-8")
    assert "time limit" in loop
    # no hidden-test internals: no source of the spec, no input values
    solution = (out / "solution.html").read_text(encoding="utf-8")
    assert "passed all" in solution and "randn" not in solution and "torch.einsum" not in solution


def test_metadata_cannot_raise_the_maximum(batch):
    rows = {r["student"]: r for r in csv.DictReader(open(batch["out"] / "grades.csv", encoding="utf-8"))}
    assert rows["metadata_claims"]["max_total"] == "10" and rows["metadata_claims"]["total"] == "0"


def test_a_submission_cannot_kill_or_hijack_the_worker(tmp_path):
    lib = sandbox.make_lib(COURSE / "src" / "qkv", tmp_path)
    worker = sandbox.Worker(0, lib, sandbox=True, log=tmp_path / "worker.log")
    worker.start()
    try:
        attack = json.loads((ATTACKS / "kill_the_worker.ipynb.json").read_text())
        cells = ["".join(c["source"]) for c in attack["cells"] if c["cell_type"] == "code"]
        job = Job(cells, Limits(TIMEOUT, 1024))  # no CPU limits
        pid = worker.proc.pid
        header, raw = worker.run(job)
        assert header.state == "exited"
        assert worker.proc.poll() is None and worker.proc.pid == pid, "the worker died"
        header, raw = worker.run(job)  # and it still grades the next one
        assert header.state == "exited" and b'"t": "done"' in raw
    finally:
        worker.stop()


def test_results_never_go_through_stdout(batch):
    res = batch["results"]["fake_stdout"]
    assert all(i.points == 0 for i in res.items.values())


@pytest.mark.parametrize("use_sandbox", [True, False], ids=["bubblewrap", "no-sandbox"])
def test_one_submission_leaves_nothing_for_the_next(tmp_path, use_sandbox):
    """Graded one after the other by the same worker: the reader must not find what the writer left."""
    from qkv.grading.testing import grade_notebooks

    nbs = {
        name: (ATTACKS / f"collusion_{name.split('_')[1]}.ipynb.json").read_bytes() for name in ("a_writer", "b_reader")
    }
    res = grade_notebooks("soft_lookup", nbs, tmp_path, jobs=1, use_sandbox=use_sandbox)
    assert _total(res["a_writer"]) == 10 and res["b_reader"].status == "graded"
    assert _total(res["b_reader"]) == 0
    assert _uids_alive() == []
