"""Shared fixtures: the devices to test on (the CPU, and CUDA where a GPU exists), and a fresh seed per test."""

import os
import random
import secrets

import numpy as np
import pytest
import torch

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
