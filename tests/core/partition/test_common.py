"""Helpers shared by partition functions, against numpy's own."""

import numpy as np
import pytest

from core.partition.common import unique_inverse


@pytest.mark.parametrize("size", [0, 1, 7, 66, 1_000])
def test_unique_inverse_is_numpys(size):
    rng = np.random.default_rng(size)
    values = rng.integers(-5, max(1, size // 3), size).astype(np.int64)  # repeats, negatives
    distinct, inverse = unique_inverse(values)
    expected, expected_inverse = np.unique(values, return_inverse=True)
    np.testing.assert_array_equal(distinct, expected)
    np.testing.assert_array_equal(inverse, expected_inverse)
    np.testing.assert_array_equal(distinct[inverse], values)
