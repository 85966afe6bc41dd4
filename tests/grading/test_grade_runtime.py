"""The grader's run-time judgement, without a sandbox: whose call a forbidden call is (the tripwires, the torch
function mode, the audit hook), which cells are the course's (nbgrader's checksum), and the stand-ins that accept
a student's own call. The tripwires change torch for good, so they are tried in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys

import torch
from nbformat import from_dict
from nbgrader.utils import compute_checksum

from qkv.grading.lab import load_lab, the_courses
from qkv.grading.standins import _close, tolerant
from qkv.grading.testing import COURSE, completed_lab, grade_notebooks, points

PROBE = r"""
import json, sys, torch
import qkv
from qkv.grading.tripwires import ForbiddenCall, Tripwires
sent = []
wires = Tripwires(sent.append)
wires.install(["torch.softmax", "torch.Tensor.softmax", "torch.nn.functional.softmax", "qkv.softmax"])
wires.course.add("<cell 2>")
sys.addaudithook(wires.audit)
ns = {"torch": torch, "qkv": qkv}
cells = {
    1: "def mine(x):\n    return torch.softmax(x, -1)\n",
    2: "def course(x):\n    return torch.softmax(x, -1)\n",
    3: "def method(x):\n    return x.softmax(-1)\n",
    4: "def ops(x):\n    return torch.ops.aten.softmax.int(x, -1)\n",
    5: "def module_route(x):\n    return qkv.attention.softmax(x)\n",
    6: "def frames(x):\n    import sys\n    return sys._getframe().f_back\n",
    7: "explore = torch.softmax(torch.ones(3), 0)\n",
    8: "def switch(x):\n    with torch._C.DisableTorchFunction():\n        return torch.ops.aten.softmax.int(x, -1)\n",
    9: "def popped(x):\n    from torch.overrides import _pop_mode_temporarily\n    with _pop_mode_temporarily():\n"
    "        return torch.ops.aten.softmax.int(x, -1)\n",
}
for n, src in cells.items():
    exec(compile(src, f"<cell {n}>", "exec"), ns)
out = {"cells": list(sent)}
for name in ("mine", "course", "method", "ops", "module_route", "frames", "switch", "popped"):
    sent.clear()
    wires.escaped.clear()
    wires.item, wires.active = name, {"torch.softmax", "torch.Tensor.softmax", "torch.nn.functional.softmax", "qkv.softmax"}
    try:
        with wires.watching():
            ns[name](torch.randn(2, 3))
        raised = False
    except ForbiddenCall:
        raised = True
    wires.item, wires.active = None, set()
    out[name] = {"raised": raised, "kinds": sorted({m.to_wire()["t"] for m in sent})}
print(json.dumps(out))
"""


def test_a_forbidden_call_counts_only_from_the_students_code_during_a_graded_call():
    env = {"PYTHONPATH": ":".join(sys.path), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.splitlines()[-1])
    assert got["mine"] == {"raised": True, "kinds": ["forbidden"]}
    assert got["course"] == {"raised": False, "kinds": []}  # a course cell keeps every right
    assert got["method"] == {"raised": True, "kinds": ["forbidden"]}
    assert got["ops"] == {"raised": True, "kinds": ["escape", "forbidden"]}  # around the wrapper: an escape
    assert got["module_route"] == {"raised": True, "kinds": ["forbidden"]}  # the library's own binding is wrapped
    assert got["frames"] == {"raised": False, "kinds": ["escape"]}  # reading frames: seen by the audit hook
    assert got["switch"]["kinds"] == ["escape"]  # the torch function mode switched off: an escape
    assert got["popped"]["kinds"] == ["escape"]  # the mode popped off its stack: an escape
    assert got["cells"] == []  # the explore cell (7) ran torch.softmax: nothing is forbidden in the cells


def _locked_cell(lab, grade_id: str) -> dict:
    nb = json.loads((COURSE / "labs" / lab / f"{lab}.ipynb").read_text(encoding="utf-8"))
    cell = next(c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id)
    return {"type": cell["cell_type"], "source": "".join(cell["source"]), "meta": cell["metadata"]}


def test_the_course_cells_are_known_by_nbgraders_checksum_from_any_release():
    lab = load_lab("multihead", COURSE)
    cell = _locked_cell("multihead", "test_multihead_attention")
    assert the_courses(cell, lab)  # the current release
    older = dict(cell, source=cell["source"].replace("torch.manual_seed(3)", "torch.manual_seed(3)  # as before"))
    assert older["source"] != cell["source"] and not the_courses(older, lab)  # edited, checksum not: the student's
    meta = json.loads(json.dumps(cell["meta"]))
    meta["nbgrader"]["checksum"] = compute_checksum(
        from_dict({"cell_type": "code", "source": older["source"], "metadata": meta})
    )
    assert the_courses(dict(older, meta=meta), lab)  # an earlier release: the checksum matches its source
    meta["nbgrader"]["grade_id"] = "not_a_cell_of_this_lab"
    assert not the_courses(dict(older, meta=meta), lab)


def test_a_stand_in_accepts_the_students_own_call():
    def scaled_scores(q, k):
        return q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5

    q, k = torch.randn(3, 4), torch.randn(5, 4)
    want = q @ k.T / 2.0
    stand_in = tolerant(scaled_scores)
    for call in (lambda: stand_in(q, k), lambda: stand_in(q, k, True), lambda: stand_in(q, k, scale=True)):
        assert torch.allclose(call(), want)
    assert stand_in.__name__ == "scaled_scores"  # an error names the student's function, not the grader's


def test_helpers_are_compared_with_nesting_shapes_and_tolerance():
    a = torch.tensor([1.0, 2.0])
    assert _close({"x": 1.0, "y": (a, a)}, {"x": 1.0 + 1e-9, "y": (a, a.double())}, 1e-6, 0)
    assert not _close({"x": 1.0}, {"x": 1.1}, 1e-6, 0)
    assert not _close((a,), (a, a), 1e-6, 0)
    assert not _close(a[None], a, 1e-6, 0)
    assert not _close("text", a, 1e-6, 0)
    assert _close(torch.tensor([True, False]), torch.tensor([1.0, 0.0]), 0, 0)


def test_a_forged_locked_cell_hides_its_errors_but_not_its_forbidden_calls(tmp_path):
    """A checksum is no secret: a student who marks their own cell locked, with a grade id of the lab and a checksum
    that matches, gets that cell's errors kept out of their feedback (as for a real cell of an earlier release), but
    a graded call that runs code defined there is judged like any of theirs."""
    nb = completed_lab("soft_lookup")
    answer = next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == "stable_softmax")
    answer["source"] = "def stable_softmax(scores):\n    return torch.softmax(scores, dim=-1)\n"
    meta = answer["metadata"]["nbgrader"]
    meta.update(grade_id="setup", locked=True, solution=False)  # a grade id of the lab, locked like the course's
    meta["checksum"] = compute_checksum(from_dict(answer))
    assert the_courses(
        {"type": "code", "source": answer["source"], "meta": answer["metadata"]}, load_lab("soft_lookup", COURSE)
    )
    got = points(grade_notebooks("soft_lookup", {"forger": nb}, tmp_path, jobs=1, use_sandbox=False)["forger"])
    assert got["test_stable_softmax"] == 0  # torch.softmax, executed by the graded call
    assert got["test_dot_scores"] == 2 and got["test_cosine_scores"] == 2  # nothing else is charged
