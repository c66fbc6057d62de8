"""The numba SMO on single working sets, against a generic QP solve."""

import numpy as np
import pytest

from core.kernels import KernelSpec, kernel_block
from core.smo import smo_solve
from tests.naive import naive_dual_objective, naive_dual_qp


def _problem(seed, n=80):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    y = np.where(X[:, 0] + 0.7 * np.sin(2 * X[:, 1]) + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return kernel_block(X, X, KernelSpec("rbf", gamma=0.5)), y


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("C, sum_bound", [(1.0, np.inf), (10.0, np.inf), (10.0, 60.0), (3.0, 20.0)])
def test_smo_matches_generic_qp(seed, C, sum_bound):
    K, y = _problem(seed)
    n = len(y)
    alpha, grad = np.zeros(n), -np.ones(n)
    smo_solve(K, y, grad, alpha, np.full(n, C), sum_bound=sum_bound, tol=1e-8, max_iter=10**6)
    _, reference = naive_dual_qp(K, y, np.full(n, C), sum_bound)
    assert naive_dual_objective(K, y, alpha) == pytest.approx(reference, rel=1e-6)
    # the gradient kept in place is the true gradient of the final point
    np.testing.assert_allclose(grad, (K * np.outer(y, y)) @ alpha - 1.0, atol=1e-9)
    assert abs(y @ alpha) < 1e-9 and alpha.min() >= 0 and alpha.max() <= C
    assert alpha.sum() <= sum_bound + 1e-9


def test_smo_ball_pair_bounds_keep_every_constraint():
    """Dekel & Singer's eq. 13 keeps budget-L2 iterates inside the ball."""
    K, y = _problem(7)
    n = len(y)
    alpha, grad = np.zeros(n), -np.ones(n)
    C, B = 2.0, 10
    smo_solve(K, y, grad, alpha, np.full(n, np.inf), sum_bound=np.sqrt(B) * C, sq_bound=C * C, tol=1e-8)
    assert alpha @ alpha <= C * C + 1e-9
    assert alpha.sum() <= np.sqrt(B) * C + 1e-9
    assert abs(y @ alpha) < 1e-9 and alpha.min() >= 0


@pytest.mark.parametrize("seed", [0, 2])
@pytest.mark.parametrize("ridge", [0.0, 1e-6])
def test_smo_on_a_flat_budget_face_converges_with_newton_steps(seed, ridge):
    """No box (budget-L2), the budget active and a ridge of at most 1e-6 over close points: a face on which
    the objective barely changes.  Pair steps alone stopped at 200,000 steps here without reaching tol = 1e-8;
    with the Newton steps on the free variables (``core.smo``'s module doc) it takes 3,200 to 4,000, and the
    objective is the generic QP's."""
    K, y = _problem(seed)
    n, sum_bound = len(y), 30.0
    alpha, grad = np.zeros(n), -np.ones(n)
    steps, violation = smo_solve(K, y, grad, alpha, np.full(n, np.inf), sum_bound=sum_bound, ridge=ridge, tol=1e-8,
                                 max_iter=20_000)
    assert steps < 20_000 and violation < 1e-8
    K_ridge = K + ridge * np.eye(n)  # the ridge is a diagonal term (the next test)
    _, reference = naive_dual_qp(K_ridge, y, np.full(n, np.inf), sum_bound)
    assert naive_dual_objective(K_ridge, y, alpha) == pytest.approx(reference, rel=1e-6)
    np.testing.assert_allclose(grad, (K_ridge * np.outer(y, y)) @ alpha - 1.0, atol=1e-9)
    assert abs(y @ alpha) < 1e-9 and alpha.min() >= 0 and alpha.sum() <= sum_bound + 1e-9


def test_smo_ridge_is_a_diagonal_term():
    K, y = _problem(3)
    n, mu = len(y), 0.7
    alpha, grad = np.zeros(n), -np.ones(n)
    smo_solve(K, y, grad, alpha, np.full(n, 5.0), ridge=mu, tol=1e-9, max_iter=10**6)
    a2, g2 = np.zeros(n), -np.ones(n)
    smo_solve(K + mu * np.eye(n), y, g2, a2, np.full(n, 5.0), tol=1e-9, max_iter=10**6)
    np.testing.assert_allclose(alpha, a2, atol=1e-6)


def test_smo_rejects_bad_shapes():
    with pytest.raises(ValueError, match="updated in place"):
        smo_solve(np.eye(2), np.ones(2), [1.0, 1.0], np.zeros(2), np.ones(2))
    with pytest.raises(ValueError, match=r"at least \(q, q\)"):
        smo_solve(np.eye(1), np.ones(2), np.zeros(2), np.zeros(2), np.ones(2))


def test_smo_reads_only_the_leading_block_of_a_larger_buffer():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 3))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=40) > 0, 1.0, -1.0)
    K = np.exp(-0.5 * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    buffer = np.full((45, 45), np.nan)  # stale entries outside the working set's block
    buffer[:40, :40] = K
    results = []
    for matrix in (K, buffer):
        alpha, grad = np.zeros(40), -np.ones(40)
        smo_solve(matrix, y, grad, alpha, np.full(40, 2.0), tol=1e-8, max_iter=10**6)
        results.append(alpha)
    np.testing.assert_array_equal(results[0], results[1])
    assert np.isfinite(results[1]).all() and results[1].max() > 0
