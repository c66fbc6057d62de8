"""Platt scaling: P(y = +1 | f) = 1 / (1 + exp(A f + B)) fitted on held-out decision values.

Platt (1999) with the numerically careful Newton method of Lin, Lin & Weng
(2007): regularised targets t = (N+ + 1) / (N+ + 2) for positives and
1 / (N- + 2) for negatives, minimise the cross-entropy

    F(A, B) = sum_i w_i [t_i (A f_i + B) + log(1 + exp(-(A f_i + B)))]

by Newton steps on (A, B) with a backtracking line search.  Instance weights
w_i (1 by default) count a row w_i times: N+ and N- are the classes' weight
sums, as scikit-learn's sigmoid calibration takes its sample weights.
"""

import numpy as np


def _objective(A, B, f, t, w):
    z = A * f + B
    # w (t z + log(1 + e^-z)), evaluated without overflow for either sign of z
    return float(w @ (t * z + np.logaddexp(0.0, -z)))


def fit_platt(decision, y, weights=None, max_iter=100, min_step=1e-10, sigma=1e-12, eps=1e-5):
    """(A, B) of Platt's sigmoid for decision values ``decision``, labels ``y`` in {-1, +1} and instance
    ``weights`` (positive; None: all 1)."""
    f = np.asarray(decision, np.float64)
    y = np.asarray(y, np.float64)
    if f.shape != y.shape or f.size == 0:
        raise ValueError("Platt scaling needs as many decision values as labels, and at least one")
    w = np.ones(f.size) if weights is None else np.asarray(weights, np.float64)
    if w.shape != f.shape or not np.all(np.isfinite(w) & (w > 0)):
        raise ValueError("Platt scaling's weights must be one positive finite number per decision value")
    n_pos, n_neg = float(w[y > 0].sum()), float(w[y <= 0].sum())
    t = np.where(y > 0, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    A, B = 0.0, np.log((n_neg + 1.0) / (n_pos + 1.0))
    value = _objective(A, B, f, t, w)
    for _ in range(max_iter):
        z = A * f + B
        p = np.exp(-np.logaddexp(0.0, z))  # 1 / (1 + e^z)
        q = 1.0 - p
        d1 = w * (t - p)  # dF/dz
        d2 = w * p * q  # d2F/dz2
        g = np.array([f @ d1, d1.sum()])
        if np.all(np.abs(g) < eps):
            break
        H = np.array([[f * f @ d2 + sigma, f @ d2], [f @ d2, d2.sum() + sigma]])
        dA, dB = -np.linalg.solve(H, g)
        step = 1.0
        while step >= min_step:
            new = _objective(A + step * dA, B + step * dB, f, t, w)
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
