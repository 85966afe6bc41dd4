"""Unit tests of the grader's own decisions, without a sandbox: the static forbidden-call analysis, the value
comparison, submission discovery, notebook parsing and the child's message decoding."""

from __future__ import annotations

import base64
import gc
import json
import struct
import sys
import threading
import time

import numpy as np
import pytest

from qkv.grading.analysis import analyse
from qkv.grading.compare import compare
from qkv.grading.events import Done
from qkv.grading.protocol import read_messages
from qkv.grading.reports import csv_safe
from qkv.grading.results import decode_value as _decode
from qkv.grading.spec import SOFTMAX_FAMILY
from qkv.grading.submissions import discover, parse_notebook

SETUP = "import torch\nimport torch.nn.functional as F\nimport qkv\n"


def check(body: str, name: str = "f", extra: tuple[str, ...] = (), trusted: set[str] = frozenset()):
    return analyse([SETUP, *extra, body], name, SOFTMAX_FAMILY, trusted)


@pytest.mark.parametrize(
    "body",
    [
        "def f(x):\n    return torch.softmax(x, -1)\n",
        "def f(x):\n    return F.softmax(x, dim=-1)\n",
        "def f(x):\n    return x.softmax(-1)\n",
        "def f(x):\n    return qkv.softmax(x)\n",
        "def f(x):\n    return torch.nn.Softmax(dim=-1)(x)\n",
        "from torch.nn.functional import softmax as normalise\ndef f(x):\n    return normalise(x, -1)\n",
        "def f(x):\n    return g(x)\ndef g(x):\n    return x.log_softmax(-1).exp()\n",
        "f = torch.softmax\n",
        "f = lambda x: torch.special.softmax(x, -1)\n",
        "class f:\n    def __call__(self, x):\n        return torch.softmax(x, -1)\n",
    ],
)
def test_forbidden_calls_are_found_by_any_route(body):
    assert check(body).forbidden


def test_own_helpers_and_unrelated_cells_are_fine():
    own = "def softmax(x):\n    e = torch.exp(x - x.amax(-1, keepdim=True))\n    return e / e.sum(-1, keepdim=True)\n"
    found = check("def f(x):\n    w = softmax(x)\n    return w\n", extra=(own, "w = torch.softmax(torch.ones(3), 0)\n"))
    assert not found.forbidden and not found.hatches and not found.missing  # a local `w` is not the global `w`


@pytest.mark.parametrize(
    "body, hatch",
    [
        ("def f(x):\n    return getattr(torch, 'soft' + 'max')(x, -1)\n", "getattr()"),
        ("def f(x):\n    return torch._C._VariableFunctions.exp(x)\n", "._C"),
        ("def f(x):\n    return x\nexec('def f(x): return torch.softmax(x, -1)')\n", "exec()"),
        ("def f(x):\n    return x\nimport gc\n", "import gc"),
        ("def f(x):\n    return x\nimport sys\nsys.modules['torch'].softmax\n", "sys.modules"),
        ("def f(x):\n    return x\ng = torch.exp.__self__\n", ".__self__"),
    ],
)
def test_escape_hatches_are_flagged(body, hatch):
    assert hatch in check(body).hatches


def test_the_labs_own_cells_are_not_scanned_for_hatches():
    lab_cell = "import inspect\nprint(inspect.getsource(qkv.softmax))"
    assert check("def f(x):\n    return x\n", extra=(lab_cell,), trusted={lab_cell}).hatches == []
    assert check("def f(x):\n    return x\n", extra=(lab_cell,)).hatches == ["import inspect"]


def test_a_missing_definition_and_ipython_syntax():
    assert check("%matplotlib inline\nx = 1\n").missing
    assert not check("%matplotlib inline\ndef f(x):\n    return x\n").missing
    assert not check("def f(x:\n    syntax error\n", extra=("def f(x):\n    return x\n",)).missing


def _compare(*args) -> str | None:
    """compare's message in English (None: the values match)."""
    msg = compare(*args)
    return None if msg is None else str(msg)


def test_compare_explains_shapes_values_and_nan():
    exp = np.array([0.25, 0.75])
    assert _compare(np.array([0.25, 0.75 + 1e-7]), exp, 1e-6, 0) is None
    assert "shape (2, 1)" in _compare(exp[:, None], exp, 1e-6, 0)
    assert "NaN or inf" in _compare(np.array([np.nan, 1.0]), exp, 1e-6, 0)
    assert "1 of 2 entries" in _compare(np.array([0.25, 0.5]), exp, 1e-6, 0)
    assert "tuple of 2" in _compare(exp, [exp, exp], 1e-6, 0)
    assert "value 2" in _compare([exp, exp * 2], [exp, exp], 1e-6, 0)
    assert _compare(np.array([np.inf]), np.array([np.inf]), 1e-6, 0) is None


def test_messages_from_the_child_are_validated():
    arr = np.arange(6.0).reshape(2, 3)
    good = {"shape": [2, 3], "data": base64.b64encode(arr.tobytes()).decode()}
    assert np.array_equal(_decode(good), arr)
    for bad in (
        {"shape": [2, 4], "data": good["data"]},
        {"shape": [-1], "data": ""},
        {"shape": "x"},
        {"list": [good] * 17},
        {"shape": [10**9], "data": ""},
        "not a dict",
    ):
        with pytest.raises((ValueError, TypeError)):
            _decode(bad)
    body = json.dumps({"t": "done"}).encode()
    stream = struct.pack(">I", len(body)) + body + b"\x00\x00\x00\x05[1,2" + struct.pack(">I", 1000) + b"short"
    assert read_messages(stream) == [Done()]


def test_parse_notebook_rejects_what_is_not_a_notebook():
    for data in (b"", b"   ", b"{", b"[]", b'{"cells": 3}', b"\xff\xfe"):
        with pytest.raises(ValueError):
            parse_notebook(data)
    cells = parse_notebook(
        json.dumps(
            {"cells": [{"cell_type": "code", "source": ["a = 1\n", "b = 2"]}, 7, {"cell_type": "weird"}]}
        ).encode()
    )
    assert cells == [{"type": "code", "source": "a = 1\nb = 2", "meta": None}]


def test_discovery_layouts(tmp_path):
    (tmp_path / "ann.ipynb").write_text("{}")
    (tmp_path / "bob" / "lab" / "sub").mkdir(parents=True)
    (tmp_path / "bob" / "lab" / "sub" / "anything.ipynb").write_text("{}")
    (tmp_path / "cy").mkdir()
    (tmp_path / "cy" / "a.ipynb").write_text("{}")
    (tmp_path / "cy" / "lab.ipynb").write_text("{}")
    (tmp_path / "dee").mkdir()
    (tmp_path / "dee" / "a.ipynb").write_text("{}")
    (tmp_path / "dee" / "b.ipynb").write_text("{}")
    (tmp_path / "eve.ipynb").write_text("{}")
    (tmp_path / "eve").mkdir()
    (tmp_path / ".git").mkdir()
    (tmp_path / ".hidden.ipynb").write_text("{}")
    (tmp_path / "fay.ipynb").symlink_to("/etc/hostname")
    got = {e.student: (e.path.name if e.path else None, e.status) for e in discover(tmp_path, "lab")}
    assert got == {
        "ann": ("ann.ipynb", None),
        "bob": ("anything.ipynb", None),
        "cy": ("lab.ipynb", None),
        "dee": (None, "ambiguous"),
        "eve": (None, "duplicate"),
        "fay": (None, "malformed"),
    }


def test_csv_formula_prefix():
    assert [csv_safe(s) for s in ("=1+1", "+1", "-1", "@x", "\tx", "\rx", "ann", "Zoë")] == [
        "'=1+1",
        "'+1",
        "'-1",
        "'@x",
        "'\tx",
        "'\rx",
        "ann",
        "Zoë",
    ]


def test_parallel_grading_threads_parse_without_a_system_error():
    """`qkv grade` parses submissions in one thread per worker. CPython 3.11's tree building keeps its depth in
    interpreter-wide state (gh-106905): threads at different stack depths that switch inside it (here made likely
    by a collection after every allocation that yields the GIL) raised SystemError, a grader error for that
    submission. Without the parse lock this test failed in 3 of 3 runs."""
    errors: list[BaseException] = []

    def at_depth(n: int) -> None:
        if n:
            return at_depth(n - 1)
        for i in range(200):  # each submission different: analyse caches its parses
            body = "\n".join(
                f"def f{j}(x):\n    return [((x + {i}) * 2, {{'a': (1, {j})}}) for _ in x]" for j in range(10)
            )
            try:
                analyse([body], "f0", ())
            except SystemError as err:
                errors.append(err)

    threshold, interval = gc.get_threshold(), sys.getswitchinterval()
    gc.callbacks.append(yield_gil := lambda phase, info: time.sleep(0))
    gc.set_threshold(1, 1, 1)
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=at_depth, args=(3 * k,)) for k in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        gc.callbacks.remove(yield_gil)
        gc.set_threshold(*threshold)
        sys.setswitchinterval(interval)
    assert not errors, errors[:1]
