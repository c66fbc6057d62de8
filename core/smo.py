"""Driver-side SMO for one working set of the SVM dual family.

The sub-problem, over the q variables of a working set B (all other dual
variables fixed), is

    min_a  1/2 a^T Q a + p^T a        Q_ij = y_i y_j K(x_i, x_j)
    s.t.   y^T a = const                      (equality, kept by pair moves)
           0 <= a_i <= U_i                     (box; U_i = inf for budget-L2)
           sum_i a_i   <= S_rem               (budget-L1: B C, budget-L2: sqrt(B) C)
           sum_i a_i^2 <= R_rem               (budget-L2: C^2)

where S_rem and R_rem are what the fixed variables leave of the global sums.
The solver never sees p: it receives the gradient G = Q a + p at the current
point and keeps it up to date.

Each step moves one pair (i, j), i in I_up and j in I_low (LIBSVM's sets), as

    a_i += y_i t,   a_j -= y_j t,   t >= 0

(Dekel & Singer eq. 8 with lambda = t).  Along the pair the objective changes
by  -t g + t^2 q / 2  with  g = -y_i G_i + y_j G_j  (first-order violation)
and  q = K_ii + K_jj - 2 K_ij, so the unconstrained optimum is t = g / q
(their eq. 9).  The feasible interval for t is the smallest of the upper
bounds of Dekel & Singer eqs. 10-13:

    box     (eqs. 10-11)  t <= U_i - a_i or a_i,  t <= a_j or U_j - a_j
    budget  (eq. 12)      t <= S_rem / 2           when y_i = +1, y_j = -1
    ball    (eq. 13)      t^2 + beta t - R_rem / 2 <= 0,  beta = y_i a_i - y_j a_j

Working-set selection: i is the most violating index of I_up (within each
class when the budget constraint is present: two candidates); j maximises the
exact decrease of the objective along the pair after clipping to the feasible
interval.  Without the budget and ball
constraints this is LIBSVM's second-order rule (Fan, Chen & Lin 2005, WSS 2);
with them it never picks a pair the budget or the ball blocks.

Pair steps crawl where the sub-problem is flat: with no box (budget-L2, U = inf) and the budget
active, what is left to minimise on the face sum_i a_i = S_rem is the quadratic part alone, and where
Q is nearly singular (an RBF kernel over close points) and the ridge small, ||a||^2 can wander by
orders of magnitude at almost no change of the objective.  SMO then needed over 100,000 pair steps for
64 variables (a 150-row budget-L2 fit took 20 s).  So every ``_NEWTON_EVERY`` n pair steps without
convergence (without the ball: ``ball="multiplier"`` and the other problems), one Newton step on the
free variables F (0 < a_i < U_i, at most ``_NEWTON_MAX_FREE``) minimises the objective over their
affine set exactly:

    [ Q_FF + mu I   A^T ] [d]   [-G_F]       A: y_F^T, and 1^T when the budget is active
    [ A             0   ] [l] = [  0 ],      (least squares: Q_FF may be singular)

taken as far towards a_F + d as the bounds and the budget's slack allow (the objective, convex along d
with its minimum at d, decreases all the way); where a bound stopped it, another follows without that
variable, then pair steps go on.  Not for many free variables: on the ~4,500 of a budget-L2 fit on
10,000 covtype rows (C = 1), Newton steps from a Cholesky factor were each stopped short by a bound
almost at once, and 51 of them took 89 s of a 114 s fit that pair steps alone end in 24 s.
"""

import numpy as np
import numba

from core.config import NJIT
from core.lapack import least_squares

_TAU = 1e-12  # LIBSVM's floor on the pair curvature q
_TIGHT = 1e-12  # relative slack under which a sum constraint counts as active
_NEWTON_EVERY = 10  # pair steps per variable between Newton steps on the free variables (module doc)
_NEWTON_MAX_FREE = 256  # most free variables a Newton step solves for: a least-squares solve of (|F| + 2)^2
# takes ~10 (|F| + 2)^3 flops, ~5 ms here, and each step that a bound stops (a variable leaving F) one more
_NO_STEP, _FULL_STEP, _BLOCKED = 0, 1, 2  # what a Newton step did


@numba.njit(**NJIT)
def _pair_step_bound(i, j, y, alpha, upper, sum_slack, sq_slack):
    """Largest feasible t for the pair (i, j): Dekel & Singer eqs. 10-13."""
    if y[i] > 0:
        t_max = upper[i] - alpha[i]  # eq. 11, a_i <= U_i
    else:
        t_max = alpha[i]  # eq. 10, a_i >= 0
    if y[j] > 0:
        t_max = min(t_max, alpha[j])  # eq. 10, a_j >= 0
    else:
        t_max = min(t_max, upper[j] - alpha[j])  # eq. 11, a_j <= U_j
    if y[i] > 0 and y[j] < 0:
        t_max = min(t_max, 0.5 * sum_slack)  # eq. 12: the sum grows by 2t
    if sq_slack < np.inf:
        # eq. 13: (a_i + y_i t)^2 + (a_j - y_j t)^2 <= a_i^2 + a_j^2 + R_rem
        beta = y[i] * alpha[i] - y[j] * alpha[j]
        root = 0.5 * (-beta + np.sqrt(beta * beta + 2.0 * max(sq_slack, 0.0)))
        t_max = min(t_max, root)
    return max(t_max, 0.0)


@numba.njit(**NJIT)
def _in_up(k, y, alpha, upper):
    return alpha[k] < upper[k] if y[k] > 0 else alpha[k] > 0.0


@numba.njit(**NJIT)
def _in_low(k, y, alpha, upper):
    return alpha[k] > 0.0 if y[k] > 0 else alpha[k] < upper[k]


@numba.njit(**NJIT)
def _score(k, y, grad, alpha, upper, up_score, low_score):
    """What the selection reads of example k: s_k = -y_k G_k where k may pair as i (I_up), y_k G_k where it
    may pair as j (I_low), -inf where it may not.  Kept for every k by the gradient's pass, the selection's
    passes read two arrays instead of four, and with fewer branches."""
    score = y[k] * grad[k]
    up_score[k] = -score if _in_up(k, y, alpha, upper) else -np.inf
    low_score[k] = score if _in_low(k, y, alpha, upper) else -np.inf


@numba.njit(**NJIT)
def _smo_solve(K, y, grad, alpha, upper, sum_bound, sq_bound, ridge, tol, max_iter):
    n = y.shape[0]
    diag = np.empty(n)
    up_score = np.empty(n)
    low_score = np.empty(n)
    for k in range(n):
        diag[k] = K[k, k]
        _score(k, y, grad, alpha, upper, up_score, low_score)
    sum_slack = sum_bound - alpha.sum()
    sq_slack = sq_bound - (alpha * alpha).sum()
    sum_tight = _TIGHT * max(1.0, sum_bound) if sum_bound < np.inf else 0.0
    sq_tight = _TIGHT * max(1.0, sq_bound) if sq_bound < np.inf else 0.0
    # the budget (eq. 12) blocks pairs with y_i = +1, y_j = -1 only: then the most violating i of the
    # other class may be the better start, so each class offers its own; without it one i, as LIBSVM
    n_classes = 2 if sum_bound < np.inf else 1
    newton_every = _NEWTON_EVERY * max(n, 1)
    violation = 0.0
    it = 0
    while it < max_iter:
        if sum_slack <= sum_tight:
            sum_slack = 0.0
        if sq_slack <= sq_tight and sq_bound < np.inf:
            sq_slack = 0.0
        best_gain = 0.0
        best_i = -1
        best_j = -1
        best_t = 0.0
        violation = 0.0
        for c in range(n_classes):
            # i: the most violating index of I_up (in class cls when the budget splits them, else of any class)
            cls = 0.0 if n_classes == 1 else (1.0 if c == 0 else -1.0)
            i = -1
            g_max = -np.inf
            for k in range(n):
                if up_score[k] > g_max and (cls == 0.0 or y[k] == cls):
                    g_max = up_score[k]
                    i = k
            if i < 0:
                continue
            K_i = K[i]
            # an active budget (eq. 12) stops every pair of a positive i with a negative j: skipped before their
            # curvature and bounds, a pair step of budget-L1 on 4,800 covtype rows took 20-22 against 41-46 ns
            # per variable, and fits at tight tol half the time, with the same choices
            budget_blocks = y[i] > 0 and sum_slack <= 0.0
            for j in range(n):
                g = g_max + low_score[j]  # -inf where j is not in I_low
                if g <= 0.0 or j == i or (budget_blocks and y[j] < 0):
                    continue
                q = max(diag[i] + diag[j] - 2.0 * K_i[j] + 2.0 * ridge, _TAU)
                t = g / q
                if g > violation or t * g > 2.0 * best_gain:  # cheap tests before the bounds
                    t_max = _pair_step_bound(i, j, y, alpha, upper, sum_slack, sq_slack)
                    if t_max <= 0.0:
                        continue
                    violation = max(violation, g)
                    t = min(t, t_max)
                    gain = t * (g - 0.5 * q * t)
                    if gain > best_gain:
                        best_gain = gain
                        best_i = i
                        best_j = j
                        best_t = t
        if violation < tol or best_i < 0:
            break
        if sq_bound == np.inf and it > 0 and it % newton_every == 0:
            steps, outcome = 0, _BLOCKED
            while outcome == _BLOCKED and steps <= n:  # a bound stopped the step: again without that variable
                outcome = _newton_step(K, y, grad, alpha, upper, sum_slack, ridge)
                sum_slack = sum_bound - alpha.sum()
                if sum_slack <= sum_tight:
                    sum_slack = 0.0
                steps += outcome != _NO_STEP
            if steps:
                for k in range(n):
                    _score(k, y, grad, alpha, upper, up_score, low_score)
                it += 1
                continue
        i = best_i
        j = best_j
        t = best_t
        old_i = alpha[i]
        old_j = alpha[j]
        # move the pair; a variable whose own bound clipped t lands on it exactly
        if y[i] > 0:
            alpha[i] = upper[i] if t >= upper[i] - old_i else old_i + t
        else:
            alpha[i] = 0.0 if t >= old_i else old_i - t
        if y[j] > 0:
            alpha[j] = 0.0 if t >= old_j else old_j - t
        else:
            alpha[j] = upper[j] if t >= upper[j] - old_j else old_j + t
        if y[i] > 0 and y[j] < 0 and t >= 0.5 * sum_slack:
            sum_slack = 0.0  # eq. 12 clipped the step: the budget is now active
        else:
            sum_slack -= (alpha[i] - old_i) + (alpha[j] - old_j)
        sq_slack -= alpha[i] ** 2 - old_i**2 + alpha[j] ** 2 - old_j**2
        # G_k += Q_ki da_i + Q_kj da_j = y_k (y_i da_i K_ki + y_j da_j K_kj)
        d_i = y[i] * (alpha[i] - old_i)
        d_j = y[j] * (alpha[j] - old_j)
        K_i = K[i]
        K_j = K[j]
        for k in range(n):
            grad[k] += y[k] * (d_i * K_i[k] + d_j * K_j[k])  # K is symmetric: rows, not columns
            _score(k, y, grad, alpha, upper, up_score, low_score)
        grad[i] += ridge * (alpha[i] - old_i)
        grad[j] += ridge * (alpha[j] - old_j)
        _score(i, y, grad, alpha, upper, up_score, low_score)
        _score(j, y, grad, alpha, upper, up_score, low_score)
        it += 1
    return it, violation


@numba.njit(**NJIT)
def _newton_step(K, y, grad, alpha, upper, sum_slack, ridge):
    """One Newton step on the free variables (module doc), in place: alpha and grad (for every variable).
    Returns ``_FULL_STEP``, ``_BLOCKED`` (a bound or the budget's slack stopped it short), or ``_NO_STEP``,
    changing nothing, where it cannot help: fewer than two or more than ``_NEWTON_MAX_FREE`` free
    variables, no feasible step, no solution (LAPACK's SVD did not converge) or no decrease of the
    objective (the least-squares solve lost to rounding)."""
    n = y.shape[0]
    free = np.empty(n, np.int64)
    f = 0
    for k in range(n):
        if 0.0 < alpha[k] < upper[k]:
            free[f] = k
            f += 1
    if f < 2 or f > _NEWTON_MAX_FREE:
        return _NO_STEP
    free = free[:f]
    budget_active = sum_slack == 0.0
    size = f + (2 if budget_active else 1)
    kkt = np.zeros((size, size))
    rhs = np.zeros(size)
    for a in range(f):
        ka = free[a]
        for c in range(f):
            kkt[a, c] = y[ka] * y[free[c]] * K[ka, free[c]]
        kkt[a, a] += ridge
        kkt[a, f] = kkt[f, a] = y[ka]  # y^T d = 0
        if budget_active:
            kkt[a, f + 1] = kkt[f + 1, a] = 1.0  # 1^T d = 0
        rhs[a] = -grad[ka]
    solution, solved = least_squares(kkt, rhs)
    if not solved:
        return _NO_STEP
    d = solution[:f]
    # as far as the bounds (and the budget's slack, when it is not active) allow, up to the full step
    step, blocking = 1.0, -1  # blocking: the variable that stops the step, -1 for none or the slack
    for a in range(f):
        ka = free[a]
        limit = -alpha[ka] / d[a] if d[a] < 0.0 else (upper[ka] - alpha[ka]) / d[a] if d[a] > 0.0 else np.inf
        if limit < step:
            step, blocking = limit, a
    if not budget_active and d.sum() > 0.0 and sum_slack / d.sum() < step:
        step, blocking = sum_slack / d.sum(), -1
    # the objective's change along the step: step G_F^T d + step^2 / 2 d^T (Q_FF + mu I) d
    curvature = d @ (np.ascontiguousarray(kkt[:f, :f]) @ d)
    if step <= 0.0 or not step * (-(rhs[:f] @ d) + 0.5 * step * curvature) < 0.0:  # NaN: no decrease either
        return _NO_STEP
    for a in range(f):
        ka = free[a]
        old = alpha[ka]
        if a == blocking:  # lands on its bound exactly
            alpha[ka] = 0.0 if d[a] < 0.0 else upper[ka]
        else:
            alpha[ka] = min(max(old + step * d[a], 0.0), upper[ka])
        change = y[ka] * (alpha[ka] - old)
        K_a = K[ka]
        for k in range(n):  # G_k += Q_k,ka da_ka
            grad[k] += y[k] * change * K_a[k]
        grad[ka] += ridge * (alpha[ka] - old)
    return _FULL_STEP if step == 1.0 else _BLOCKED


def smo_solve(K, y, grad, alpha, upper, sum_bound=np.inf, sq_bound=np.inf, ridge=0.0, tol=1e-3, max_iter=100_000):
    """Solve the working-set sub-problem in place; return (iterations, violation).

    K: kernel matrix of the working set, its leading (q, q) block when K is
    a larger buffer (``core.working_set``); y: labels in {-1, +1};
    grad: gradient Q a + p at ``alpha`` (updated in place); alpha: feasible
    start (updated in place); upper: box bounds U_i (may be inf);
    sum_bound / sq_bound: what the other variables leave of the budget sums
    (inf when absent); ridge: mu of a term mu/2 ||a||^2 added to the
    objective (budget-L2's ball multiplier, see ``core.svc``; ``grad``
    must then include its gradient mu a).  Stops when no feasible pair
    violates the optimality conditions by ``tol`` or after ``max_iter``
    pair steps.
    """
    K = np.ascontiguousarray(K, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    upper = np.ascontiguousarray(upper, dtype=np.float64)
    for name, arr in (("grad", grad), ("alpha", alpha)):
        if not isinstance(arr, np.ndarray) or arr.dtype != np.float64 or not arr.flags.c_contiguous:
            raise ValueError(f"{name} must be a C-contiguous float64 array (it is updated in place)")
    n = y.shape[0]
    if K.ndim != 2 or min(K.shape) < n or grad.shape != (n,) or alpha.shape != (n,) or upper.shape != (n,):
        raise ValueError("K must be at least (q, q) and y, grad, alpha, upper length q")
    return _smo_solve(K, y, grad, alpha, upper, float(sum_bound), float(sq_bound), float(ridge), float(tol), int(max_iter))
