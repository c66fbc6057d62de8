"""Helpers shared by partition functions, against numpy's own."""

import numpy as np
import pytest

from core.partition.common import locate, unique_inverse
from core.partition.data import PartitionData


@pytest.mark.parametrize("size", [0, 1, 7, 66, 1_000])
def test_unique_inverse_is_numpys(size):
    rng = np.random.default_rng(size)
    values = rng.integers(-5, max(1, size // 3), size).astype(np.int64)  # repeats, negatives
    distinct, inverse = unique_inverse(values)
    expected, expected_inverse = np.unique(values, return_inverse=True)
    np.testing.assert_array_equal(distinct, expected)
    np.testing.assert_array_equal(inverse, expected_inverse)
    np.testing.assert_array_equal(distinct[inverse], values)


@pytest.mark.parametrize("ids", [[], [40, 7, 99, 13], [5]])
def test_locate_finds_the_ids_held_in_any_order_and_none_of_no_ids(ids):
    held = np.array([13, 7, 40, 21], np.int64)
    data = PartitionData.build(np.arange(8.0).reshape(4, 2), np.ones(4), np.ones(4), held)
    local, which = locate(data, np.array(ids, np.int64))
    expected = [(held.tolist().index(i), j) for j, i in enumerate(ids) if i in held]
    assert local.tolist() == [p for p, _ in expected] and which.tolist() == [j for _, j in expected]
    assert local.dtype == which.dtype == np.intp
