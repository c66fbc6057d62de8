"""Seeded synthetic classification data for the quick-start job and tests."""

import numpy as np


def make_rings(n, n_features=10, noise=0.05, seed=0):
    """A non-linear two-class problem that an RBF kernel separates well.

    x ~ N(0, I_p); the label is +1 inside a sphere around the origin in the
    first three coordinates, wrapped by a sine of the fourth (so no linear
    rule does well), with a fraction ``noise`` of labels flipped.  Returns
    ``(X, y)`` with y in {-1, +1}.
    """
    if n < 2 or n_features < 4:
        raise ValueError("make_rings needs n >= 2 and n_features >= 4")
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, n_features))
    r = np.sqrt((X[:, :3] ** 2).sum(axis=1))
    y = np.where(r + 0.5 * np.sin(2.0 * X[:, 3]) < 1.6, 1.0, -1.0)
    flip = rng.random(n) < noise
    y[flip] = -y[flip]
    return X, y


TWONORM_ROWS = 7400  # the size of Breiman's twonorm as used by Huang et al. (Table 3)


def make_twonorm(n=TWONORM_ROWS, n_features=20, seed=0):
    """Breiman's twonorm ("Bias, variance and arcing classifiers", 1996): two Gaussians.

    Each label is +1 or -1 with probability 1/2; x ~ N(y a (1, ..., 1), I)
    with a = 2 / sqrt(n_features), so the class means are 4 apart and the
    Bayes rule (the sign of sum_j x_j) errs with probability Phi(-2) = 2.28%.
    Returns ``(X, y)``, X float64 of shape (n, n_features), y in {-1, +1}.
    """
    if n < 2 or n_features < 1:
        raise ValueError(f"make_twonorm needs n >= 2 and n_features >= 1, got n={n}, n_features={n_features}")
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    X = rng.standard_normal((n, n_features)) + (2.0 / np.sqrt(n_features)) * y[:, None]
    return X, y


FOREST_ROWS = 522_910  # the seed paper's Forest training set (Covertype, class 2 vs rest)
FOREST_CONTINUOUS = 10
FOREST_AREAS = 4  # wilderness areas: one-hot columns 10-13
FOREST_SOILS = 40  # soil types: one-hot columns 14-53


def make_forest_like(n=FOREST_ROWS, noise=0.05, seed=0):
    """A Forest-shaped (UCI Covertype) binary problem: 10 continuous and 44 one-hot columns.

    Columns 0-9 are continuous in [0, 1] (as in LIBSVM's scaled covtype),
    10-13 one-hot wilderness areas, 14-53 one-hot soil types, each row with
    exactly one area and one soil.  The label is +1 when

        2 sin(2 pi x0) + 4 (x1 - 0.5)^2 + 1.5 x2 x3 + area_effect + soil_effect > threshold

    (the threshold is the score's median, so the classes are balanced like
    Forest's 49% class 2), then a fraction ``noise`` of labels is flipped.
    The effects are drawn once from the seed.  Returns ``(X, y)``, X
    float64 of shape (n, 54), y in {-1, +1}.
    """
    if n < 2:
        raise ValueError(f"make_forest_like needs n >= 2 rows, got {n}")
    if not 0.0 <= noise < 0.5:
        raise ValueError(f"noise (the share of flipped labels) must be in [0, 0.5), got {noise}")
    rng = np.random.default_rng(seed)
    area_effect = rng.normal(0.0, 0.5, FOREST_AREAS)
    soil_effect = rng.normal(0.0, 0.3, FOREST_SOILS)
    # continuous columns: x0..x3 drive the rule, the rest are correlated distractors
    cont = rng.random((n, FOREST_CONTINUOUS))
    cont[:, 5:] = np.clip(0.5 * cont[:, :5] + 0.5 * cont[:, 5:], 0.0, 1.0)
    area = rng.choice(FOREST_AREAS, n, p=[0.45, 0.05, 0.44, 0.06])
    soil = rng.integers(0, FOREST_SOILS, n)
    X = np.zeros((n, FOREST_CONTINUOUS + FOREST_AREAS + FOREST_SOILS))
    X[:, :FOREST_CONTINUOUS] = cont
    X[np.arange(n), FOREST_CONTINUOUS + area] = 1.0
    X[np.arange(n), FOREST_CONTINUOUS + FOREST_AREAS + soil] = 1.0
    score = (2 * np.sin(2 * np.pi * cont[:, 0]) + 4 * (cont[:, 1] - 0.5) ** 2 + 1.5 * cont[:, 2] * cont[:, 3]
             + area_effect[area] + soil_effect[soil])
    y = np.where(score > np.median(score), 1.0, -1.0)
    flip = rng.random(n) < noise
    y[flip] = -y[flip]
    return X, y
