"""C-SVC and the budget SVMs of Dekel & Singer: each builds its constraints
and calls the shared dual decomposition (``core.dual``).

C-SVC (LIBSVM):        min 1/2 a^T Q a - e^T a,  y^T a = 0,  0 <= a_i <= C w_i
budget-L1-SVM (eq. 4 with the 1-inf interpolation norm, Thm. 1):
                       the same plus  sum_i a_i <= B C
budget-L2-SVM (eq. 4 with the 2-inf interpolation norm, t = sqrt(B)):
                       a >= 0,  y^T a = 0,  sum_i a_i <= sqrt(B) C,  sum_i a_i^2 <= C^2

The ball constraint of budget-L2.  Dekel & Singer bound each SMO pair step
by eq. 13 so that every iterate stays in the ball; that mode is kept
(``ball="pair_bounds"``), but on the curved boundary pair steps can stall
at points that are not optimal (on random 120-point problems we measured
objective gaps of 0.03% to 24% against a generic QP solver).  The default
(``ball="multiplier"``) finds the ball's Lagrange multiplier mu >= 0
instead: for fixed mu the KKT conditions are those of the problem with the
ridge mu/2 ||a||^2 and only linear constraints, which the decomposition
solves exactly; ||a(mu)||^2 decreases with mu, and mu is found by a
safeguarded secant search on ||a(mu)||^2 = C^2 (mu = 0 when the ball is
inactive), ending on the feasible side; its solves use tol / 100 so that the root
is as exact as the rest of the solution.
"""

import numpy as np

from core.dual import DualProblem, solve_dual, log
from core.kernels import KernelSpec
from core.model import KernelExpansion
from core.threads import one_blas_thread
from core.validation import check_positive

BALL_MODES = ("multiplier", "pair_bounds")
NORMS = ("l1", "l2")


def _to_model(engine, kernel, solution, method, params, extra=None):
    ids, rows, y, alpha = solution.support.arrays(engine.n_features)
    meta = {"method": method, "params": params, "rounds": solution.rounds,
            "objective": solution.objective, "violation": float(solution.violation),
            "converged": solution.converged, "n_train": engine.n_examples}
    meta.update(extra or {})
    return KernelExpansion(rows, alpha * y, -solution.rho, kernel, list(engine.classes),
                           engine.n_features, meta, ids)


@one_blas_thread
def fit_csvc(engine, *, C=1.0, kernel=None, tol=1e-3, working_set_size=1024, max_rounds=20_000):
    """Train LIBSVM's C-SVC on ``engine``; per-example weights scale the box (C w_i)."""
    kernel = (kernel or KernelSpec()).for_data(engine)
    check_positive(C=C, tol=tol)
    solution = solve_dual(engine, kernel, DualProblem(C=C), tol=tol,
                          working_set_size=working_set_size, max_rounds=max_rounds)
    params = {"C": C, "tol": tol, "working_set_size": working_set_size, "kernel": kernel.to_dict()}
    return _to_model(engine, kernel, solution, "csvc", params)


@one_blas_thread
def fit_budget_svm(engine, *, budget, C=1.0, norm="l1", kernel=None, tol=1e-3, working_set_size=1024,
                   max_rounds=20_000, prune=False, ball="multiplier"):
    """Train Dekel & Singer's budget-L1 (``norm="l1"``) or budget-L2 SVM.

    ``budget``: B, the number of worst-classified examples the loss counts;
    ``prune``: keep only the B largest weights afterwards (section 5);
    ``ball``: how budget-L2 handles sum a^2 <= C^2 (see the module doc).
    """
    kernel = (kernel or KernelSpec()).for_data(engine)
    check_positive(C=C, tol=tol, budget=budget)
    if norm not in NORMS:
        raise ValueError(f"norm must be 'l1' or 'l2', got {norm!r}")
    if ball not in BALL_MODES:
        raise ValueError(f"ball must be one of {BALL_MODES}, got {ball!r}")
    run = dict(tol=tol, working_set_size=working_set_size, max_rounds=max_rounds)
    extra = {}
    if norm == "l1":
        solution = solve_dual(engine, kernel, DualProblem(C=C, sum_bound=budget * C), **run)
    elif ball == "pair_bounds":
        problem = DualProblem(C=np.inf, sum_bound=np.sqrt(budget) * C, sq_bound=C * C)
        solution = solve_dual(engine, kernel, problem, **run)
    else:
        solution, mu, n_solves = _solve_with_ball_multiplier(engine, kernel, budget, C, run)
        extra = {"ball_multiplier": mu, "multiplier_solves": n_solves}
    params = {"budget": budget, "C": C, "norm": norm, "tol": tol, "working_set_size": working_set_size,
              "kernel": kernel.to_dict(), "prune": prune, "ball": ball}
    model = _to_model(engine, kernel, solution, f"budget_{norm}", params, extra)
    if norm == "l1" and model.n_support > 2 * budget:
        log.warning("budget-L1 SVM kept %d support vectors for budget B = %d%s, more than 2B: B counts the "
                    "worst-classified examples, not support vectors (a hard cap: SpSVM's maxBasis, "
                    "ElasticBudgetSVM's budget)", model.n_support, budget, f" (pruned to {budget})" if prune else "")
    return model.pruned(int(budget)) if prune else model


def _solve_with_ball_multiplier(engine, kernel, budget, C, run, rel_tol=1e-8, max_solves=100):
    """Budget-L2 via the ball's multiplier mu: root of phi(mu) = ||a(mu)||^2 - C^2 (see module doc)."""
    problem = DualProblem(C=np.inf, sum_bound=np.sqrt(budget) * C)
    radius2 = C * C
    # ||a(mu)||^2 is only as exact as the solves behind it: solve 100 times tighter than asked
    run = dict(run, tol=0.01 * run["tol"])
    solution = solve_dual(engine, kernel, problem, **run)
    phi0 = solution.support.sums()[1] - radius2
    if phi0 <= 0:
        return solution, 0.0, 1
    solves = 1

    def phi_at(mu):
        nonlocal solution, solves
        # partitions keep alpha and G; only the ridge changes, so this is a warm start
        solution = solve_dual(engine, kernel, problem, ridge=mu, support=solution.support, reset=False, **run)
        solves += 1
        return solution.support.sums()[1] - radius2

    lo, phi_lo = 0.0, phi0
    hi = 1.0 / C
    phi_hi = phi_at(hi)
    while phi_hi > 0:  # grow the bracket: ||a(mu)|| -> 0 as mu -> inf
        lo, phi_lo, hi = hi, phi_hi, 4.0 * hi
        phi_hi = phi_at(hi)
    last, side = hi, 0
    while hi - lo > rel_tol * hi and -phi_hi > rel_tol * radius2 and solves < max_solves:
        # regula falsi with the Illinois modification, bisection as the safeguard
        mid = hi - phi_hi * (hi - lo) / (phi_hi - phi_lo)
        if not lo < mid < hi:
            mid = 0.5 * (lo + hi)
        phi_mid, last = phi_at(mid), mid
        if phi_mid > 0:
            lo, phi_lo = mid, phi_mid
            phi_hi *= 0.5 if side == -1 else 1.0
            side = -1
        else:
            hi, phi_hi = mid, phi_mid
            phi_lo *= 0.5 if side == 1 else 1.0
            side = 1
    if last != hi:
        phi_at(hi)  # end on the feasible side of the root
    norm2 = solution.support.sums()[1]
    if norm2 > radius2:
        # the last solve stopped within tol of a(hi), possibly a hair outside the ball: scale back
        # (keeps y^T a = 0, a >= 0 and the sum bound); the bias is the converged point's
        factor = np.sqrt(radius2 / norm2)
        total = solution.support.sums()[0]
        solution.support.scale(factor)
        # f(s a) = s^2 (f(a) + e^T a) - s e^T a
        solution.objective = factor**2 * (solution.objective + total) - factor * total
    log.info("budget-L2: ball multiplier mu = %.6g after %d solves", hi, solves)
    return solution, hi, solves
