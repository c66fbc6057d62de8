"""core.simd's arithmetic and lane masks against numpy, value by value: the same bits as numba's scalar operators,
the same lanes as numpy's comparisons (NaN included), and nothing read or written past ``count``."""

import numba
import numpy as np
import pytest

from core.simd import flags_set, lanes_load, lanes_not_below, lanes_positive, lanes_splat, lanes_store


@numba.njit
def _arithmetic(a, b, count, out):
    x, z = lanes_load(a, 0, count), lanes_load(b, 0, count)
    lanes_store(out[0], 0, count, x + z)
    lanes_store(out[1], 0, count, x - z)
    lanes_store(out[2], 0, count, x * z)
    lanes_store(out[3], 0, count, x + (lanes_splat(x, 0.5) * z) * x)


@numba.njit
def _scalar(a, b, count, out):
    for i in range(count):
        out[0, i], out[1, i], out[2, i] = a[i] + b[i], a[i] - b[i], a[i] * b[i]
        out[3, i] = a[i] + (0.5 * b[i]) * a[i]


@numba.njit
def _masks(a, b, flags, start, count):
    x, z = lanes_load(a, start, count), lanes_load(b, start, count)
    return lanes_not_below(x, z), lanes_positive(x), flags_set(flags, start, count)


def _bits(mask):
    """The bools ``mask`` as the bits of an int, mask[l] at bit l."""
    return sum(1 << int(lane) for lane in np.flatnonzero(mask))


@pytest.mark.parametrize("count", [8, 5, 1, 0])
def test_lanes_arithmetic_rounds_as_the_scalar_operators(count):
    rng = np.random.default_rng(count)
    a, b = rng.normal(size=8) * 10.0 ** rng.integers(-8, 8, 8), rng.normal(size=8)
    out, expected = np.full((4, 8), 7.0), np.full((4, 8), 7.0)
    _arithmetic(a, b, count, out)
    _scalar(a, b, count, expected)
    np.testing.assert_array_equal(out.view(np.uint64), expected.view(np.uint64))  # lanes past count untouched


@pytest.mark.parametrize("start, count", [(0, 8), (3, 8), (8, 5), (12, 1), (2, 0)])
def test_lane_masks_are_numpys_comparisons(start, count):
    rng = np.random.default_rng(start)
    a, b = rng.normal(size=16), rng.normal(size=16)
    a[[1, 4, 9]], b[[4, 10]], a[[5, 11]], b[[6, 13]] = np.nan, np.nan, 0.0, a[[6, 13]]  # NaN, zero, ties
    flags = rng.random(16) < 0.5
    not_below, positive, set_ = _masks(a, b, flags, start, count)
    lanes = slice(start, start + count)
    assert not_below & ((1 << count) - 1) == _bits(~(a[lanes] < b[lanes]))  # past count: zeros, loaded as such
    assert positive == _bits(a[lanes] > 0)
    assert set_ == _bits(flags[lanes])
