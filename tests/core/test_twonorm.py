"""Breiman's twonorm generator: shape, class means, the Bayes error, seeding."""

import numpy as np
import pytest
from scipy.stats import norm

from core.synthetic import make_twonorm


def test_twonorm_follows_breimans_recipe():
    X, y = make_twonorm(40_000, seed=1)
    assert X.shape == (40_000, 20) and set(np.unique(y)) == {-1.0, 1.0}
    assert abs(np.mean(y > 0) - 0.5) < 0.01
    a = 2.0 / np.sqrt(20)
    for label in (-1.0, 1.0):
        part = X[y == label]
        np.testing.assert_allclose(part.mean(axis=0), label * a, atol=0.03)
        np.testing.assert_allclose(np.cov(part, rowvar=False), np.eye(20), atol=0.04)
    # the Bayes rule sign(sum_j x_j) errs with probability Phi(-2)
    assert np.mean(np.sign(X.sum(axis=1)) != y) == pytest.approx(norm.cdf(-2.0), abs=0.003)


def test_twonorm_is_seeded_and_checks_its_arguments():
    X1, y1 = make_twonorm(300, seed=7)
    X2, y2 = make_twonorm(300, seed=7)
    assert np.array_equal(X1, X2) and np.array_equal(y1, y2)
    assert not np.array_equal(X1, make_twonorm(300, seed=8)[0])
    with pytest.raises(ValueError, match="make_twonorm needs n >= 2 and n_features >= 1, got n=1"):
        make_twonorm(1)
