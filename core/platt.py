"""Platt scaling: P(y = +1 | f) = 1 / (1 + exp(A f + B)) fitted on held-out decision values.

Platt (1999) with the numerically careful Newton method of Lin, Lin & Weng
(2007): regularised targets t = (N+ + 1) / (N+ + 2) for positives and
1 / (N- + 2) for negatives, minimise the cross-entropy

    F(A, B) = sum_i t_i (A f_i + B) + log(1 + exp(-(A f_i + B)))

by Newton steps on (A, B) with a backtracking line search.
"""

import numpy as np


def _objective(A, B, f, t):
    z = A * f + B
    # t z + log(1 + e^-z), evaluated without overflow for either sign of z
    return float(np.sum(t * z + np.logaddexp(0.0, -z)))


def fit_platt(decision, y, max_iter=100, min_step=1e-10, sigma=1e-12, eps=1e-5):
    """(A, B) of Platt's sigmoid for decision values ``decision`` and labels ``y`` in {-1, +1}."""
    f = np.asarray(decision, np.float64)
    y = np.asarray(y, np.float64)
    if f.shape != y.shape or f.size == 0:
        raise ValueError("Platt scaling needs as many decision values as labels, and at least one")
    n_pos, n_neg = int(np.sum(y > 0)), int(np.sum(y <= 0))
    t = np.where(y > 0, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    A, B = 0.0, np.log((n_neg + 1.0) / (n_pos + 1.0))
    value = _objective(A, B, f, t)
    for _ in range(max_iter):
        z = A * f + B
        p = np.exp(-np.logaddexp(0.0, z))  # 1 / (1 + e^z)
        q = 1.0 - p
        d1 = t - p  # dF/dz
        d2 = p * q  # d2F/dz2
        g = np.array([f @ d1, d1.sum()])
        if np.all(np.abs(g) < eps):
            break
        H = np.array([[f * f @ d2 + sigma, f @ d2], [f @ d2, d2.sum() + sigma]])
        dA, dB = -np.linalg.solve(H, g)
        step = 1.0
        while step >= min_step:
            new = _objective(A + step * dA, B + step * dB, f, t)
            if new < value + 1e-4 * step * (g @ [dA, dB]):
                A, B, value = A + step * dA, B + step * dB, new
                break
            step /= 2.0
        else:
            break  # no decrease along the Newton direction: at the optimum up to rounding
    return float(A), float(B)


def platt_probability(decision, A, B):
    """P(y = +1 | f) for decision values f."""
    return np.exp(-np.logaddexp(0.0, A * np.asarray(decision, np.float64) + B))
