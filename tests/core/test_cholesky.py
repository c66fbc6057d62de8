"""CholeskyFactor's append, rank-one update and downdate against a factorisation from scratch."""

import numpy as np
import pytest

from core.cholesky import CholeskyFactor


def _spd(d, seed):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((d + 3, d))
    return A.T @ A + 0.1 * np.eye(d)


def _factor_of(P):
    factor = CholeskyFactor(P.shape[0] + 2)
    assert factor.refactor(P)
    return factor


@pytest.mark.parametrize("d", [1, 2, 7, 30])
def test_appending_columns_gives_the_factor_of_the_whole_matrix(d):
    P = _spd(d, seed=d)
    factor = CholeskyFactor(d)
    for k in range(d):
        assert factor.append(P[:k, k], P[k, k])
    np.testing.assert_allclose(factor.upper, np.linalg.cholesky(P).T, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("d", [1, 5, 30])
def test_update_and_downdate_match_refactorisation(d):
    P = _spd(d, seed=100 + d)
    rng = np.random.default_rng(d)
    x = rng.standard_normal(d)
    factor = _factor_of(P)
    factor.update(x)
    np.testing.assert_allclose(factor.upper, np.linalg.cholesky(P + np.outer(x, x)).T, rtol=1e-10, atol=1e-12)
    assert factor.downdate(x)
    np.testing.assert_allclose(factor.upper, np.linalg.cholesky(P).T, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(P @ factor.solve(x), x, rtol=1e-9, atol=1e-10)


def test_a_downdate_that_loses_definiteness_is_reported():
    P = np.diag([1.0, 4.0])
    factor = _factor_of(P)
    assert not factor.downdate(np.array([0.0, 2.5]))  # P - x x^T has -2.25 on its diagonal


def test_appending_a_dependent_column_is_refused():
    P = np.array([[2.0, 1.0], [1.0, 0.5]])  # singular
    factor = CholeskyFactor(2)
    assert factor.append(np.zeros(0), P[0, 0])
    assert not factor.append(P[:1, 1], P[1, 1])
    assert factor.size == 1


def test_bad_shapes_are_explained():
    factor = CholeskyFactor(1)
    with pytest.raises(ValueError, match="column must have length 0"):
        factor.append(np.ones(2), 1.0)
    factor.append(np.zeros(0), 1.0)
    with pytest.raises(ValueError, match="the factor is full"):
        factor.append(np.ones(1), 1.0)
