"""core.lapack.least_squares against scipy's least-squares solve by the same LAPACK routine, and the
minimum-norm solution of singular systems."""

import numpy as np
import pytest
import scipy.linalg

from core.lapack import least_squares


@pytest.mark.parametrize("n", [1, 2, 7, 40, 258])
@pytest.mark.parametrize("symmetric", [False, True])
def test_a_regular_system_gives_scipys_gelsd_solution_to_the_bit(n, symmetric):
    rng = np.random.default_rng(n)
    a = rng.normal(size=(n, n))
    a = a + a.T if symmetric else a
    b = rng.normal(size=n)
    a_before, b_before = a.copy(), b.copy()
    x, solved = least_squares(a, b)
    assert solved
    np.testing.assert_array_equal(x, scipy.linalg.lstsq(a, b, lapack_driver="gelsd")[0])
    np.testing.assert_array_equal(a, a_before)
    np.testing.assert_array_equal(b, b_before)


def test_a_singular_system_gives_the_minimum_norm_least_squares_solution():
    """A Newton step's system when Q_FF is singular (two free variables on the same example) and b is not in
    its range: the solution of least norm among those of least residual, as the pseudo-inverse gives it."""
    rng = np.random.default_rng(3)
    z = rng.normal(size=(12, 5))
    a = z @ z.T  # rank 5
    a[:, 11], a[11, :] = a[:, 0], a[0, :]
    b = rng.normal(size=12)
    x, solved = least_squares(a, b)
    assert solved
    np.testing.assert_allclose(x, np.linalg.pinv(a) @ b, rtol=1e-9, atol=1e-9)
    assert not np.allclose(a @ x, b)  # b lies outside the range: least squares, not a solve
