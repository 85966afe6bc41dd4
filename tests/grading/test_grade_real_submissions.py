"""The grader on submissions written the way students write them, sandboxed: debug prints and plots, a
``setattr`` loop, a looping function, a notebook of another lab. Correct work keeps every point and its
feedback lists no error; a looping function costs only its own item (the items whose functions call it run
with a correct one in its place)."""

from __future__ import annotations

import ast
import json
import os
import re
import stat
import subprocess

import pytest

from qkv.grading.atomic import write_atomic
from qkv.grading.messages import WORKER_FAILED
from qkv.grading.spec import load_spec
from qkv.grading.testing import (
    COURSE,
    completed_lab,
    english,
    english_lines,
    grade_across_labs,
    grade_notebooks,
    with_function,
)
from qkv.labs import lab_ids

LABS = lab_ids(COURSE)  # labs/ also holds labs/zh/, the Chinese edition
PLOT = """
import io
import matplotlib.pyplot as plt
from IPython.display import HTML, display
fig, ax = plt.subplots()
ax.plot([0, 1, 2], [1, 0, 1])
fig.savefig(io.BytesIO(), format="png")  # draws it: the backend is imported for real
plt.show()
display(HTML("<b>done</b>"))
"""


def _code_cells(nb: dict) -> list[dict]:
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def _src(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _defining_cell(nb: dict, name: str) -> dict:
    pattern = re.compile(rf"^(def|class)\s+{re.escape(name)}\b", re.M)
    return next(c for c in _code_cells(nb) if pattern.search(_src(c)))


def _with_debug_prints(src: str, name: str) -> str:
    """``src`` with ``print`` (and an f-string) of the parameters as the first statement of ``name`` (of its
    ``forward``/``__call__``/``__init__`` for a class), a print before the ``def`` and a plot after it."""
    node = next(n for n in ast.parse(src).body if getattr(n, "name", None) == name)
    if isinstance(node, ast.ClassDef):
        methods = {m.name: m for m in node.body if isinstance(m, ast.FunctionDef)}
        node = next(methods[m] for m in ("forward", "__call__", "__init__") if m in methods)
    params = [a.arg for a in node.args.args if a.arg != "self"]
    body = node.body
    first = (
        body[1]
        if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
        else body[0]
    )
    indent = " " * first.col_offset
    shown = ", ".join(params) or "'called'"
    debug = (
        f"{indent}print('debug', {shown})\n{indent}_text = f'{{{params[0]}}}'\n"
        if params
        else f"{indent}print('debug')\n"
    )
    lines = src.splitlines(keepends=True)
    lines.insert(first.lineno - 1, debug)
    return "print('before the def', torch.arange(3.0))\n" + "".join(lines) + PLOT


def with_prints_and_plots(lab: str) -> dict:
    nb = completed_lab(lab)
    for function in dict.fromkeys(i.function for i in load_spec(lab).autograded):
        cell = _defining_cell(nb, function)
        cell["source"] = _with_debug_prints(_src(cell), function)
    return nb


def test_debug_prints_and_plots_keep_full_marks_in_every_lab(tmp_path):
    """Every lab: prints of tensors inside each graded function, a print before its def, a plot in its cell."""
    batch = [(lab, "printer", json.dumps(with_prints_and_plots(lab)).encode()) for lab in LABS]
    results = grade_across_labs(batch, tmp_path)
    for lab in LABS:
        res = results[(lab, "printer")]
        assert res.status == "graded", (lab, english(res.note))
        lost = {gid: english_lines(r.lines) for gid, r in res.items.items() if r.points != r.max}
        assert not lost, (lab, lost)
        assert set(res.items) == {i.grade_id for i in load_spec(lab).autograded}
        errors = english_lines(res.cell_errors)
        assert errors == [], (lab, errors)  # the lab's own self-checks are not listed


def test_sandbox_hides_ours_and_lends_the_runtime(tmp_path):
    """The runtime is there, read-only (lazy torch modules, matplotlib backends, IPython); the repository,
    the submissions, the grader's output and the network are not; the limits hold."""
    probe = f"""
import os, socket, resource, sysconfig
import torch._subclasses.schema_check_mode, matplotlib.backends.backend_svg, IPython.display
# the repository's contents (its folder itself may exist: a .venv inside it is the runtime, mounted there)
_ours = [os.path.join({str(COURSE)!r}, name) for name in ("solutions", "labs", "tests", "src", "README.md")]
_seen = [p for p in (*_ours, {str(tmp_path)!r}, "/root/.ssh", "/etc/shadow") if os.path.exists(p)]
try:
    open(os.path.join(sysconfig.get_paths()["purelib"], "planted.py"), "w")
    _seen.append("a writable runtime")
except OSError:
    pass
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2)
    _seen.append("the network")
except OSError:
    pass
if resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY:
    _seen.append("no memory limit")
_dot = dot_scores
def dot_scores(query, keys):
    if _seen:
        raise RuntimeError(f"saw {{_seen}}")
    return _dot(query, keys)
"""
    nb = completed_lab("soft_lookup")
    nb["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": probe})
    res = grade_notebooks("soft_lookup", {"probe": nb}, tmp_path, jobs=1)["probe"]
    assert res.status == "graded" and english_lines(res.cell_errors) == [], res
    assert res.items["test_dot_scores"].points == 2, english_lines(res.items["test_dot_scores"].lines)


MULTIHEAD_SETATTR = '''
class MultiHead(nn.Module):
    """Four projections made in a loop, found again with getattr."""

    def __init__(self, d_model: int, num_heads: int):
        super().__init__()
        self.num_heads = num_heads
        for name in ("q", "k", "v", "out"):
            setattr(self, f"{name}_proj", nn.Linear(d_model, d_model))

    def project(self, name, x):
        return getattr(self, f"{name}_proj")(x)

    def forward(self, query, key=None, value=None):
        key = query if key is None else key
        value = key if value is None else value
        q, k, v = (split_heads(self.project(n, t), self.num_heads) for n, t in zip("qkv", (query, key, value)))
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (B, H, L, S)
        weights = torch.exp(scores - scores.amax(-1, keepdim=True))
        weights = weights / weights.sum(-1, keepdim=True)
        return self.project("out", merge_heads(weights @ v)), weights
'''


def test_ordinary_python_is_not_a_way_around_the_checks(tmp_path):
    """A correct MultiHead built with setattr/getattr keeps its points; the lab's own cells, which compare
    with torch.nn.MultiheadAttention and torch.softmax, are not the student's and cost nothing."""
    nb = with_function(completed_lab("multihead"), "MultiHead", MULTIHEAD_SETATTR)
    res = grade_notebooks("multihead", {"setattr": nb}, tmp_path, jobs=1)["setattr"]
    assert res.status == "graded", english(res.note)
    assert res.items["test_MultiHead"].points == res.items["test_MultiHead"].max, res.items["test_MultiHead"]
    assert all(r.points == r.max for r in res.items.values()), res.items
    assert english_lines(res.cell_errors) == [], english_lines(res.cell_errors)


LOOPING_DOT = """
def dot_scores(query, keys):
    n = 0
    while True:  # forgot to stop
        n += 1
"""


def test_a_looping_function_costs_only_its_own_item(tmp_path):
    base = completed_lab("soft_lookup")
    looping = with_function(base, "dot_scores", LOOPING_DOT)
    top = json.loads(json.dumps(base))
    cell = _defining_cell(top, "cosine_scores")
    cell["source"] = _src(cell) + "\ni = 0\nwhile True:\n    i += 1\n"
    # 3 s of CPU time per cell or call: on a busy machine a loop's 3 CPU seconds take far longer on the clock
    res = grade_notebooks("soft_lookup", {"looping": looping, "top": top}, tmp_path, timeout=120, call_timeout=3)
    dot_cell = _code_cells(looping).index(_defining_cell(looping, "dot_scores")) + 1
    top_cell = _code_cells(top).index(_defining_cell(top, "cosine_scores")) + 1

    loop = res["looping"]
    got = {gid: r.points for gid, r in loop.items.items()}
    # cosine_scores and soft_lookup call dot_scores (as the lab suggests), but are graded with a correct one
    assert got == {"test_dot_scores": 0, "test_cosine_scores": 2, "test_stable_softmax": 3, "test_soft_lookup": 3}, loop
    assert loop.status == "graded" and f"dot_scores (code cell {dot_cell})" in english(loop.note), english(loop.note)
    said = " ".join(english_lines(loop.items["test_dot_scores"].lines))
    assert "time limit" in said and f"dot_scores (code cell {dot_cell})" in said, said

    stopped = res["top"]
    assert stopped.status == "timeout" and f"code cell {top_cell}" in english(stopped.note), english(stopped.note)
    assert sum(r.points for r in stopped.items.values()) == 0


def test_a_notebook_of_another_lab_is_reported_and_outputs_follow_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        res = grade_notebooks("soft_lookup", {"lost": completed_lab("masks")}, tmp_path, jobs=1)["lost"]
    finally:
        os.umask(old)
    assert res.status == "wrong_lab" and "masks" in english(res.note), res
    out = tmp_path / "out"
    for f in [out / "grades.csv", out / "summary.html", *out.glob("feedback/*"), *out.glob("results/*")]:
        assert stat.S_IMODE(f.stat().st_mode) == 0o644, f
    assert "another lab" in (out / "feedback" / "lost.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_written_files_get_the_mode_the_umask_allows(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        write_atomic(tmp_path / "f.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "f.txt").stat().st_mode) == mode


def test_a_worker_that_cannot_start_costs_a_rerun_not_the_items(tmp_path, monkeypatch):
    """On a busy machine the fork that starts a worker can fail (EAGAIN, ENOMEM). That submission is reported
    as crashed by the grader (not cached: the next run grades it), with every item in its result; the next
    submission starts a fresh worker and is graded."""
    real_popen = subprocess.Popen
    refused = []

    def busy_machine(cmd, *args, **kwargs):
        if any("qkv_grader" in str(part) for part in cmd) and not refused:  # the worker
            refused.append(cmd)
            raise BlockingIOError(11, "Resource temporarily unavailable")
        return real_popen(cmd, *args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", busy_machine)
    done = completed_lab("soft_lookup")
    res = grade_notebooks("soft_lookup", {"a": done, "b": done}, tmp_path, jobs=1)
    assert refused
    assert res["a"].status == "crashed" and english(res["a"].note) == WORKER_FAILED, res["a"]
    assert set(res["a"].items) == {i.grade_id for i in load_spec("soft_lookup").autograded}
    assert res["b"].status == "graded" and all(r.points == r.max for r in res["b"].items.values())
    assert len(list((tmp_path / "out" / "results").glob("*.json"))) == 1  # only b's result is kept for a rerun
