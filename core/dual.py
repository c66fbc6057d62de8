"""Driver loop of the dual decomposition shared by C-SVC and the budget SVMs.

    min_a  f(a) + mu/2 ||a||^2,   f(a) = 1/2 a^T Q a - e^T a
    s.t.   y^T a = 0,  0 <= a_i <= U_i,  sum_i a_i <= S,  [sum_i a_i^2 <= R]

Each round every partition applies the previous working set's alpha changes
to its gradients and returns its most violating examples (``dual_round``);
the driver merges them into a working set of q examples and solves the
q-variable sub-problem with the numba SMO of ``core.smo``, over a kernel
matrix kept from round to round (``core.working_set``).  The partitions
shrink examples that cannot pair (``core.partition.dual``).  A row crosses
the wire once each way: the driver keeps the candidates' rows it receives,
the partitions the working sets' (``core.row_store``).  The loop stops
when no allowed pair of classes violates the optimality conditions by more
than ``tol`` (LIBSVM's stopping rule, with the budget's restriction on
pairs) in a round with no example shrunk.  The bias follows LIBSVM: the
mean over free variables, per class when the budget constraint is active
(as for nu-SVM), else the midpoint of the feasible interval.
"""

import logging
import time
from dataclasses import dataclass

import numpy as np

from core.partition.dual import NEG, POS, dual_round
from core.progress import Progress
from core.row_store import RowLedger
from core.rows import take_rows
from core.smo import smo_solve
from core.support_set import SupportSet
from core.validation import check_integer
from core.working_set import WorkingSetKernel

log = logging.getLogger("spark_bsvm")

_TIGHT = 1e-12  # relative slack under which the budget sum counts as active (as in core.smo)
_MAX_WORKING_SET = 8192  # its kernel matrix is 512 MiB (4096: 1.4x the CPU on covtype-15k, 56 rounds, not 25)
# a ledger whose rows received take more starts again (with the working set's); what a partition holds of the
# working sets' rows is a part of them, so this also bounds what the ledger adds to a task's memory
_ROW_STORE_BYTES = 64 << 20
_INNER_TOL_SHARE = 0.3  # a sub-problem stops at this share of the round's violation (or at tol)
_STAT_KEYS = ("up_max", "low_min", "free_count", "free_sum", "upper_max", "zero_min")
_NO_UPDATE = {"ws_ids": np.zeros(0, np.int64), "ws_rows": None, "ws_y": None, "ws_alpha_old": None, "ws_alpha": None}
_RESTORE = dict(_NO_UPDATE, reset=False, unshrink=True)  # a round that only restores the shrunk examples


@dataclass
class DualProblem:
    """Constraints of one member of the family: box scale C (U_i = C w_i), sum bound S, ball R."""

    C: float
    sum_bound: float = np.inf
    sq_bound: float = np.inf


@dataclass
class DualSolution:
    support: SupportSet
    rho: float  # decision function: sum_j a_j y_j K(x_j, x) - rho
    objective: float  # f(a), without the ridge
    rounds: int
    violation: float
    converged: bool


_CAND_KEYS = ("cand_ids", "cand_keys", "cand_y", "cand_alpha", "cand_grad", "cand_upper", "cand_score")


def _merge_candidates(answers):
    """One candidate table from ``answers`` (the carried-over working set first, then the partitions'), in the
    order of the examples' content keys (then ids, for identical examples): the working set, its
    sub-problem's variables and so SMO's tie-breaks follow the examples, not their row order.

    An example in several answers keeps its values from the first: a carried-over variable's gradient is
    always the one SMO left (not, when its partition happens to report it too, the partition's, which
    differs in the last bits), so which values the driver sees does not depend on which examples the
    partitioning puts among a partition's top violators."""
    merged = {k: np.concatenate([a[k] for a in answers]) for k in _CAND_KEYS}
    _, first = np.unique(merged["cand_ids"], return_index=True)
    first = first[np.lexsort((merged["cand_ids"][first], merged["cand_keys"][first]))]
    return {k: v[first] for k, v in merged.items()}


def _violation(up_max, low_min, budget_tight):
    """Largest s_i - s_j over allowed class pairs (i in I_up, j in I_low), s = -y F."""
    worst = -np.inf
    for ci in (NEG, POS):
        for cj in (NEG, POS):
            if budget_tight and ci == POS and cj == NEG:
                continue  # this pair would raise sum a above the budget (eq. 12)
            worst = max(worst, up_max[ci] - low_min[cj])
    return worst


def _midpoint(lo, hi):
    if np.isfinite(lo) and np.isfinite(hi):
        return 0.5 * (lo + hi)
    return lo if np.isfinite(lo) else (hi if np.isfinite(hi) else 0.0)


def _rho(stats, budget_tight):
    """Bias from the KKT conditions F_i + nu + eta y_i = 0 on free variables (rho = -eta)."""
    count, total = stats["free_count"], stats["free_sum"]
    upper_max, zero_min = stats["upper_max"], stats["zero_min"]
    if budget_tight:
        # nu != 0: class means m_c = -nu - eta c, so rho = (m_+ - m_-) / 2
        m = [total[c] / count[c] if count[c] else _midpoint(upper_max[c], zero_min[c]) for c in (NEG, POS)]
        return 0.5 * (m[POS] - m[NEG])
    if count.sum():
        return (total[POS] - total[NEG]) / count.sum()  # mean of y_i F_i over free variables
    lower = max(upper_max[POS], -zero_min[NEG])
    upper = min(zero_min[POS], -upper_max[NEG])
    return _midpoint(lower, upper)


def _per_share(size):
    """Candidates per share of a working set of ``size`` places: its four shares are I_up and I_low of each
    class, and each partition reports that many of each (the driver picks the best globally)."""
    return max(1, size // 4)


def _select(cand, size, carried_ids):
    """The next working set of at most ``size`` candidates.

    Up to half of it are the free variables of the previous working set
    (kept as SVMlight does, so that consecutive sub-problems overlap and the
    decomposition does not zig-zag); the rest are the most violating members
    of I_up and of I_low in each class, globally, in equal shares.
    """
    y, alpha, upper, score = cand["cand_y"], cand["cand_alpha"], cand["cand_upper"], cand["cand_score"]
    free = (alpha > 0) & (alpha < upper)
    carried = np.flatnonzero(free & np.isin(cand["cand_ids"], carried_ids))[: size // 2]
    n_select = _per_share(size - carried.size)
    pos = y > 0
    up = np.where(pos, alpha < upper, alpha > 0)
    low = np.where(pos, alpha > 0, alpha < upper)
    chosen = [carried]
    for in_class in (~pos, pos):
        for mask, sign in ((up & in_class, 1.0), (low & in_class, -1.0)):
            idx = np.flatnonzero(mask)
            chosen.append(idx[np.argsort(-sign * score[idx], kind="stable")[:n_select]])
    return np.unique(np.concatenate(chosen))


def solve_dual(engine, kernel, problem, *, tol=1e-3, working_set_size=1024, max_rounds=20_000,
               ridge=0.0, support=None, reset=True, feature_map=None):
    """Run the decomposition on ``engine`` until the violation is below ``tol``.

    ``support``: the SupportSet to start from (``None``: a = 0);
    ``reset``: make the partitions rebuild their state from it; ``False``
    when they already hold it (a warm start across ridge values).
    ``working_set_size``: q of the first round; q grows to twice the number
    of free variables (at most 8192).  ``max_rounds`` bounds the sub-problem
    solves; a last round always evaluates the final point (``max_rounds=0``
    only evaluates).  A sub-problem stops at ``max(tol, 0.3 * violation)``,
    the violation being the whole problem's at the start of the round: an
    exact solve only polishes pairs that the next round's new violators move
    again (exact solves took 1.1x the CPU on covtype-15k and 1.3x on ijcnn1,
    for the same objective to 1e-7; 0.1 tol took 1.7x the SMO steps).
    ``feature_map``: ``core.partition.common.feature_map_request(...)``: solve
    over the explicit features phi(x_i) instead of the rows (``kernel`` is then
    the kernel between features, and the support set holds features); the
    whole map goes with the first request and rebuilds, later ones carry its key.
    """
    (size,) = check_integer(1, working_set_size=working_set_size)
    (max_rounds,) = check_integer(0, max_rounds=max_rounds)
    support = SupportSet() if support is None else support
    spec = kernel.to_dict()
    feature_map = feature_map or {}
    base = {"kernel": spec, "C": problem.C, "ridge": float(ridge), "map_key": feature_map.get("map_key"),
            "shrink_below": -np.inf, "shrink_above": np.inf, "unshrink": False}
    request = dict(base, **feature_map, **_NO_UPDATE, reset=reset, n_select=_per_share(size))
    if reset:
        request = _rebuild_request(request, support, engine)
    start = time.perf_counter()
    violation, converged = np.inf, False
    carry, carried_ids = None, np.zeros(0, np.int64)
    shrinking = True
    progress = Progress("dual decomposition", unit="rounds")  # its end is the violation reaching tol
    ledger = RowLedger()  # the rows exchanged with the partitions (core.row_store)

    def run_round(request):
        request = dict(request, rows_key=ledger.key)

        def rebuild():
            ledger.shared.clear()  # the partitions rebuild their state: they hold none of the rows sent
            return _rebuild_request(dict(request, **feature_map), support, engine)

        answers = engine.run(dual_round, request, rebuild=rebuild)
        for answer in answers:
            ledger.received.add(answer["cand_ids"][answer["cand_new"]], answer["cand_rows"])
        return answers

    with WorkingSetKernel(kernel, min(max(size, _MAX_WORKING_SET), engine.n_examples)) as ws_kernel:
        for rounds in range(1, max_rounds + 2):
            answers = run_round(request)
            sum_alpha, sum_sq = support.sums()
            stats, violation, objective = _summary(answers, problem, sum_alpha)
            log.info("dual round %d: support %d, objective %.6g, violation %.3g, %.1fs",
                     rounds, len(support), objective, violation, time.perf_counter() - start)
            progress.update(rounds, f"violation {violation:.3g} (stops below {tol:.3g}), support {len(support)}")
            if violation < tol:
                if sum(a["shrunk"] for a in answers):
                    # optimal over the active examples: restore the shrunk ones and look again; from then on
                    # without shrinking, so that a solve restores at most once
                    shrinking = False
                    request = dict(base, **_RESTORE, n_select=_per_share(size))
                    continue
                converged = True
                break
            if rounds > max_rounds:
                log.warning("dual decomposition stopped after max_rounds=%d with violation %.3g > tol=%.3g; "
                            "raise maxIter or tol", max_rounds, violation, tol)
                break
            cand = _merge_candidates(answers if carry is None else [carry] + answers)
            ws = _select(cand, size, carried_ids)
            ws_rows = ledger.received.take(cand["cand_ids"][ws])
            order, K = ws_kernel.arrange(cand["cand_ids"][ws], ws_rows)
            ws, ws_rows = ws[order], take_rows(ws_rows, order)
            y_ws, alpha_old = cand["cand_y"][ws], cand["cand_alpha"][ws]
            alpha_ws = alpha_old.copy()
            grad_ws = cand["cand_grad"][ws] + ridge * alpha_old
            own_sum, own_sq = alpha_old.sum(), alpha_old @ alpha_old
            smo_solve(K, y_ws, grad_ws, alpha_ws, cand["cand_upper"][ws],
                      sum_bound=problem.sum_bound - (sum_alpha - own_sum),
                      sq_bound=problem.sq_bound - (sum_sq - own_sq),
                      ridge=ridge, tol=max(tol, _INNER_TOL_SHARE * violation))
            changed = alpha_ws != alpha_old
            if not changed.any():
                log.warning("dual decomposition stalled at round %d with violation %.3g > tol=%.3g: "
                            "the working set made no progress", rounds, violation, tol)
                break
            ws_ids = cand["cand_ids"][ws]
            carried_ids = ws_ids
            carry = {"cand_ids": ws_ids, "cand_keys": cand["cand_keys"][ws], "cand_y": y_ws,
                     "cand_alpha": alpha_ws, "cand_grad": grad_ws - ridge * alpha_ws,
                     "cand_upper": cand["cand_upper"][ws], "cand_score": -y_ws * grad_ws}
            changed_rows = take_rows(ws_rows, np.flatnonzero(changed))
            support.update(ws_ids[changed], alpha_ws[changed], y_ws[changed], changed_rows)
            if ledger.received.nbytes > _ROW_STORE_BYTES:
                # a new ledger: the partitions send their candidates' rows again
                ledger = RowLedger()
                ledger.received.add(ws_ids, ws_rows)  # the carried-over working set's, which they need not report
            sent = ledger.to_share(ws_ids[changed])  # the rows the partitions do not hold
            # grow the working set while the free variables outnumber half of it (few, long rounds
            # beat many short ones when the sub-problems must overlap), up to _MAX_WORKING_SET
            size = max(size, min(_MAX_WORKING_SET, 2 * int(stats["free_count"].sum())))
            request = dict(base, reset=False, n_select=_per_share(size), ws_ids=ws_ids[changed],
                           ws_new=sent, ws_rows=take_rows(changed_rows, sent), ws_y=y_ws[changed],
                           ws_alpha_old=alpha_old[changed], ws_alpha=alpha_ws[changed])
            if shrinking:
                # this round's extremes of s over I_up and I_low, over both classes (core.partition.dual)
                request.update(shrink_below=float(stats["low_min"].min()), shrink_above=float(stats["up_max"].max()))
    if sum(a["shrunk"] for a in answers):
        # stopped (max_rounds, or a stall) with examples shrunk: restore them for exact statistics and objective
        answers = run_round(dict(base, **_RESTORE, n_select=1))
        stats, violation, objective = _summary(answers, problem, support.sums()[0])
        converged = bool(violation < tol)  # the loop may have ended on the round that found the active ones optimal
    budget_tight = _is_tight(problem.sum_bound, support.sums()[0])
    return DualSolution(support, _rho(stats, budget_tight), objective, rounds, violation, converged)


def _summary(answers, problem, sum_alpha):
    """A round's reduced statistics, the violation (over the class pairs the budget allows, at sum a =
    ``sum_alpha``) and f(a)."""
    stats = {k: _reduce(answers, k) for k in _STAT_KEYS}
    violation = _violation(stats["up_max"], stats["low_min"], _is_tight(problem.sum_bound, sum_alpha))
    return stats, violation, 0.5 * sum(a["objective_part"] for a in answers)


def _rebuild_request(request, support, engine):
    """The request that rebuilds a lost partition from the driver's support set (which already
    holds the working-set changes ``request`` carries)."""
    ids, rows, y, alpha = support.arrays(engine.n_features)
    return dict(request, **_NO_UPDATE, reset=True, sv_ids=ids, sv_rows=rows, sv_y=y, sv_alpha=alpha)


def _is_tight(bound, total):
    return bool(np.isfinite(bound)) and bound - total <= _TIGHT * max(1.0, bound)


def _reduce(answers, key):
    values = np.stack([a[key] for a in answers])
    if key in ("up_max", "upper_max"):
        return values.max(axis=0)
    if key in ("low_min", "zero_min"):
        return values.min(axis=0)
    return values.sum(axis=0)
