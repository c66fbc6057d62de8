"""Platt scaling against a generic minimiser of the same objective."""

import numpy as np
import pytest
from scipy.optimize import minimize

from core.platt import fit_platt, platt_probability


@pytest.mark.parametrize("seed", range(3))
def test_platt_matches_generic_minimisation(seed):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(400) < 0.3, 1.0, -1.0)
    f = 1.5 * y + rng.standard_normal(400)
    A, B = fit_platt(f, y)
    n_pos, n_neg = np.sum(y > 0), np.sum(y < 0)
    t = np.where(y > 0, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))

    def cross_entropy(ab):
        p = 1 / (1 + np.exp(ab[0] * f + ab[1]))
        return -np.sum(t * np.log(p) + (1 - t) * np.log(1 - p))

    reference = minimize(cross_entropy, [0.0, 0.0], method="Nelder-Mead",
                         options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 10_000}).x
    np.testing.assert_allclose([A, B], reference, atol=1e-4)
    assert A < 0  # larger decision values mean a larger probability of +1
    prob = platt_probability(f, A, B)
    assert np.all((prob > 0) & (prob < 1)) and np.all(np.diff(prob[np.argsort(f)]) >= 0)


def test_separable_scores_do_not_overflow():
    f = np.concatenate([np.full(50, -1e6), np.full(50, 1e6)])
    y = np.sign(f)
    A, B = fit_platt(f, y)
    assert np.isfinite([A, B]).all()
    assert platt_probability(np.array([-1e6, 1e6]), A, B).tolist() == pytest.approx([0, 1], abs=0.05)


def test_integer_weights_count_a_row_that_many_times():
    """The naive reference: the rows repeated; real weights are checked too."""
    rng = np.random.default_rng(7)
    y = np.where(rng.random(200) < 0.4, 1.0, -1.0)
    f = y + rng.standard_normal(200)
    w = rng.integers(1, 5, 200)
    np.testing.assert_allclose(fit_platt(f, y, weights=w), fit_platt(np.repeat(f, w), np.repeat(y, w)), rtol=1e-7)
    assert fit_platt(f, y, weights=np.ones(200)) == fit_platt(f, y)
    with pytest.raises(ValueError, match="weights must be one positive finite number per decision value"):
        fit_platt(f, y, weights=np.zeros(200))
