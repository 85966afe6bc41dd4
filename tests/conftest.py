"""Shared fixtures: the devices to test on (the CPU, and CUDA where a GPU exists), and a fresh seed per test; the
``--lab LAB`` option (``make test LAB=...``), which keeps only the tests about one lab."""

import json
import os
import random
import secrets
from pathlib import Path, PurePosixPath

import numpy as np
import pytest
import torch

# `qkv check` leaves a resident checker behind for its user's next check (qkv.checkserver); run in-process by a test,
# it would fork the test process. Off for the suite; tests/test_check_server.py walks it on purpose.
os.environ["QKV_CHECK_SERVER"] = "0"

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.fixture(params=DEVICES)
def device(request):
    return torch.device(request.param)


@pytest.fixture(autouse=True)
def _fresh_seed():
    """Each test draws fresh random inputs from a new seed, printed so that pytest shows it with a failure;
    ``QKV_SEED=N pytest ...`` replays that draw."""
    seed = int(os.environ.get("QKV_SEED") or secrets.randbits(31))
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)
    print(f"random inputs drawn with QKV_SEED={seed}")


ROOT = Path(__file__).resolve().parents[1]


def pytest_addoption(parser):
    parser.addoption(
        "--lab",
        metavar="LAB",
        help="only the tests about one lab: its spec test (test_spec_LAB.py), its notebooks (labs/LAB/, "
        "labs/zh/LAB/, solutions/LAB/) and every test parametrized by the lab or by a path in its folders",
    )


def about_lab(item: pytest.Item, lab: str) -> bool:
    """Whether ``item`` is about ``lab``: read from where it lives and what it is parametrized by, so that a new
    test of a lab (or a new lab) needs no list. A chapter that shares a lab's name (chapters/masks) is not the lab."""
    path = Path(item.path).resolve()
    if path.stem == f"test_spec_{lab}" or lab in path.relative_to(ROOT).parts[:-1]:
        return True
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return False
    for token in callspec.id.split("-"):
        parts = PurePosixPath(token).parts
        if token == lab or lab in parts[:-1]:
            return True
    return False


def pytest_collection_modifyitems(config, items):
    lab = config.getoption("--lab")
    if not lab:
        return
    from qkv.labs import lab_ids

    if lab not in lab_ids(ROOT):
        raise pytest.UsageError(f"--lab {lab}: no such lab (labs: {', '.join(lab_ids(ROOT))})")
    keep = [item for item in items if about_lab(item, lab)]
    config.hook.pytest_deselected(items=[item for item in items if not about_lab(item, lab)])
    items[:] = keep


class GroupTimes:
    """Seconds per test group (setup, call and teardown summed over the workers), printed at the end of the run
    and written to _build/test-times.json: which part of the suite to make faster, from any CI log."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.count: dict[str, int] = {}

    @staticmethod
    def group(nodeid: str) -> str:
        parts = PurePosixPath(nodeid.split("::")[0]).parts
        if parts[0] != "tests":
            return f"{parts[0]}/ (notebooks)"
        return "/".join(parts[:2]) + "/" if len(parts) > 2 else "tests/*.py"

    def pytest_runtest_logreport(self, report):
        name = self.group(report.nodeid)
        self.seconds[name] = self.seconds.get(name, 0.0) + report.duration
        self.count[name] = self.count.get(name, 0) + (report.when == "call")

    def pytest_terminal_summary(self, terminalreporter):
        if not self.seconds or hasattr(terminalreporter.config, "workerinput"):
            return
        rows = sorted(self.seconds.items(), key=lambda kv: -kv[1])
        terminalreporter.write_sep("-", "seconds per test group (summed over workers)")
        for name, seconds in rows:
            terminalreporter.write_line(f"{seconds:8.1f} s  {self.count[name]:5d} tests  {name}")
        out = ROOT / "_build" / "test-times.json"
        out.parent.mkdir(exist_ok=True)
        table = {name: {"seconds": round(s, 1), "tests": self.count[name]} for name, s in rows}
        out.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")


def pytest_configure(config):
    if not hasattr(config, "workerinput"):  # the controller sees every report, the workers' included
        config.pluginmanager.register(GroupTimes(), "qkv-group-times")
