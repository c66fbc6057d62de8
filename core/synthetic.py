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
