"""Shared fixture: the devices to test on (the CPU, and CUDA where a GPU exists)."""

import pytest
import torch

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.fixture(params=DEVICES)
def device(request):
    return torch.device(request.param)

