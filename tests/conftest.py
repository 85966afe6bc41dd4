"""Shared fixtures: the devices to test on (the CPU, and CUDA where a GPU exists), and a fresh seed per test; the
``--lab LAB`` option (``make test LAB=...``), which keeps only the tests about one lab."""

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
