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


def naive_l2svm_optimum(K, y, lam, weights=None):
    """Optimal value of the L2-loss SVM primal min lam/2 ||w||^2 + 1/2 sum_i c_i max(0, 1 - y_i w.phi_i)^2
    for the kernel matrix K, from its dual (strong duality):

        max_{a >= 0}  sum a - 1/(2 lam) a^T (yy^T * K) a - 1/2 sum a_i^2 / c_i

    solved by L-BFGS-B (the dual is strongly concave, so this is independent of any Newton code)."""
    from scipy.optimize import minimize

    c = np.ones(len(y)) if weights is None else np.asarray(weights, float)
    Q = np.outer(y, y) * K

    def negative_dual(a):
        Qa = Q @ a
        value = -a.sum() + Qa @ a / (2 * lam) + 0.5 * (a * a / c).sum()
        return value, -1.0 + Qa / lam + a / c

    result = minimize(negative_dual, np.zeros(len(y)), jac=True, method="L-BFGS-B",
                      bounds=[(0, None)] * len(y), options={"maxiter": 100_000, "ftol": 1e-16, "gtol": 1e-12})
    return -result.fun
