"""CholeskyFactor's append, rank-one update and downdate against a factorisation from scratch, and its loops against
the same arithmetic written out element by element."""

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


@pytest.mark.parametrize("d, k", [(0, 3), (4, 1), (7, 5), (20, 12)])
def test_extending_by_a_block_of_columns_gives_the_factor_of_the_whole_matrix(d, k):
    P = _spd(d + k, seed=7 * d + k)
    factor = CholeskyFactor(d + k)
    if d:
        assert factor.refactor(P[:d, :d])
    assert factor.extend(P[:d, d:], P[d:, d:])
    assert factor.size == d + k
    np.testing.assert_allclose(factor.upper, np.linalg.cholesky(P).T, rtol=1e-10, atol=1e-12)


def test_an_extension_reads_the_corner_s_upper_triangle_alone():
    P = _spd(10, seed=5)
    factor, stale = CholeskyFactor(10), CholeskyFactor(10)
    assert factor.refactor(P[:6, :6]) and stale.refactor(P[:6, :6])
    corner = P[6:, 6:].copy()
    corner[np.tril_indices(4, -1)] = np.nan
    assert factor.extend(P[:6, 6:], P[6:, 6:]) and stale.extend(P[:6, 6:], corner)
    np.testing.assert_array_equal(stale.upper, factor.upper)


def test_extending_by_a_dependent_column_is_refused_and_leaves_the_factor():
    A = np.random.default_rng(0).standard_normal((6, 4))
    P = A.T @ A
    P = np.block([[P, P[:, :1]], [P[:1, :], P[:1, :1]]])  # column 4 repeats column 0
    factor = _factor_of(P[:3, :3])
    assert not factor.extend(P[:3, 3:], P[3:, 3:])
    assert factor.size == 3
    np.testing.assert_allclose(factor.upper, np.linalg.cholesky(P[:3, :3]).T, rtol=1e-12)


def test_an_append_with_its_half_solve_given_equals_a_plain_append():
    P = _spd(9, seed=3)
    plain, given = _factor_of(P[:8, :8]), _factor_of(P[:8, :8])
    assert plain.append(P[:8, 8], P[8, 8])
    assert given.append(P[:8, 8], P[8, 8], half=given.half_solve(P[:8, 8]))
    np.testing.assert_allclose(given.upper, plain.upper, rtol=1e-12, atol=1e-14)


def _rotated_plainly(R, x, sign):
    """The rotations of ``CholeskyFactor.update`` (sign 1) and ``downdate`` (-1), one element at a time in Python."""
    R, x = R.copy(), x.copy()
    for k in range(len(x)):
        r = np.sqrt(R[k, k] * R[k, k] + sign * x[k] * x[k])
        c, s = r / R[k, k], x[k] / R[k, k]
        R[k, k] = r
        for i in range(k + 1, len(x)):
            R[k, i] = (R[k, i] + sign * s * x[i]) / c
            x[i] = c * x[i] - s * R[k, i]
    return R


def _forward_plainly(R, b):
    """R^-T b by forward substitution, one element at a time in Python, the sums in ``half_solve``'s order."""
    acc, r = np.zeros(len(b)), np.zeros(len(b))
    for i in range(len(b)):
        r[i] = (b[i] - acc[i]) / R[i, i]
        for k in range(i + 1, len(b)):
            acc[k] += R[i, k] * r[i]
    return r


@pytest.mark.parametrize("d", [1, 3, 17, 40])
def test_the_vectorised_loops_give_the_plain_loops_bits(d):
    P = _spd(d, seed=200 + d)
    x = np.random.default_rng(d).standard_normal(d)
    factor = _factor_of(P)
    R = factor.upper.copy()
    assert np.array_equal(factor.half_solve(x), _forward_plainly(R, x))
    factor.update(x)
    assert np.array_equal(factor.upper, _rotated_plainly(R, x, 1.0))
    updated = factor.upper.copy()
    assert factor.downdate(x)
    assert np.array_equal(factor.upper, _rotated_plainly(updated, x, -1.0))


def test_a_refactorisation_reads_the_upper_triangle_alone():
    P = _spd(12, seed=3)
    stale = P.copy()
    stale[np.tril_indices(12, -1)] = np.nan
    np.testing.assert_array_equal(_factor_of(stale).upper, _factor_of(P).upper)
