"""Comparison tolerances per dtype, shared by the library tests (a plain module: `conftest` names clash across folders)."""

import torch

TOL = {
    torch.float64: dict(atol=1e-10, rtol=1e-9),
    torch.float32: dict(atol=2e-5, rtol=1e-4),
    torch.bfloat16: dict(atol=3e-2, rtol=3e-2),
}
