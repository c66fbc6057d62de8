"""SpSVM-2: a sparse kernel SVM grown one basis function at a time (Keerthi, Chapelle & DeCoste,
"Building support vector machines with reduced classifier complexity", JMLR 2006).

    min_beta  f(beta) = lambda/2 beta^T K'_JJ beta + 1/2 sum_i w_i max(0, 1 - y_i o_i)^2,
              o_i = K'_iJ beta                                                       (eq. 4)

over a basis J of training examples that grows greedily from empty to ``max_basis``.

Each stage (one new basis function):
  1. kappa candidates are drawn from a seeded stream: the draw of stage d depends only on the
     seed, d and the rows in J (section 4), so fits with other lambda or gamma see the same
     candidates, and the draw is by the rows' content (``candidate_draw``), so any row order and
     partitioning of the same rows sees them too.
  2. Method 2 (section 3.2) scores each candidate j by the exact minimum over b of eq. 7 with
     beta_J fixed, h_j(b) = f(beta_J, b): a piecewise quadratic in b, minimised by safeguarded
     Newton steps whose rounds cost O(n kappa) on the partitions.  Method 1 (section 3.1,
     ``selection="method1"``) instead adds each candidate, runs the Newton method below to the
     optimum and takes it out again: kappa full solves per stage, for small data.
  3. The best candidate joins J with its b; the partitions append its kernel column (section 3.3's
     cache of the basis columns).  P = lambda K'_JJ + K'_JI W K'_JI^T gains its new rows and columns
     only at the next re-optimisation, all those of the stages since at once: the partitions' part
     K'_JI W K'_Ik for the k new columns is one (d x n) (n x k) matrix product, which reads the cached
     columns once per re-optimisation instead of once per stage (that matrix-vector product per
     stage was a fifth of a fit's time at d = 1,000), with the round's residual sum as one more column
     (``core.kernels.dense_products``); the driver appends them to P's Cholesky factor
     as one block (``CholeskyFactor.extend``).  Between re-optimisations nothing needs P.
     Method 2's stages chain their rounds: a first score round also fetches the next draw's candidates,
     kappa + 1 of them before the best is known (the next draw's kappa are those without the row that
     joins the basis), and the round that adds the best also runs the next stage's first score round
     when no re-optimisation comes between: two rounds a stage whose searches land from their second
     evaluation (one, where they land from b = 0).
  4. On the stages of section 6.1's schedule, |J| = floor(2^(p/4)) for some integer p
     (``retrain="schedule"``, the default), or on every stage (``retrain="always"``), and always
     on the last one, beta is re-optimised by Newton's method (section 2.1, eq. 6):
         beta <- beta + t delta,  delta = -P^-1 g,  g = lambda K'_JJ beta - K'_JI W (y_I - o_I),
     t from an exact line search on the piecewise quadratic f(beta + t delta).  When the active
     set I = {i : y_i o_i < 1} changes, P changes by +-w_i k_i k_i^T for the examples that
     entered or left: rank-one updates and downdates of the factor when they are few (at most
     4 + d / 12, where they cost less than a refactorisation), else a refactorisation of the
     updated P.  The driver keeps P's upper triangle alone: the rows' outer products are added
     to it in place by BLAS (``core.blas``), a partition's dense change to the whole block.
     Newton ends exactly when a full step leaves I unchanged (finite termination: the loss is
     quadratic on each I).  An iteration reads the cached columns once, for the line search's
     z = K'_IJ delta: the gradient's sum K'_JI W (y_I - o_I) at beta + t delta is the one before less
     t (P - lambda K'_JJ) delta (over the I that P holds), plus the terms of the examples that
     entered I less those that left it, which the partitions send beside their rows.
The fit stops at ``max_basis`` functions or, at a re-optimisation, when f fell by less than ``tol``
relative per basis function added since the previous one.

Bias: the 1 + K trick.  The expansion is in K' = 1 + K, the kernel of the feature map
(1, phi(x)), so the bias sum_j beta_j is an ordinary coordinate of w and is regularised with it
(lambda/2 b^2 extra, negligible for the lambda that generalise well).  We use it, as the paper
does in all its experiments, because it keeps the whole method one problem in beta: P stays
positive definite (an unregularised bias adds a row and column to P without the lambda K_JJ
term, singular while I is empty or one-sided), the Method 2 score stays a one-dimensional
problem (an unregularised bias would have to be re-fitted with every candidate), and the
partitions need no second kind of column.

Cost per stage: the partitions compute kappa + 1 kernel columns and O(n kappa) sums per round,
and at a re-optimisation O(n d k) for the k columns of P added since the previous one; the
driver does O(d^2 + kappa d) work per stage (factor appends, solves, rank-one changes, the
candidates' kernel rows against J) and holds O(d_max^2) floats.

The model's ``metadata["path"]`` records, for every basis size d = 1..|J|, the objective, whether
beta was re-optimised at that stage, the elapsed seconds and (``path_coef``) beta at that stage,
so that ``truncate(model, d)`` gives the stage-d model without retraining and d can be chosen by
validation (section 4).  When the engine holds validation rows, the rounds that move the model also
return its validation error and loss, recorded per stage in ``metadata["validation"]``
(``core.selection``), and ``select`` keeps the end of the path, the best stage or the smallest one
within ``tolerance`` of the best: the model returned is then ``truncate(model, d)`` of that stage.
"""

import logging
import time

import numpy as np

from core.blas import add_gram, symmetric_times
from core.cholesky import CholeskyFactor
from core.kernels import KernelSpec, kernel_diag
from core.model import KernelExpansion, derived_metadata
from core.progress import Progress
from core.partition.spsvm import (BIAS_TERM, SCORE_SUMS, basis_kernel, spsvm_add_basis, spsvm_gradient, spsvm_line,
                                  spsvm_restore, spsvm_score, spsvm_start)
from core.rows import as_rows, n_rows, stack_rows, take_rows
from core.selection import check_selection, summed, validation_record
from core.threads import one_blas_thread
from core.validation import check_integer, check_positive

log = logging.getLogger("spark_bsvm")

SELECTIONS = ("method2", "method1")
RETRAINS = ("schedule", "always")
# at most 4 + d / 12 changes of the active set go through rank-one updates of P's factor, more through a
# refactorisation: one O(d^2) update (``CholeskyFactor.update``, its rotations vectorised) against a LAPACK
# refactorisation on one BLAS thread (O(d^3 / 3), faster per flop as d grows) broke even at 5.3, 9.3, 19.8, 40.9,
# 65.2, 88.2 and 103.9 changes for d = 50, 100, 200, 400, 700, 1,000 and 2,000 (an AMD EPYC, 2026-11-29; with
# scalar rotations, at 3.5-26.8 changes, hence the earlier limit 6 + d / 64; ``bench/HISTORY.md``)
_RANK_ONE_BASE, _RANK_ONE_SHARE = 4, 12
_MAX_ONE_D_ROUNDS = 50  # safeguarded Newton rounds of a line search or candidate score
_NEAR_ZERO = 16 * np.finfo(np.float64).eps  # a kink within this share of t of 0 is taken to be at 0
_MAX_FAILED_DRAWS = 100  # consecutive draws with only candidates in the basis' span before giving up
# a candidate c is (numerically) in the span of the basis when lambda times its squared distance from
# that span in the feature space of K', s_c = K'_cc - K'_cJ K'_JJ^-1 K'_Jc, is below this share of its
# diagonal of P: P's Schur complement for c is at least lambda s_c, so P stays safely factorable
# (cholesky.PIVOT_RTOL is 1e-12); duplicates and near-duplicates of basis rows have s_c ~ 0
_SPAN_RTOL = 1e-10


def retrain_sizes(max_basis):
    """The basis sizes floor(2^(p/4)), p = 1, 2, ..., up to ``max_basis`` (section 6.1), sorted."""
    sizes, p = set(), 1
    while int(np.floor(2.0 ** (p / 4.0))) <= max_basis:
        sizes.add(int(np.floor(2.0 ** (p / 4.0))))
        p += 1
    return sorted(sizes)


def candidate_draw(draw, kappa, seed, taken):
    """The request part that fetches the candidates of draw number ``draw`` (None: fetch none).

    They are the kappa distinct rows outside ``taken`` (the ``core.sampling.row_keys`` under ``seed`` of
    the basis' rows: any iterable, sent as a sorted uint64 array; ``fit_spsvm`` keeps them as one) with
    the smallest keys of that draw (``core.sampling.draw_keys``): drawn without replacement, by
    content, so the same rows for any row order or partitioning.  Fewer than kappa only when fewer
    distinct rows are left, none when all are taken.
    """
    if draw is None:
        return {"draw": -1, "seed": 0, "kappa": 0, "taken": np.zeros(0, np.uint64)}
    if not (isinstance(taken, np.ndarray) and taken.dtype == np.uint64 and np.all(taken[1:] > taken[:-1])):
        taken = np.unique(np.fromiter(taken, np.uint64, len(taken)))
    return {"draw": int(draw), "seed": int(seed), "kappa": int(kappa), "taken": taken}


class _OneDimNewton:
    """Minimises k convex, piecewise-quadratic, C^1 functions of one variable side by side.

    Newton steps safeguarded by bisection on a bracket of the minimiser (the derivative is
    nondecreasing).  Each evaluation at x also gives the piece around x, the interval on which the
    function is the quadratic whose derivatives the partitions report (no kink strictly inside; see
    ``core.partition.spsvm._directional_kernel``).  A Newton step that stays in that piece lands on the
    exact minimiser (the quadratic's minimum, where the derivative, continuous, is 0), so the search
    ends there without evaluating it again: usually after 1-2 evaluations.
    """

    def __init__(self, x):
        self.x = np.array(x, dtype=np.float64)
        self.lo = np.full(self.x.shape, -np.inf)
        self.hi = np.full(self.x.shape, np.inf)
        self.done = np.zeros(self.x.shape, bool)

    def step(self, slope, curvature, lower, upper):
        """Take the derivatives at ``x`` and its piece [``lower``, ``upper``]; move the unfinished ones to
        their next point.  Returns which moved to an exact minimiser (``landed``: done, at their new x)."""
        self.done |= slope == 0.0
        self.lo = np.where(slope < 0, self.x, self.lo)
        self.hi = np.where(slope > 0, self.x, self.hi)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            newton = self.x - slope / curvature
            inside = (newton > self.lo) & (newton < self.hi)
            nxt = np.where(inside, newton, 0.5 * (self.lo + self.hi))
        nxt = np.where(np.isfinite(nxt), nxt, self.x)  # no bracket and no curvature: stay
        landed = ~self.done & inside & (lower <= newton) & (newton <= upper)
        self.x = np.where(self.done, self.x, nxt)
        self.done |= landed
        return landed


def _piece(answers):
    """The piece around the point the partitions evaluated: their kinks' nearest bounds, combined."""
    return (np.max([a["lower"] for a in answers], axis=0), np.min([a["upper"] for a in answers], axis=0))


class _Fit:
    """The driver's side of one fit: basis, coefficients, K'_JJ, P and its factor."""

    def __init__(self, engine, kernel, lam, capacity, newton_tol, max_newton):
        self.engine, self.kernel, self.lam = engine, kernel, lam
        self.spec = kernel.to_dict()
        self.newton_tol, self.max_newton = newton_tol, max_newton
        self.beta = np.zeros(capacity)
        self.penalty = 0.0  # beta^T K'_JJ beta
        self.K = np.zeros((capacity, capacity))  # K'_JJ
        self.P = np.zeros((capacity, capacity))  # P in its top-left d x d block: the upper triangle (``core.blas``)
        self.factor = CholeskyFactor(capacity)
        self.span = CholeskyFactor(capacity)  # of K'_JJ, for the candidates' distance from span(J)
        self.rows = None  # basis rows, a block
        self.ids = []
        self.d = 0
        self.capacity = capacity
        self.factor_beta = np.zeros(0)  # beta when the factor's active set was taken
        self.scored = (np.zeros((0, 0)), {})  # the last score's K'_cJ and the R^-T K'_Jc it solved for
        self.newton_iterations = 0
        self.rank_one_changes = 0
        self.refactorisations = 0
        self.validation = (np.nan, np.nan)  # (error, loss) on the validation rows of the partitions' model
        self.first_scores = None  # the answers of the next score's first round, when ``add`` ran it
        self.prefetched = None  # the candidates the last score's first round fetched: (row keys, ids, rows)
        request = {"capacity": capacity}
        answers = engine.run(spsvm_start, request, rebuild=lambda: request)
        self.loss = sum(a["loss"] for a in answers)

    @property
    def objective(self):
        """f(beta) of eq. 4, in O(1): ``penalty`` follows beta (``add``, ``newton``)."""
        return 0.5 * self.lam * self.penalty + self.loss

    # ---- adding a basis function ------------------------------------------------------------

    def add(self, row, ident, coef, next_draw, scored=None, checkpoint=False, score_rows=None):
        """Append the basis function of ``row`` with coefficient ``coef``; fetch the candidates of
        ``next_draw`` (a ``candidate_draw``): their row keys, ids and rows.

        ``scored``: the row's index among the candidates of the last ``score``, whose kernel values
        the partitions and the driver then reuse (None: the row was not scored).  ``score_rows``: the
        next stage's candidates, whose first score round the partitions then run in the same round
        (at b = 0, after the update): ``self.first_scores`` keeps its answers for ``score``.
        """
        answers = self._run(spsvm_add_basis, dict(next_draw, kernel=self.spec, row=row,
                                                    scored=-1 if scored is None else int(scored),
                                                    coef=float(coef), checkpoint=checkpoint, score_rows=score_rows))
        if score_rows is not None:
            self.first_scores = [{name: a["score_" + name] for name in SCORE_SUMS} for a in answers]
        d = self.d
        scored_rows, halves = self.scored
        if scored in halves:  # K'_cJ and R^-T K'_Jc from the span test of ``score``
            k_new, half = scored_rows[scored], halves[scored]
        else:
            k_new, half = (basis_kernel(self.rows, row, self.kernel)[:, 0] if d else np.zeros(0)), None
        k_diag = float(kernel_diag(row, self.kernel)[0]) + BIAS_TERM
        self.K[:d, d] = self.K[d, :d] = k_new
        self.K[d, d] = k_diag
        if not self.span.append(k_new, k_diag, half=half):
            self._singular(d + 1)
        # [beta; b]^T K' [beta; b] = beta^T K' beta + 2 b K'_cJ beta + b^2 K'_cc, in O(d) per stage (the O(d^2)
        # product each stage was 3% of a fit to d = 1,000; it is taken anew at each re-optimisation)
        self.penalty += coef * (2.0 * float(k_new @ self.beta[:d]) + coef * k_diag)
        self.beta[d] = coef
        self.rows = row if self.rows is None else stack_rows([self.rows, row])
        self.ids.append(int(ident))
        self.d = d + 1
        self.loss = sum(a["loss"] for a in answers)
        self.validation = summed(answers)
        return self._fetched(answers, next_draw["kappa"])

    def fetch(self, draw):
        """Row keys, ids and rows of the candidates of ``draw`` (a ``candidate_draw``; no basis change)."""
        answers = self._run(spsvm_add_basis, dict(draw, kernel=self.spec, row=None,
                                                    scored=-1, coef=0.0, checkpoint=False, score_rows=None))
        return self._fetched(answers, draw["kappa"])

    def _singular(self, d):
        raise ValueError(
            f"P = lambda K_JJ + K_JI K_JI^T is numerically singular with {d} basis functions "
            f"(lambda={self.lam}): the new basis function is almost a combination of the others. "
            "Raise lam, lower max_basis, remove near-duplicate rows, or use a kernel of higher rank "
            "(a larger rbf gamma; a linear kernel spans at most n_features + 1 functions)")

    def _run(self, function, request, direction=None, **resend):
        """One round; a lost task gets ``request`` with ``resend`` and the model to rebuild from."""
        return self.engine.run(function, request, rebuild=lambda: dict(request, **resend, **self._model(direction),
                                                                   rebuild=True))

    def _model(self, direction=None):
        """What the partitions' state is a function of (see ``core.partition.spsvm._rebuilt``)."""
        return {"kernel": self.spec, "model_capacity": self.capacity, "model_rows": self.rows,
                "model_beta": self.beta[:self.d].copy(), "model_factor_beta": self.factor_beta,
                "model_direction": direction}

    @staticmethod
    def _fetched(answers, kappa):
        """The draw's candidates from the partitions' answers: the first kappa distinct rows in draw-key
        order, once each (an identical row held by two partitions: the first partition's id)."""
        drawn = np.concatenate([a["fetched_draw_keys"] for a in answers])
        keys = np.concatenate([a["fetched_row_keys"] for a in answers])
        ids = np.concatenate([a["fetched_ids"] for a in answers])
        rows = stack_rows([a["fetched_rows"] for a in answers])
        _, first = np.unique(drawn, return_index=True)  # sorted by draw key
        order = first[:kappa]
        return keys[order], ids[order], take_rows(rows, order)

    # ---- Method 2 scores ----------------------------------------------------------------

    def score(self, rows, check_all=False, prefetch=None):
        """(decrease of f, best b) of each candidate by eq. 7's 1-D minimisation; -inf for candidates in
        the span of the basis (duplicates, near-duplicates, combinations; see ``_SPAN_RTOL``).

        The span test costs O(d^2) per candidate, so by default it runs only from the best decrease
        down until a candidate passes it: the argmax is the same as with every candidate tested, and
        the candidates below it keep their decrease untested.  ``check_all`` tests every candidate.
        The first round's answers are ``self.first_scores`` when ``add`` ran that round (it is then
        cleared); else the first round also fetches the candidates of ``prefetch`` (a
        ``candidate_draw``, or None), kept in ``self.prefetched``.
        """
        d, k = self.d, n_rows(rows)
        k_cand = basis_kernel(rows, self.rows, self.kernel) if d else np.zeros((k, 0))
        k_diag = kernel_diag(rows, self.kernel) + BIAS_TERM
        reg_slope = self.lam * (k_cand @ self.beta[:d])  # lambda K'_jJ beta
        search = _OneDimNewton(np.zeros(k))
        send, answers, self.first_scores = rows, self.first_scores, None
        for _ in range(_MAX_ONE_D_ROUNDS):
            if answers is None:
                fetch = prefetch if send is not None and prefetch is not None else candidate_draw(None, 0, 0, ())
                answers = self._run(spsvm_score, dict(fetch, kernel=self.spec, rows=send, coef=search.x), rows=rows)
                if fetch["kappa"]:
                    self.prefetched = self._fetched(answers, fetch["kappa"])
            send = None
            loss = sum(a["loss"] for a in answers)
            loss_slope, loss_curvature = sum(a["slope"] for a in answers), sum(a["curvature"] for a in answers)
            slope = reg_slope + self.lam * k_diag * search.x + loss_slope
            curvature = self.lam * k_diag + loss_curvature
            evaluated = search.x.copy()
            landed = search.step(slope, curvature, *_piece(answers))
            # where a candidate landed, its b and its loss there, exact: the quadratic of its piece
            moved = np.where(landed, search.x - evaluated, 0.0)
            loss = loss + moved * loss_slope + 0.5 * moved * moved * loss_curvature
            b = np.where(landed, search.x, evaluated)
            if search.done.all():
                break
            answers = None
        decrease = self.loss - (loss + b * reg_slope + 0.5 * self.lam * k_diag * b * b)
        halves = {}
        self.scored = (k_cand, halves)
        if d:
            for c in (range(k) if check_all else np.argsort(-decrease, kind="stable")):
                half = halves[c] = self.span.half_solve(k_cand[c])
                if self.lam * (k_diag[c] - half @ half) <= _SPAN_RTOL * curvature[c]:  # s_c, the distance
                    decrease[c] = -np.inf
                elif not check_all:
                    break
        return decrease, b

    # ---- Newton's method on the current basis ------------------------------------------------

    def newton(self):
        """Minimise f over beta_J exactly (section 2.1); leaves o and the factor's I at the optimum.

        beta takes each step only once the partitions have (in the next gradient round), so that
        beta always describes their outputs: a lost task rebuilds from it.
        """
        step, delta, converged = 0.0, None, False
        previous = np.inf
        d = self.d
        residual_sum, moved = None, None  # the last round's, and by how much it moves over I along the step
        for iteration in range(self.max_newton + 1):
            derive = residual_sum is not None
            answers = self._run(spsvm_gradient, {"step": step, "gram_from": self.factor.size, "derive": derive},
                                direction=delta)
            if derive:
                # sum_{i in I} w_i (y_i - o_i) K'_iJ at o + t z, z = K'_IJ delta: the last sum less
                # t K'_JI W K'_IJ delta = t (P - lambda K'_JJ) delta, with P as it was over I; the partitions add the
                # examples that entered or left I (an O(n d) pass over the cached columns less per Newton iteration)
                residual_sum = residual_sum - step * moved + sum(a["residual_change"] for a in answers)
            else:
                residual_sum = sum(a["residual_sum"] for a in answers)
            if delta is not None:
                self.beta[:d] += step * delta
            k_beta = self.K[:d, :d] @ self.beta[:d]
            self.penalty = float(self.beta[:d] @ k_beta)
            self._extend_factor(answers)
            self.factor_beta = self.beta[:d].copy()
            self._change_active_set(answers)
            self.loss = sum(a["loss"] for a in answers)
            self.validation = summed(answers)
            if converged:
                return
            reg = self.lam * k_beta
            g = reg - residual_sum
            scale = np.abs(reg).max() + np.abs(residual_sum).max() + np.finfo(float).tiny
            f = self.objective
            if np.abs(g).max() <= self.newton_tol * scale or f >= previous:
                return
            if iteration == self.max_newton:
                log.warning("SpSVM: Newton stopped after %d iterations at |J| = %d without an exact optimum",
                            self.max_newton, d)
                return
            previous = f
            delta = -self.factor.solve(g)
            k_delta = self.K[:d, :d] @ delta
            p_delta = symmetric_times(self.P, d, delta)
            moved = p_delta - self.lam * k_delta
            step, converged = self._line_search(delta, g, k_delta, p_delta)
            self.newton_iterations += 1

    def _line_search(self, delta, g, k_delta, p_delta):
        """Exact minimiser t of f(beta + t delta) (``k_delta`` = K'_JJ delta, ``p_delta`` = P delta); also whether
        t = the first (Newton) point was exact."""
        reg_slope0 = self.lam * (self.beta[:self.d] @ k_delta)
        reg_curv = self.lam * (delta @ k_delta)
        search = _OneDimNewton([0.0])
        # to the Newton point of P's quadratic, t ~ 1 (the piece around 0 is not known: [0, 0])
        search.step(np.array([g @ delta]), np.array([delta @ p_delta]), 0.0, 0.0)
        send = delta
        for rounds in range(1, _MAX_ONE_D_ROUNDS + 1):
            t = float(search.x[0])
            answers = self._run(spsvm_line, {"direction": send, "step": t}, direction=delta)
            send = None
            lower, upper = _piece(answers)
            # no kink in [0, t] (lower, t - |r_i / (y_i z_i)|, is off by t's rounding): P's quadratic holds there,
            # t is exact
            if rounds == 1 and 0.0 < t and lower < -_NEAR_ZERO * t:
                return t, True
            slope = reg_slope0 + t * reg_curv + sum(a["slope"] for a in answers)
            curvature = reg_curv + sum(a["curvature"] for a in answers)
            search.step(np.array([slope]), np.array([curvature]), lower, upper)
            if search.done[0]:
                return float(search.x[0]), False
        return float(search.x[0]), False

    def _extend_factor(self, answers):
        """Append the columns of P for the basis functions added since the factor's last re-optimisation
        (over the factor's active set I, which no stage in between changed)."""
        start, d = self.factor.size, self.d
        if start == d:
            return
        block = sum(a["gram_block"] for a in answers)  # K'_JI W K'_Ik, d x (d - start)
        self.P[:d, start:d] = self.lam * self.K[:d, start:d] + block  # of which the upper triangle is P's
        if not self.factor.extend(self.P[:start, start:d], self.P[start:d, start:d]):
            self._singular(d)

    def _change_active_set(self, answers):
        """Bring P and its factor from the old active set I to the new one (see the module doc)."""
        d = self.d
        dense = [a["gram_change"] for a in answers if a["gram_change"] is not None]
        entering = np.concatenate([a["entering"] for a in answers]).reshape(-1, d)
        leaving = np.concatenate([a["leaving"] for a in answers]).reshape(-1, d)
        if not (dense or len(entering) or len(leaving)):
            return
        P = self.P[:d, :d]
        for change in dense:
            P += change
        add_gram(self.P, d, entering)  # the rows' outer products, in place on P's upper triangle
        add_gram(self.P, d, leaving, -1.0)
        if not dense and len(entering) + len(leaving) <= _RANK_ONE_BASE + d / _RANK_ONE_SHARE:
            for r in entering:
                self.factor.update(r)
            if all(self.factor.downdate(r) for r in leaving):
                self.rank_one_changes += len(entering) + len(leaving)
                return
        self.refactorisations += 1
        if not self.factor.refactor(P):
            raise ValueError(f"P = lambda K_JJ + K_JI K_JI^T is not numerically positive definite with {d} "
                             f"basis functions (lambda={self.lam}): raise lam or lower max_basis")

    # ---- Method 1 trials --------------------------------------------------------------------

    def trial_objective(self, row, scored, coef):
        """f after adding ``row`` (candidate ``scored``, starting from ``coef``) and re-optimising; the fit is
        left unchanged."""
        size = self.factor.size
        saved = (self.beta.copy(), self.penalty, self.factor.R[:size, :size].copy(), self.P[:size, :size].copy(),
                 self.rows, list(self.ids), self.d, self.loss, self.factor_beta, self.validation)
        try:
            self.add(row, -1, coef, candidate_draw(None, 0, 0, ()), scored=scored, checkpoint=True)
            self.newton()
            return self.objective
        finally:
            (self.beta, self.penalty, R, P, self.rows, self.ids, self.d, self.loss, self.factor_beta,
             self.validation) = saved
            self.factor.R[:size, :size] = R
            self.factor.size = size
            self.span.size = self.d  # an append leaves the top-left block of R as it was
            self.P[:size, :size] = P
            request = dict(self._model(), rebuild=True)
            self.engine.run(spsvm_restore, request, rebuild=lambda: request)


@one_blas_thread
def fit_spsvm(engine, *, max_basis, lam, kernel, kappa=10, seed=0, selection="method2", retrain="schedule",
              tol=1e-6, newton_tol=1e-10, max_newton=50, keep_path_coef=True, initial_basis=None, select="end",
              tolerance=0.0):
    """Train SpSVM-2 on ``engine``: a kernel expansion over at most ``max_basis`` training examples.

    ``lam``: lambda of eq. 4 (> 0); ``kernel``: a KernelSpec (the model expands in 1 + kernel, see
    the module doc); ``kappa``: candidates scored per stage; ``seed``: the candidate stream
    (the same seed gives the same candidates at each stage for any lam and kernel);
    ``selection``: "method2" (the paper's SpSVM-2) or "method1" (full Newton per candidate: kappa
    times slower, for small data); ``retrain``: "schedule" (section 6.1) or "always";
    ``tol``: stop (at a re-optimisation) when the objective fell by less than this share of it per
    basis function since the previous re-optimisation (0: never);
    ``newton_tol``: Newton also stops when max|g| falls below this share of its two terms;
    ``max_newton``: Newton iterations per retraining; ``keep_path_coef``: store beta of every
    stage in the metadata (d_max^2 / 2 floats) for ``truncate``; ``initial_basis``: rows (a
    block, e.g. an earlier model's ``support_vectors``) that are offered first, one at a time and
    in order, before any random candidate: each joins with its Method 2 coefficient unless it is in
    the span of those before it (a warm start for retraining on new data; basis ids -1);
    ``select``, ``tolerance``: which stage the model returned is (``core.selection``: 'end', 'best' or
    'withinTolerance' of the validation error; the last two need validation rows and ``keep_path_coef``).
    """
    if not isinstance(kernel, KernelSpec):
        raise ValueError("kernel must be a KernelSpec, e.g. KernelSpec('rbf', gamma=1.0)")
    kernel = kernel.for_data(engine)
    check_positive(lam=lam)
    max_basis, kappa = check_integer(1, max_basis=max_basis, kappa=kappa)
    if selection not in SELECTIONS:
        raise ValueError(f"selection must be one of {SELECTIONS}, got {selection!r}")
    if retrain not in RETRAINS:
        raise ValueError(f"retrain must be one of {RETRAINS}, got {retrain!r}")
    if not tol >= 0 or not newton_tol >= 0:
        raise ValueError(f"tol and newton_tol must be >= 0, got {tol!r} and {newton_tol!r}")
    check_selection(select, tolerance, engine.n_validation)
    if select != "end" and not keep_path_coef:
        raise ValueError(f"select={select!r} keeps a stage of the path, which needs keep_path_coef=True")
    n = engine.n_examples
    warm = [] if initial_basis is None else _rows_of(initial_basis, engine.n_features)
    max_basis, kappa = min(int(max_basis), n + len(warm)), int(kappa)
    schedule = set(range(1, max_basis + 1)) if retrain == "always" else set(retrain_sizes(max_basis))
    fit = _Fit(engine, kernel, float(lam), max_basis, newton_tol, max_newton)
    start = time.perf_counter()
    path = {"size": [], "objective": [], "retrained": [], "seconds": [], "coef": [], "validation_error": [],
            "validation_loss": []}
    taken, draw, failures = np.zeros(0, np.uint64), 0, 0  # the basis' row keys, sorted
    checked = (0, fit.objective)  # basis size and objective at the last re-optimisation
    if not warm:
        keys, ids, rows = fit.fetch(candidate_draw(draw, kappa, seed, taken))
    stop_reason = "max_basis"
    progress = Progress("SpSVM-2", max_basis, "basis functions")
    while fit.d < max_basis:
        warming = bool(warm)
        if warming:  # the warm start's rows first, each a lone candidate
            keys, ids, rows = np.zeros(1, np.uint64), np.array([-1], np.int64), warm.pop(0)
        # Method 2 chains its stages' rounds (the module doc, step 3): a first score round fetches the next draw
        chained = selection == "method2" and not warming and fit.d + 1 < max_basis
        prefetch = candidate_draw(draw + 1, kappa + 1, seed, taken) if chained else None
        if len(keys):
            decrease, coef = fit.score(rows, check_all=selection == "method1", prefetch=prefetch)
        else:
            decrease, coef = np.zeros(0), np.zeros(0)
        if selection == "method1":
            before = fit.objective
            decrease = np.array([before - fit.trial_objective(take_rows(rows, [c]), c, coef[c])
                                 if np.isfinite(decrease[c]) else -np.inf for c in range(len(keys))])
        if warming and not np.isfinite(decrease[0]):  # in the span of the rows before it: skip
            if not warm:
                keys, ids, rows = fit.fetch(candidate_draw(draw, kappa, seed, taken))
            continue
        draw += 0 if warming else 1
        if not decrease.size or not np.isfinite(decrease.max()):
            failures += 1
            if not decrease.size or failures >= _MAX_FAILED_DRAWS:
                stop_reason = "no candidates left" if not decrease.size else "only candidates in the basis' span"
                break
            keys, ids, rows = (_without(fit.prefetched, None, kappa) if prefetch is not None
                               else fit.fetch(candidate_draw(draw, kappa, seed, taken)))
            continue
        failures = 0
        best = int(np.argmax(decrease))
        if not warming:
            taken = np.insert(taken, np.searchsorted(taken, keys[best]), keys[best])
        last = fit.d + 1 == max_basis
        retrained = fit.d + 1 in schedule or last
        chosen = take_rows(rows, [best])
        chosen_id, chosen_coef = ids[best], coef[best]
        if prefetch is not None and not last:
            following = _without(fit.prefetched, keys[best], kappa)
            if retrained or not len(following[0]):  # a re-optimisation moves o first: its score round comes after
                fit.add(chosen, chosen_id, chosen_coef, candidate_draw(None, 0, 0, ()), scored=best)
            else:
                fetch = candidate_draw(draw + 1, kappa + 1, seed, taken)  # the draw after the following
                fit.prefetched = fit.add(chosen, chosen_id, chosen_coef, fetch, scored=best, score_rows=following[2])
            keys, ids, rows = following
        else:
            next_draw = candidate_draw(None if last or warm else draw, kappa, seed, taken)
            keys, ids, rows = fit.add(chosen, chosen_id, chosen_coef, next_draw, scored=best)
        if retrained:
            fit.newton()
        after = fit.objective
        stop = False
        if retrained:  # relative decrease per basis function since the last re-optimisation
            stop = tol > 0 and checked[1] - after < tol * abs(after) * (fit.d - checked[0]) and not last
            checked = (fit.d, after)
        _record(path, fit, after, retrained, start, keep_path_coef)
        progress.update(fit.d, f"objective {after:.8g}")
        if stop:
            stop_reason = "tol"
            break
    if path["retrained"] and not path["retrained"][-1]:  # stopped for want of candidates
        fit.newton()  # the model returned is always optimal for its basis
        _record(path, fit, fit.objective, True, start, keep_path_coef, replace_last=True)
    beta = fit.beta[:fit.d].copy()
    params = {"max_basis": max_basis, "lam": float(lam), "kappa": kappa, "seed": seed, "selection": selection,
              "retrain": retrain, "tol": tol, "newton_tol": newton_tol, "kernel": kernel.to_dict(), "select": select,
              "tolerance": tolerance}
    meta = {"method": "spsvm", "params": params, "objective": fit.objective, "n_basis": fit.d,
            "stop_reason": stop_reason, "newton_iterations": fit.newton_iterations,
            "rank_one_changes": fit.rank_one_changes, "refactorisations": fit.refactorisations,
            "n_train": n, "path": path, "bias_trick": "1+K"}
    validation = path.pop("validation_error"), path.pop("validation_loss")
    if engine.n_validation and path["size"]:
        meta["validation"] = validation_record(path["size"], *validation, select, tolerance)
    rows = fit.rows if fit.rows is not None else np.zeros((0, engine.n_features))
    model = KernelExpansion(rows, beta, float(beta.sum()) * BIAS_TERM, kernel, list(engine.classes),
                            engine.n_features, meta, np.array(fit.ids, np.int64))
    kept = meta.get("validation", {}).get("kept_size", fit.d)
    return model if kept == fit.d else truncate(model, kept)


def _without(candidates, key, kappa):
    """The first ``kappa`` of ``candidates`` (row keys, ids and rows, in draw order) whose row key is not ``key``
    (None: any)."""
    keys, ids, rows = candidates
    keep = np.flatnonzero(keys != key)[:kappa] if key is not None else np.arange(min(kappa, len(keys)))
    return keys[keep], ids[keep], take_rows(rows, keep)


def _rows_of(block, n_features):
    """The rows of ``block`` as a list of one-row blocks (dense float64 or CSR), checked against n_features."""
    block = as_rows(block, n_features=n_features)
    return [take_rows(block, [k]) for k in range(n_rows(block))]


def _record(path, fit, objective, retrained, start, keep_coef, replace_last=False):
    """Append (or replace the last) stage of the path: size, ``objective``, retrained, seconds, the validation
    error and loss (NaN without validation rows, and dropped from the path at the end), beta."""
    if replace_last:
        for key in ("size", "objective", "retrained", "seconds", "validation_error", "validation_loss"):
            path[key].pop()
        del path["coef"][len(path["coef"]) - (fit.d if keep_coef else 0):]
    path["size"].append(fit.d)
    path["objective"].append(float(objective))
    path["retrained"].append(bool(retrained))
    path["seconds"].append(time.perf_counter() - start)
    path["validation_error"].append(float(fit.validation[0]))
    path["validation_loss"].append(float(fit.validation[1]))
    if keep_coef:
        path["coef"].extend(fit.beta[:fit.d].tolist())


def truncate(model, d):
    """The stage-d model of a SpSVM fit: its first d basis functions with beta as it was at stage d.

    Needs ``keep_path_coef=True`` at training.  beta at a stage that was not retrained (see
    ``metadata["path"]["retrained"]``) is the greedy one, not re-optimised.  The model's calibration is not
    kept (``core.model.derived_metadata``).
    """
    path = model.metadata.get("path") if isinstance(model.metadata, dict) else None
    if not path or not path.get("coef"):
        if "pruned_to" in model.metadata:
            raise ValueError("a pruned model has no path (pruning drops it): truncate the model before pruning")
        raise ValueError("this model has no stored path coefficients: train it with fit_spsvm(..., "
                         "keep_path_coef=True)")
    if int(d) != d or not 1 <= d <= model.n_support:
        raise ValueError(f"d must be an integer between 1 and the model's {model.n_support} basis functions, "
                         f"got {d!r}")
    d = int(d)
    coef = np.array(path["coef"][d * (d - 1) // 2: d * (d + 1) // 2])
    keep = np.arange(d)
    meta = derived_metadata(model.metadata, truncated_to=d, objective=path["objective"][d - 1], n_basis=d)
    ids = None if model.support_ids is None else model.support_ids[:d]
    return KernelExpansion(take_rows(model.support_vectors, keep), coef, float(coef.sum()) * BIAS_TERM,
                           model.kernel, list(model.classes), model.n_features, meta, ids)
