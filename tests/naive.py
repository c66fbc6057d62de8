"""Slow, obviously correct numpy reference implementations for the tests.

Each function loops over the definition directly; sparse inputs are densified.
"""

import numpy as np
import scipy.sparse as sp

from core.rows import LARGEST_FEATURE


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


def naive_slant_steps(X, y, keys, reference, eta, epsilon, aggressive=False, max_support=None, max_steps=10**9):
    """The slant-loss sparsifier one step at a time over all n examples (Cotter et al., sections 4.2, 4.6, 6.1).

    y in {-1, +1}; ``reference`` a KernelExpansion with bias b.  Returns (row index of every step, stop
    reason).  Ties go to the smaller of ``keys`` (the examples' content keys, ``PartitionData.keys``), then the
    smaller row index.
    """
    K = naive_kernel(X, X, reference.kernel)
    b = reference.bias
    margin = y * (naive_kernel(X, reference.support_vectors, reference.kernel) @ reference.coef + b)
    h = np.minimum(1.0, margin) - y * b
    eligible = margin > 0
    c = np.zeros(len(y))
    support = np.zeros(len(y), bool)
    steps = []

    def most_violating(mask):
        if not mask.any():
            return None
        v = np.where(mask, h - c, -np.inf)
        top = np.flatnonzero(v == v.max())
        return int(top[np.lexsort((top, keys[top]))[0]])

    while True:
        if len(steps) >= max_steps:
            return steps, "max_steps"
        k = most_violating(support & (h - c > epsilon)) if aggressive else None
        if k is None:
            k = most_violating(eligible)
            if k is None or h[k] - c[k] <= epsilon:
                return steps, "objective"
            if not support[k] and support.sum() == max_support:
                return steps, "max_support"
        c += (eta * y[k]) * y * K[:, k]
        support[k] = True
        steps.append(k)


def naive_l0svm_step(K, y, a, C_xi, C_alpha, eps=1e-4, margin="kernel"):
    """One outer iteration of the L0-norm SVM (Huang et al., eqs. 3.6-3.11) with dense matrices.

    K: (n, n) kernel matrix of the training set; a: current coefficients.
    A = {|a_i| >= eps}, Lambda = diag(a_A^-2); M = (K_AA + C_alpha Lambda)^-1
    (``margin="kernel"``) or (I + C_alpha Lambda)^-1 (``"identity"``), both
    inverted directly; beta solves eq. 3.6 with K~ = K_{:,A} M K_{A,:} by a
    generic QP; a_A = M K_{A,:} diag(y) beta (3.10); b by eq. 3.11.
    Returns (beta, next a, b).
    """
    A = np.abs(a) >= eps
    G = K[np.ix_(A, A)] if margin == "kernel" else np.eye(A.sum())
    M = np.linalg.inv(G + C_alpha * np.diag(a[A] ** -2.0))
    beta, _ = naive_dual_qp(K[:, A] @ M @ K[A, :], y, np.full(len(y), C_xi))
    a_next = np.zeros_like(a)
    a_next[A] = M @ K[A, :] @ (y * beta)
    free = (beta > 1e-6 * C_xi) & (beta < C_xi * (1 - 1e-6))
    return beta, a_next, np.mean(y[free] - K[free] @ a_next)


def naive_ebsvm(X, y, weight, ids, *, budget, lam, spec, eta_theta, average_fraction, total_steps):
    """EBSVM's steps (core.ebsvm's module doc) on the rows in the given order, coefficients kept directly.

    Returns (support ids, coefficients), sorted by id.  No scale trick: every
    step multiplies every a_j by (1 - 1/t); the average sums a_j after every
    one of the last ceil(average_fraction total_steps) steps.
    """
    X = _dense(X)
    sv, born, alpha, total = [], [], [], {}  # total: id -> sum of a_j over the averaged steps
    n_averaged = int(np.ceil(average_fraction * total_steps))
    theta, first_averaged = 0.0, total_steps - n_averaged + 1
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
    coef = [total[j] / n_averaged for j in sv] if n_averaged else alpha
    order = np.argsort(sv)
    return np.asarray(sv)[order], np.asarray(coef)[order]


def _naive_drop(sv, born, alpha, total, j):
    del total[sv[j]]
    del sv[j], born[j], alpha[j]


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


def naive_group_moments(X, group_of, n_groups, usable):
    """Per group and feature of the dense rows X: mean, sample variance (0 for one row) and nonzeros, the
    rows not ``usable`` counted as rows of zeros; and per row whether it holds a NaN, an infinity or a value above
    ``LARGEST_FEATURE`` in magnitude."""
    X = np.asarray(X, dtype=np.float64)
    counted = np.where(np.asarray(usable)[:, None], X, 0.0)
    mean, variance, nonzeros = (np.zeros((n_groups, X.shape[1])) for _ in range(3))
    for g in range(n_groups):
        rows = counted[np.asarray(group_of) == g]
        if len(rows):
            mean[g] = rows.mean(axis=0)
            nonzeros[g] = (rows != 0).sum(axis=0)
        if len(rows) > 1:
            variance[g] = rows.var(axis=0, ddof=1)
    return mean, variance, nonzeros, ~(np.abs(X) <= LARGEST_FEATURE).all(axis=1)
