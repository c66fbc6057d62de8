"""core.moments.group_moments against a dense naive reference, on rows stored as Arrow stores them."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from core.moments import group_moments
from tests.naive import naive_group_moments


def _stored(X, sparse_rows):
    """X's rows as group_moments takes them: the rows in ``sparse_rows`` as their nonzero (index, value)
    pairs, the others whole."""
    lengths, values, indices, sparse = [], [], [], np.zeros(len(X), bool)
    for i, row in enumerate(X):
        if i in sparse_rows:
            sparse[i] = True
            stored = np.flatnonzero(row != 0)
            lengths.append(stored.size)
            values.extend(row[stored])
            indices.extend(stored)
        else:
            lengths.append(row.size)
            values.extend(row)
    return np.array(lengths), np.array(values), sparse, np.array(indices, np.int32)


def _check(X, group_of, n_groups, usable, sparse_rows):
    lengths, values, sparse, indices = _stored(X, sparse_rows)
    got = group_moments(lengths, values, group_of, n_groups, X.shape[1], usable, sparse, indices)
    mean, variance, nonzeros, bad_values = naive_group_moments(X, group_of, n_groups, usable)
    assert_allclose(got["mean"], mean, rtol=1e-12, atol=1e-14)
    assert_allclose(got["variance"], variance, rtol=1e-10, atol=1e-14)
    assert_array_equal(got["nonzeros"], nonzeros)
    assert_array_equal(got["bad_values"], bad_values)


@pytest.mark.parametrize("sparse_share", [0.0, 0.5, 1.0])
def test_moments_of_dense_sparse_and_mixed_rows_match_the_naive_reference(sparse_share):
    rng = np.random.default_rng(3)
    X = rng.normal(5.0, 2.0, (200, 7)) * (rng.random((200, 7)) < 0.4)  # zeros a sparse row leaves out
    group_of = rng.integers(0, 3, 200)
    sparse_rows = set(np.flatnonzero(rng.random(200) < sparse_share).tolist())
    _check(X, group_of, 3, np.ones(200, bool), sparse_rows)


def test_unusable_rows_count_as_zeros_and_a_large_mean_keeps_the_variance_digits():
    rng = np.random.default_rng(4)
    X = 1e8 + rng.random((50, 3))  # one pass of squares would lose every digit of this variance
    usable = rng.random(50) < 0.8
    _check(X, np.zeros(50, np.int64), 1, usable, set(range(0, 50, 3)))
    got = group_moments(np.full(50, 3), X.ravel(), np.zeros(50, np.int64), 1, 3, np.ones(50, bool))
    assert_allclose(got["variance"][0], X.var(axis=0, ddof=1), rtol=1e-6)


def test_a_group_of_one_row_has_variance_zero_and_rows_with_bad_values_are_flagged():
    X = np.array([[1.0, np.nan, 0.0], [2.0, 3.0, np.inf], [0.0, 4.0, 5.0], [-1e160, 1.0, 1.0]])
    got = group_moments(np.full(4, 3), X.ravel(), np.array([0, 1, 1, 2]), 3, 3, np.ones(4, bool))
    assert_array_equal(got["bad_values"], [True, True, False, True])
    assert_array_equal(got["variance"][0], [0.0, 0.0, 0.0])
    assert_array_equal(got["nonzeros"][1], [1.0, 2.0, 2.0])


def test_rows_of_different_lengths_fill_only_their_own_columns():
    # a dense row of 2 entries in a width of 3: its third column counts as a zero
    got = group_moments(np.array([2, 3]), np.array([1.0, 2.0, 3.0, 4.0, 5.0]), np.zeros(2, np.int64), 1, 3,
                        np.ones(2, bool))
    assert_allclose(got["mean"][0], [2.0, 3.0, 2.5])


def test_inconsistent_arrays_and_columns_outside_the_width_are_refused():
    with pytest.raises(ValueError, match="do not match values"):
        group_moments(np.array([2, 2]), np.ones(3), np.zeros(2, np.int64), 1, 2, np.ones(2, bool))
    with pytest.raises(ValueError, match="one entry per row"):
        group_moments(np.array([1]), np.ones(1), np.zeros(2, np.int64), 1, 1, np.ones(1, bool))
    with pytest.raises(ValueError, match="group_of must lie in 0..0"):
        group_moments(np.array([1]), np.ones(1), np.array([1]), 1, 1, np.ones(1, bool))
    with pytest.raises(ValueError, match="1 entries have a column outside 0..1"):
        group_moments(np.array([1]), np.ones(1), np.zeros(1, np.int64), 1, 2, np.ones(1, bool),
                      np.array([True]), np.array([2], np.int32))
    with pytest.raises(ValueError, match="1 entries have a column outside 0..1"):
        group_moments(np.array([3]), np.ones(3), np.zeros(1, np.int64), 1, 2, np.ones(1, bool))
