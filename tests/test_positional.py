"""Sinusoidal encoding against its formula (float64, Python math) and the shift identity."""

import math

import pytest
import torch

import qkv


@pytest.mark.parametrize("P,d", [(1, 2), (10, 4), (50, 16), (7, 5)])
def test_formula(P, d):
    pe = qkv.sinusoidal_positional_encoding(P, d, dtype=torch.float64)
    assert pe.shape == (P, d)
    for p in range(P):
        for c in range(d):
            i2 = c - c % 2
            angle = p / 10000 ** (i2 / d)
            assert math.isclose(pe[p, c].item(), math.sin(angle) if c % 2 == 0 else math.cos(angle), abs_tol=1e-12)


def test_float32_default_and_large_positions_accurate():
    pe = qkv.sinusoidal_positional_encoding(20000, 8)
    assert pe.dtype == torch.float32
    assert math.isclose(pe[19999, 0].item(), math.sin(19999.0), abs_tol=1e-6)


@pytest.mark.parametrize("offset", [-3, 0, 1, 7, 40])
@pytest.mark.parametrize("d", [2, 8, 64])
def test_shift_matrix_maps_every_position(offset, d):
    P = 100
    pe = qkv.sinusoidal_positional_encoding(P + 50, d, dtype=torch.float64)
    m = qkv.sinusoidal_shift_matrix(offset, d, dtype=torch.float64)
    p = torch.arange(10, P)
    torch.testing.assert_close(pe[p + offset], pe[p] @ m.T)
    torch.testing.assert_close(m @ m.T, torch.eye(d, dtype=torch.float64))  # a rotation


def test_shift_matrix_needs_even_width():
    with pytest.raises(ValueError, match=r"d_model must be even .*got 5"):
        qkv.sinusoidal_shift_matrix(1, 5)
