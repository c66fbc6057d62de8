"""core.blas against numpy's products written out on whole symmetric matrices: the upper triangle of a block of a
larger array changed in place, nothing else touched, and the lower triangle never read."""

import numpy as np
import pytest

from core.blas import add_gram, symmetric_times


def _array(capacity, seed):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((capacity, capacity))
    return A @ A.T


@pytest.mark.parametrize("m", [0, 1, 3, 40])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_add_gram_changes_only_the_blocks_upper_triangle(m, sign):
    capacity, d = 30, 17
    P = _array(capacity, seed=m)
    X = np.random.default_rng(100 + m).standard_normal((m, d))
    before = P.copy()
    add_gram(P, d, X, sign)
    expected = before[:d, :d] + sign * (X.T @ X)
    upper = np.triu_indices(d)
    np.testing.assert_allclose(P[:d, :d][upper], expected[upper], rtol=1e-13, atol=1e-12)
    lower = np.tril_indices(d, -1)
    assert np.array_equal(P[:d, :d][lower], before[:d, :d][lower])
    assert np.array_equal(P[d:], before[d:]) and np.array_equal(P[:d, d:], before[:d, d:])


def test_symmetric_times_reads_the_upper_triangle_alone():
    capacity, d = 25, 19
    P = _array(capacity, seed=7)
    x = np.random.default_rng(8).standard_normal(d)
    expected = P[:d, :d] @ x
    P[np.tril_indices(capacity, -1)] = np.nan  # a stale lower triangle must not be read
    np.testing.assert_allclose(symmetric_times(P, d, x), expected, rtol=1e-13, atol=1e-12)
    assert symmetric_times(P, 0, np.zeros(0)).shape == (0,)


def test_bad_arguments_are_explained_before_blas_sees_them():
    P = np.zeros((4, 4))
    with pytest.raises(ValueError, match="P must be a C-contiguous 2-d float64 array of at least 5 x 5"):
        add_gram(P, 5, np.zeros((1, 5)))
    with pytest.raises(ValueError, match="P must be a C-contiguous"):
        add_gram(np.asfortranarray(P), 3, np.zeros((1, 3)))
    with pytest.raises(ValueError, match="X must be C-contiguous float64 with 3 columns"):
        add_gram(P, 3, np.zeros((2, 4)))
    with pytest.raises(ValueError, match="X must be C-contiguous float64"):
        add_gram(P, 3, np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="x must be 1-d"):
        symmetric_times(P, 3, np.zeros((1, 3)))
    with pytest.raises(ValueError, match="X must be 2-d"):
        add_gram(P, 3, np.float64(1.0))
    P.flags.writeable = False
    with pytest.raises(ValueError, match="P must be writeable"):
        add_gram(P, 3, np.zeros((1, 3)))
