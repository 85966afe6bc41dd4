"""Only the student's own code is judged, and ordinary Python in it is not a way around the checks; a
missing item is reported with the submission's status, never as a KeyError. No sandbox needed."""

from __future__ import annotations

import pytest

from qkv.grading import messages as M
from qkv.grading import testing
from qkv.grading.analysis import analyse
from qkv.grading.results import ItemResult, Result
from qkv.grading.spec import SOFTMAX_FAMILY, TORCH_ATTENTION

SETUP = "import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nimport qkv\n"
SETATTR_LOOP = """
class MultiHead(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        for name in ("q", "k", "v", "out"):
            setattr(self, f"{name}_proj", nn.Linear(d_model, d_model))
        assert hasattr(self, "q_proj")

    def forward(self, x):
        q = getattr(self, "q_proj")(x)
        layers = [getattr(self, f"{n}_proj") for n in "qkv"]
        return layers[0](q)
"""


def test_setattr_getattr_on_the_students_own_objects_are_ordinary_python():
    found = analyse([SETUP, SETATTR_LOOP], "MultiHead", TORCH_ATTENTION)
    assert found.hatches == [] and found.forbidden == []


@pytest.mark.parametrize(
    "body, forbidden, hatch",
    [
        ("def f(x):\n    return getattr(F, 'softmax')(x, -1)\n", ["getattr(F, 'softmax')"], None),
        ("def f(x):\n    return getattr(x, 'soft' + 'max')(-1)\n", ["getattr(x, 'soft' + 'max')"], None),
        ("def f(x):\n    return getattr(torch, name)(x, -1)\nname = 'softmax'\n", [], "getattr()"),
        ("def f(x):\n    return getattr(torch.nn.functional, 'soft' + name)(x, -1)\nname = 'max'\n", [], "getattr()"),
        ("def f(x):\n    return getattr(torch, '_C')._VariableFunctions.softmax(x, -1)\n", [], "._C"),
        ("def f(x):\n    setattr(torch, 'exp', torch.softmax)\n    return x\n", ["torch.softmax"], None),
        ("def f(x):\n    setattr(torch, name, x)\n    return x\nname = 'exp'\n", [], "setattr()"),
    ],
)
def test_dynamic_access_to_a_module_is_still_judged(body, forbidden, hatch):
    found = analyse([SETUP, body], "f", SOFTMAX_FAMILY)
    assert set(forbidden) <= set(found.forbidden) and (forbidden or hatch)
    if hatch:
        assert hatch in found.hatches, found


def test_the_labs_unchanged_cells_are_not_judged():
    """A lab cell that defines a helper with a forbidden call (say, a reference to compare with) is the lab's;
    the same code written by the student is theirs."""
    lab_cell = "def reference(x):\n    return torch.softmax(x, -1)\n"
    graded = "def f(x):\n    return reference(x)\n"
    assert analyse([SETUP, lab_cell, graded], "f", SOFTMAX_FAMILY, {lab_cell.strip()}).forbidden == []
    assert analyse([SETUP, lab_cell, graded], "f", SOFTMAX_FAMILY).forbidden == ["torch.softmax"]


def test_a_missing_item_is_reported_with_the_status_not_a_key_error(tmp_path, monkeypatch):
    """check_spec on a variant whose result lacks items (the grader's own failure) says which and why."""

    def fake(lab, notebooks, tmp_path, **kwargs):
        out = {}
        for name in notebooks:
            passed = [M.PASSED_ALL(checks=M.CHECKS(n=1))]
            items = {"test_a": ItemResult(1.0, 1.0, passed), "test_b": ItemResult(2.0, 2.0, passed)}
            if name != "solution":
                items = {}
            out[name] = Result(
                name,
                "graded" if name == "solution" else "crashed",
                M.GRADER_ERROR(error="boom") if name != "solution" else None,
                items,
            )
        return out

    monkeypatch.setattr(testing, "grade_notebooks", fake)
    monkeypatch.setattr(testing, "with_function", lambda nb, name, source: nb)
    with pytest.raises(AssertionError, match=r"lost points \(status crashed: grader error: boom\)"):
        testing.check_spec(
            "soft_lookup", {}, {"alternative": {"dot_scores": "def dot_scores(q, k):\n    return k @ q\n"}}, tmp_path
        )


def test_the_cache_key_covers_the_code_that_decides_a_grade(tmp_path, monkeypatch):
    from qkv.grading import fingerprint as spec

    (tmp_path / "a.py").write_text("x = 1\n")
    before = spec.source_digest(tmp_path)
    (tmp_path / "a.py").write_text("x = 2\n")  # a change to the library, the comparison code or a spec
    changed = spec.source_digest(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.py").write_text("")  # a new module (say a shared contracts file)
    assert len({before, changed, spec.source_digest(tmp_path)}) == 3
    assert spec.spec_fingerprint("masks") != spec.spec_fingerprint("scaling")
    first = spec.spec_fingerprint("masks")
    monkeypatch.setattr(spec, "source_digest", lambda folder: "another library")
    assert spec.spec_fingerprint("masks") != first


def test_graders_side_by_side_never_share_a_uid_block():
    """Each grader process holds a lock on its block of uids; two processes with the same pid % 4096 still differ."""
    import subprocess
    import sys

    from qkv.grading import sandbox

    mine = sandbox.uid_base()
    assert sandbox.uid_base() == mine  # stable within a process
    # the same pid in each (what pid % 4096 alone could not tell apart)
    code = "import os; os.getpid = lambda: 7; from qkv.grading import sandbox; print(sandbox.uid_base(), flush=True)"
    # each holds its block until the test closes its stdin, however slowly the others start on a busy machine
    others = [
        subprocess.Popen(
            [sys.executable, "-c", code + "; import sys; sys.stdin.read()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    bases = [int(p.stdout.readline()) for p in others]
    for p in others:
        p.communicate()
    assert len({mine, *bases}) == 4, (mine, bases)


def _kernel_protects_regular_files() -> bool:
    from pathlib import Path

    setting = Path("/proc/sys/fs/protected_regular")
    return setting.exists() and setting.read_text().strip() != "0"


def _as_user_in_a_fork(uid: int, pid: int, temp: str) -> int:
    """``sandbox.uid_base()`` in a forked child running as ``uid`` and seeing ``os.getpid() == pid``: its block."""
    import os
    import tempfile
    import traceback

    from qkv.grading import sandbox

    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe and its exit status
        code = 1
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            sandbox._held_block.clear()  # this grader process is a new one
            tempfile.tempdir = temp
            os.getpid = lambda: pid
            if not _kernel_protects_regular_files():  # the kernel's rule, where this machine has it off
                real_open = os.open

                def open_as_protected_regular(path, flags, *args):
                    mine = not os.path.exists(path) or os.stat(path).st_uid == os.getuid()
                    if flags & os.O_CREAT and not mine:
                        raise PermissionError(13, "fs.protected_regular", str(path))
                    return real_open(path, flags, *args)

                os.open = open_as_protected_regular
            os.write(write, str((sandbox.uid_base() - sandbox.BASE_UID) // 64).encode())
            code = 0
        except BaseException:
            traceback.print_exc()
        os._exit(code)
    os.close(write)
    _, status = os.waitpid(child, 0)
    with os.fdopen(read) as pipe:
        said = pipe.read()
    assert os.waitstatus_to_exitcode(status) == 0, f"uid_base() as uid {uid} failed"
    return int(said)


def test_graders_of_different_users_share_the_uid_folder():
    """One machine, many users grading (an instructor, students' ``qkv check``): each user's grader takes a block
    from lock files other users made. In a sticky folder like /tmp, Linux refuses O_CREAT on another user's file
    (``fs.protected_regular``), so an existing lock file is opened without it; one this user may not read is
    another user's block, skipped."""
    import os
    import shutil
    import tempfile
    from pathlib import Path

    temp = Path(tempfile.mkdtemp(dir="/tmp", prefix="qkv-uids-test-"))
    try:
        temp.chmod(0o755)
        folder = temp / "qkv-grade-uids"
        folder.mkdir()
        folder.chmod(0o1777)  # as the first grader on the machine leaves it
        assert _as_user_in_a_fork(3001, 7, str(temp)) == 7  # makes 7.lock, owned by 3001, and ends
        assert (folder / "7.lock").stat().st_uid == 3001
        assert _as_user_in_a_fork(3002, 7, str(temp)) == 7  # another user, the same block, free again
        (folder / "8.lock").touch(mode=0o000)
        os.chown(folder / "8.lock", 3003, 3003)
        assert _as_user_in_a_fork(3002, 8, str(temp)) == 9  # unreadable to 3002: not its block
    finally:
        shutil.rmtree(temp)
