"""``qkv check``'s worker is forked from the grader's own process (torch is imported there already): a notebook
must run in it exactly as in a worker started afresh, whatever the grader's process did before."""

from __future__ import annotations

import os
import random
import re

import numpy
import pytest
import torch

from qkv.grading import sandbox
from qkv.grading.events import CellError
from qkv.grading.jobs import Job, Limits
from qkv.grading.protocol import read_messages
from qkv.grading.testing import COURSE

# Each cell reports one thing a notebook could see, as its error message (the child sends cell errors back).
PROBES = [
    "import sys\nraise RuntimeError(repr(sys.path))",
    "import os\nraise RuntimeError(repr(sorted(os.environ.items())))",
    "import random, numpy, torch\nraise RuntimeError(repr([random.random(), numpy.random.rand(), torch.rand(1).item()]))",
    "import qkv, sys\nraise RuntimeError(repr([qkv.__file__, [m for m in sys.modules if m.startswith('qkv.grading')]]))",
    "import importlib.util\nraise RuntimeError(repr(importlib.util.find_spec('qkv.grading')))",
    "import sys, torch\nraise RuntimeError(repr([sys.argv, sorted(vars(sys.modules['__main__'])), sys.dont_write_bytecode,"
    " torch.get_num_threads(), torch.is_grad_enabled(), torch.get_default_dtype()]))",
    "import os, resource\nraise RuntimeError(repr([os.getuid(), os.getgid(), os.getgroups(), os.getsid(0) == os.getpid(),"
    " [resource.getrlimit(r) for r in (resource.RLIMIT_CPU, resource.RLIMIT_NPROC, resource.RLIMIT_NOFILE)]]))",
    "import sys\nraise RuntimeError(repr([sys.stdin.fileno(), sys.stdout.fileno(), sys.stderr.fileno()]))",
    "import warnings\nraise RuntimeError(repr([(a, c.__name__, m and m.pattern, mod and mod.pattern) for a, m, c, mod, _ in"
    " warnings.filters]))",
    "import warnings\nraise RuntimeError(repr([warnings.showwarning.__module__, warnings.formatwarning.__module__]))",
]


def _seen(tmp_path, fork: bool) -> list[str]:
    lib = sandbox.make_lib(COURSE / "src" / "qkv", tmp_path / ("forked" if fork else "started"))
    worker = sandbox.Worker(0, lib, sandbox=False, log=tmp_path / f"{fork}.log", fork=fork)
    try:
        header, raw = worker.run(Job(PROBES, Limits(60, 1024)))
    finally:
        worker.stop()
    assert header.state == "exited", (header, (tmp_path / f"{fork}.log").read_text())
    return [m.error for m in read_messages(raw) if isinstance(m, CellError)]


def test_a_notebook_sees_the_same_world_in_a_forked_worker(tmp_path, monkeypatch):
    # An optimizer's step in the grader's process (a spec's training case, another test) loads torch's inductor,
    # which sets TORCHINDUCTOR_CACHE_DIR as it loads: a fresh worker would load it again, a forked one not.
    layer = torch.nn.Linear(3, 3)
    step = torch.optim.AdamW(layer.parameters())
    layer(torch.ones(3)).sum().backward()
    step.step()
    torch.manual_seed(7)  # as a spec's cases do in the grader's process
    random.seed(7)
    numpy.random.seed(7)
    state = random.getstate(), numpy.random.get_state(), torch.get_rng_state()
    graders_next = repr([random.random(), numpy.random.rand(), torch.rand(1).item()])
    random.setstate(state[0]), numpy.random.set_state(state[1]), torch.set_rng_state(state[2])
    monkeypatch.setenv("QKV_GRADERS_OWN", "not for the notebook")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    started, forked = _seen(tmp_path, fork=False), _seen(tmp_path, fork=True)
    assert len(started) == len(PROBES)
    # the lib folders and the workers' own temporary folders differ by name only
    forked = [e.replace(str(tmp_path / "forked"), str(tmp_path / "started")) for e in forked]
    unseeded = PROBES.index(next(p for p in PROBES if "random.random()" in p))
    assert graders_next[1:-1] not in started[unseeded] + forked[unseeded]  # drawn afresh, not the grader's next
    assert started[unseeded] != forked[unseeded]
    for probe, a, b in zip(PROBES, started, forked):
        if probe == PROBES[unseeded]:
            continue
        assert re.sub(r"qkv-grade-\w+", "", a) == re.sub(r"qkv-grade-\w+", "", b), probe
    assert "QKV_GRADERS_OWN" not in started[1] and str(tmp_path / "started" / "lib") in started[0]
    assert "[]]" in started[3] and "None" in started[4]  # nothing of the grader, not even importable


def test_a_forked_worker_is_never_sandboxed(tmp_path):
    with pytest.raises(ValueError):
        sandbox.Worker(0, tmp_path, sandbox=True, log=tmp_path / "w.log", fork=True)


def test_a_forked_worker_that_dies_is_forked_again(tmp_path):
    lib = sandbox.make_lib(COURSE / "src" / "qkv", tmp_path)
    worker = sandbox.Worker(0, lib, sandbox=False, log=tmp_path / "w.log", fork=True)
    job = Job(["x = 1"], Limits(60, 1024))
    try:
        header, _ = worker.run(job)
        assert header.state == "exited"
        first = worker.proc.pid
        os.kill(first, 9)
        worker.proc.wait(timeout=10)
        header, raw = worker.run(job)
        assert header.state == "exited" and b'"t": "done"' in raw and worker.proc.pid != first
    finally:
        worker.stop()
