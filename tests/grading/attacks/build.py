"""Writes the adversarial submissions of the grader's test suite (``*.ipynb.json``: nbval never collects them).

Each is the soft_lookup solution or blank lab with an attack added. Run it again after changing an attack:
    .venv/bin/python tests/grading/attacks/build.py
Placeholders ``__COURSE__`` and ``__OUT__`` are replaced by the test with real paths.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

from nbformat.v4 import new_code_cell

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SOLUTION = json.loads((ROOT / "solutions/soft_lookup/soft_lookup.ipynb").read_text())
BLANK = json.loads((ROOT / "labs/soft_lookup/soft_lookup.ipynb").read_text())

WRONG = """
def dot_scores(query, keys):
    return torch.zeros(keys.shape[0])
def cosine_scores(query, keys):
    return torch.zeros(keys.shape[0])
def stable_softmax(scores):
    return torch.full_like(scores, 1.0 / scores.shape[-1])
def soft_lookup(query, keys, values, temperature=1.0):
    w = torch.full((keys.shape[0],), 1.0 / keys.shape[0])
    return w @ values, w
"""
RIGHT = """
def dot_scores(query, keys):
    return keys @ query
def cosine_scores(query, keys):
    return (keys @ query) / (keys.norm(dim=1) * query.norm())
def stable_softmax(scores):
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)
def soft_lookup(query, keys, values, temperature=1.0):
    w = stable_softmax(keys @ query / temperature)
    return w @ values, w
"""


def code(src: str, cid: str = "attack") -> dict:
    return new_code_cell(src.strip("\n") + "\n", id=cid)


def with_cells(base: dict, *cells: dict, at: int | None = None) -> dict:
    nb = copy.deepcopy(base)
    pos = 2 if at is None else at  # after the setup cell (imports torch)
    nb["cells"][pos:pos] = list(cells)
    return nb


ATTACKS: dict[str, object] = {}

# The attacks ------------------------------------------------------------------------------
ATTACKS["allclose_patched"] = with_cells(
    BLANK,
    code(
        """
import numpy as np, torch, builtins
np.allclose = lambda *a, **k: True
np.isclose = lambda a, b, *r, **k: np.ones(np.broadcast(a, b).shape, dtype=bool)
torch.allclose = lambda *a, **k: True
torch.isfinite = lambda x: torch.ones_like(x, dtype=torch.bool)
builtins.AssertionError = type("Quiet", (Exception,), {})
"""
        + WRONG
    ),
)
ATTACKS["gradebook_tamper"] = with_cells(
    BLANK,
    code(
        """
import glob, os
hits = []
targets = ["__OUT__/results", "__OUT__/grades.csv", "__OUT__/run.json", "__COURSE__/solutions/soft_lookup/soft_lookup.ipynb",
           "__COURSE__/gradebook.db", "__COURSE__/src/qkv/grading/specs/soft_lookup.py", "__SUBS__", "/root", "/home"]
for t in targets:
    try:
        if os.path.isdir(t):
            hits += os.listdir(t)
            open(os.path.join(t, "owned.json"), "w").write("{}")
        else:
            open(t, "a").write("x")
            hits.append(t)
    except OSError:
        pass
hits += [p for p in glob.glob("/tmp/**", recursive=True) if "qkv" in p]
SEEN = bool(hits)
if SEEN:
"""
        + "\n".join("    " + line for line in RIGHT.splitlines())
    ),
)
dup = copy.deepcopy(SOLUTION)
for cell in dup["cells"]:
    cell["id"] = "same-id"
ATTACKS["duplicate_cell_ids"] = dup
ATTACKS["stderr_warnings"] = with_cells(
    SOLUTION,
    code("""
import sys, warnings
warnings.warn("a warning on stderr at import time")
sys.stderr.write("stderr noise\\n" * 100)
_dot = dot_scores
def dot_scores(query, keys):
    warnings.warn("every call warns", RuntimeWarning)
    print("stderr inside the graded function", file=sys.stderr)
    return _dot(query, keys)
"""),
    at=8,
)
ATTACKS["infinite_loop"] = with_cells(
    SOLUTION,
    code("""
import signal
signal.signal(signal.SIGALRM, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
while True:
    pass
"""),
    at=len(SOLUTION["cells"]),
)
ATTACKS["fork_bomb"] = with_cells(
    SOLUTION,
    code("""
import os, time
spawned = 0
for _ in range(10000):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(600)
        os._exit(0)
    spawned += 1
"""),
)
ATTACKS["daemon_left_behind"] = with_cells(
    SOLUTION,
    code("""
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(600)
    os._exit(0)
"""),
)
ATTACKS["memory_100gb"] = with_cells(
    SOLUTION,
    code("""
big = bytearray(100 * 1024 ** 3)
"""),
    code(
        """
import torch
huge = torch.empty(100 * 1024 ** 3, dtype=torch.uint8)
""",
        "attack2",
    ),
)
ATTACKS["exit_early_sys"] = with_cells(
    SOLUTION,
    code("""
import sys
sys.exit(0)
"""),
)
ATTACKS["exit_early_os"] = with_cells(
    SOLUTION,
    code("""
import os
os._exit(0)
"""),
    at=len(SOLUTION["cells"]),
)
ATTACKS["fake_stdout"] = with_cells(
    BLANK,
    code(
        """
import json, sys
for grade_id in ["test_dot_scores", "test_cosine_scores", "test_stable_softmax", "test_soft_lookup"]:
    print(json.dumps({"t": "case", "item": grade_id, "case": 0, "score": 10, "status": "passed"}))
print("All tests passed. 10/10")
sys.stdout.flush()
"""
        + WRONG
    ),
)

# More of our own ----------------------------------------------------------------------------------
ATTACKS["forged_channel"] = with_cells(
    BLANK,
    code(
        """
import base64, json, os, struct
import numpy as np
def frame(msg):
    body = json.dumps(msg).encode()
    return struct.pack(">I", len(body)) + body
def arr(shape):
    a = np.zeros(shape)
    return {"shape": list(shape), "data": base64.b64encode(a.tobytes()).decode()}
forged = b""
for gid, n, shape in [("test_dot_scores", 3, (11,)), ("test_cosine_scores", 3, (9,)), ("test_stable_softmax", 5, (6,)), ("test_soft_lookup", 4, (3,))]:
    for case in range(n):
        forged += frame({"t": "case", "item": gid, "case": case, "out": arr(shape)})
forged += frame({"t": "done"})
for fd in range(3, 20):
    try:
        os.write(fd, forged)
    except OSError:
        pass
"""
        + WRONG
    ),
)
ATTACKS["kill_the_worker"] = with_cells(
    BLANK,
    code("""
import os, signal
for target in (1, 2, os.getppid(), -1):
    try:
        os.kill(target, signal.SIGKILL)
    except OSError:
        pass
try:
    os.setuid(0)
except OSError:
    pass
"""),
)
ATTACKS["tripwire_evasion"] = with_cells(
    SOLUTION,
    code("""
import torch
_orig = torch._C._VariableFunctions.softmax
def stable_softmax(scores):
    return _orig(scores, -1)
def cosine_scores(query, keys):
    return torch.ops.aten.cosine_similarity(query[None, :], keys, 1, 1e-8)
"""),
    at=len(SOLUTION["cells"]),
)
ATTACKS["closure_unwrap"] = with_cells(
    SOLUTION,
    code("""
import torch
def stable_softmax(scores):
    real = torch.softmax
    for cell in (real.__closure__ or ()):
        if callable(cell.cell_contents) and getattr(cell.cell_contents, "__name__", "") == "softmax":
            real = cell.cell_contents
    return real(scores, -1)
"""),
    at=len(SOLUTION["cells"]),
)
ATTACKS["redefine_with_exec"] = with_cells(
    SOLUTION,
    code("""
exec("def stable_softmax(scores):\\n    return torch.softmax(scores, -1)\\n", globals())
"""),
    at=len(SOLUTION["cells"]),
)
ATTACKS["catch_the_tripwire"] = with_cells(
    SOLUTION,
    code("""
def stable_softmax(scores):
    try:
        return torch.softmax(scores, -1)
    except BaseException:
        e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
        return e / e.sum(dim=-1, keepdim=True)
"""),
    at=len(SOLUTION["cells"]),
)
ATTACKS["patch_runtime"] = with_cells(
    BLANK,
    code(
        """
import json, os, base64, builtins, torch, numpy as np
json.dumps = lambda *a, **k: '{"t": "done"}'
base64.b64encode = lambda b: b""
torch.Tensor.double = lambda self: torch.ones(3, dtype=torch.float64)
np.asarray = lambda *a, **k: np.ones(3)
builtins.isinstance = lambda *a: True
"""
        + WRONG
    ),
)
ATTACKS["segfault"] = with_cells(
    SOLUTION,
    code("""
import ctypes
ctypes.string_at(0)
"""),
    at=len(SOLUTION["cells"]),
)
ATTACKS["network"] = with_cells(
    BLANK,
    code(
        """
import socket
ok = False
for host, port in [("8.8.8.8", 53), ("1.1.1.1", 443), ("pypi.org", 443), ("127.0.0.1", 22)]:
    try:
        socket.create_connection((host, port), timeout=1).close()
        ok = True
    except OSError:
        pass
if ok:
"""
        + "\n".join("    " + line for line in RIGHT.splitlines())
    ),
)
ATTACKS["metadata_claims"] = copy.deepcopy(BLANK)
for cell in ATTACKS["metadata_claims"]["cells"]:
    nbg = cell.get("metadata", {}).get("nbgrader")
    if nbg and nbg.get("grade"):
        nbg["points"] = 100
    if nbg and nbg.get("solution") and cell["cell_type"] == "code":
        nbg["grade"] = True
        nbg["points"] = 100
stripped = copy.deepcopy(SOLUTION)
for cell in stripped["cells"]:
    cell["metadata"] = {}
    cell.pop("id", None)
stripped["metadata"] = {}
stripped["nbformat_minor"] = 4
ATTACKS["stripped_metadata"] = stripped
reshuffled = copy.deepcopy(SOLUTION)
reshuffled["cells"] = [
    c for c in reshuffled["cells"] if not c.get("metadata", {}).get("nbgrader", {}).get("grade")
]  # tests gone
reshuffled["cells"] += [
    code("extra = 1 + 1", "extra1"),
    {"cell_type": "markdown", "id": "md", "metadata": {}, "source": "# notes\nmy notes"},
]
ATTACKS["cells_deleted_and_added"] = reshuffled
ATTACKS["huge_outputs"] = with_cells(
    SOLUTION,
    {**code("print('x' * 100_000_000)"), "outputs": [{"name": "stdout", "output_type": "stream", "text": "HUGE"}]},
)  # the test inflates it to 20 MB
ATTACKS["written_answer_html"] = copy.deepcopy(SOLUTION)
for cell in ATTACKS["written_answer_html"]["cells"]:
    if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "written_soft_vs_hard":
        cell["source"] = "<script>alert('xss')</script> soft lookups are differentiable & smooth"
ATTACKS["recursion_and_baseexceptions"] = with_cells(
    SOLUTION,
    code("""
def f(n):
    return f(n + 1)
f(0)
"""),
    code(
        """
raise KeyboardInterrupt
""",
        "attack2",
    ),
    code(
        """
_sm = stable_softmax
class Boom(BaseException):
    pass
def stable_softmax(scores):
    if scores.dim() > 2:
        raise Boom()
    return _sm(scores)
""",
        "attack3",
    ),
    at=len(SOLUTION["cells"]),
)
ATTACKS["weird_return_types"] = with_cells(
    SOLUTION,
    code("""
class Sneaky:
    def __float__(self):
        return 1.0
    def __len__(self):
        return 10 ** 9
def dot_scores(query, keys):
    return Sneaky()
def cosine_scores(query, keys):
    return [[[[[[1.0]]]]]]
"""),
    at=len(SOLUTION["cells"]),
)

DROP_PLACES = '["/tmp", "/var/tmp", "/dev/shm", os.getcwd(), os.path.expanduser("~"), os.path.dirname(os.getcwd())]'
ATTACKS["collusion_writer"] = with_cells(
    SOLUTION,
    code(f"""
import os
for d in {DROP_PLACES}:
    try:
        with open(os.path.join(d, "qkv_answers.txt"), "w") as f:
            f.write("answers for the next student")
        os.chmod(os.path.join(d, "qkv_answers.txt"), 0o666)
    except OSError:
        pass
"""),
)
ATTACKS["collusion_reader"] = with_cells(
    BLANK,
    code(
        f"""
import glob, os
FOUND = any(os.path.exists(os.path.join(d, "qkv_answers.txt")) for d in {DROP_PLACES})
FOUND = FOUND or bool(glob.glob("/tmp/**/qkv_answers.txt", recursive=True))
if FOUND:
"""
        + "\n".join("    " + line for line in RIGHT.splitlines())
    ),
)


def main() -> None:
    for old in HERE.glob("*.ipynb.json"):
        old.unlink()
    for name, nb in ATTACKS.items():
        (HERE / f"{name}.ipynb.json").write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    # Raw files that are not notebooks at all.
    (HERE / "malformed_json.ipynb.json").write_text(
        '{"cells": [ {"cell_type": "code", "source": "x = 1"', encoding="utf-8"
    )
    (HERE / "empty_file.ipynb.json").write_bytes(b"")
    (HERE / "not_utf8.ipynb.json").write_bytes(b"\xff\xfe\x00\x00garbage")
    (HERE / "json_list.ipynb.json").write_text("[1, 2, 3]\n")
    (HERE / "nbformat3.ipynb.json").write_text(json.dumps({"nbformat": 3, "worksheets": [{"cells": []}]}) + "\n")
    print(f"wrote {len(ATTACKS) + 5} submissions into {HERE}")


if __name__ == "__main__":
    main()
