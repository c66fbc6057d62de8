"""Slow, obviously correct numpy reference implementations for the tests.

Each function loops over the definition directly; sparse inputs are densified.
"""

import numpy as np
import scipy.sparse as sp


def _dense(X):
    return X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)


def naive_kernel(X, Z, spec):
    """K[i, j] = K(x_i, z_j) by a loop over all pairs (spec: a KernelSpec)."""
    X, Z = _dense(X), _dense(Z)
    K = np.empty((X.shape[0], Z.shape[0]))
    for i, x in enumerate(X):
        for j, z in enumerate(Z):
            if spec.name == "rbf":
                K[i, j] = np.exp(-spec.gamma * np.linalg.norm(x - z) ** 2)
            elif spec.name == "linear":
                K[i, j] = np.dot(x, z)
            elif spec.name == "poly":
                K[i, j] = (spec.gamma * np.dot(x, z) + spec.coef0) ** spec.degree
            else:
                raise ValueError(f"unknown kernel {spec.name!r}")
    return K


def naive_dual_qp(K, y, upper, sum_bound=np.inf, sq_bound=np.inf):
    """Generic QP solve (scipy SLSQP) of the SVM dual family; returns (alpha, objective).

    min 1/2 a^T Q a - e^T a,  y^T a = 0,  0 <= a <= upper,  sum a <= sum_bound,  sum a^2 <= sq_bound.
    """
    from scipy.optimize import minimize

    n = len(y)
    Q = K * np.outer(y, y)
    constraints = [{"type": "eq", "fun": lambda a: y @ a, "jac": lambda a: y}]
    if np.isfinite(sum_bound):
        constraints.append({"type": "ineq", "fun": lambda a: sum_bound - a.sum(), "jac": lambda a: -np.ones(n)})
    if np.isfinite(sq_bound):
        constraints.append({"type": "ineq", "fun": lambda a: sq_bound - a @ a, "jac": lambda a: -2.0 * a})
    bounds = [(0.0, u if np.isfinite(u) else None) for u in upper]
    result = minimize(lambda a: 0.5 * a @ Q @ a - a.sum(), np.zeros(n), jac=lambda a: Q @ a - 1.0,
                      bounds=bounds, constraints=constraints, method="SLSQP",
                      options={"maxiter": 5000, "ftol": 1e-15})
    return result.x, result.fun


def naive_dual_objective(K, y, alpha):
    """f(a) = 1/2 a^T Q a - e^T a with Q_ij = y_i y_j K_ij."""
    c = alpha * y
    return 0.5 * c @ K @ c - alpha.sum()


def naive_ebsvm(X, y, weight, ids, *, budget, lam, spec, eta_theta, average, total_steps):
    """EBSVM's steps (core.ebsvm's module doc) on the rows in the given order, coefficients kept directly.

    Returns (support ids, coefficients), sorted by id.  No scale trick: every
    step multiplies every a_j by (1 - 1/t); the average sums a_j after every
    step of the last half.
    """
    X = _dense(X)
    sv, born, alpha, total = [], [], [], {}  # total: id -> sum of a_j over the averaged steps
    theta, first_averaged = 0.0, total_steps // 2 + 1 if average else total_steps + 1
    for t, (x, label, w, i) in enumerate(zip(X, y, weight, ids), start=1):
        k = [naive_kernel(x[None], X[ids.tolist().index(j)][None], spec)[0, 0] for j in sv]
        margin = label * float(np.dot(alpha, k)) if sv else 0.0
        alpha = [(1.0 - 1.0 / t) * a for a in alpha]
        if margin < 1.0:
            alpha = [a + label * w * kj / (lam * t) for a, kj in zip(alpha, k)]
            if i not in sv:
                sv.append(i), born.append(t), total.setdefault(i, 0.0)
                alpha.append(label * w * naive_kernel(x[None], x[None], spec)[0, 0] / (lam * t))
        theta = max(0.0, theta - eta_theta / (lam * t) * (budget - len(sv)))
        violators = [j for j in range(len(sv)) if abs(alpha[j]) < theta]
        if violators:
            _naive_drop(sv, born, alpha, total, min(violators, key=lambda j: (abs(alpha[j]), born[j])))
        if t >= first_averaged:
            for j, a in zip(sv, alpha):
                total[j] += a
    while len(sv) > budget:
        _naive_drop(sv, born, alpha, total, min(range(len(sv)), key=lambda j: (abs(alpha[j]), born[j])))
    n_averaged = max(1, total_steps - first_averaged + 1)
    coef = [total[j] / n_averaged for j in sv] if average else alpha
    order = np.argsort(sv)
    return np.asarray(sv)[order], np.asarray(coef)[order]


def _naive_drop(sv, born, alpha, total, j):
    del total[sv[j]]
    del sv[j], born[j], alpha[j]
