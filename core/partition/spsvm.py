"""Partition side of SpSVM-2 (Keerthi, Chapelle & DeCoste 2006, "Building SVMs with reduced
classifier complexity"): the per-example state and the sums the driver's Newton steps and basis
selection need.

Per-example state, always a function of the driver's basis J and coefficients beta:

    C[i, :d]   K'(x_i, x_J), K' = 1 + K (the bias trick, see ``core.spsvm``); the kernel
               columns of the basis, computed once per basis function (section 3.3's cache
               of the rows that matter: n x d_max floats per fit)
    o_i        C[i, :d] beta, the outputs
    factor_i   whether i is in the active set I the driver's factor of P was built with
    z_i        C[i, :d] delta, the outputs of the current Newton direction (line search)
    cand[c, i] K'(x_c, x_i) for the kappa candidates c being scored, one row per candidate
               (from the rows' transpose where the partition keeps it: ``PartitionData.rows_t``)

and, not a function of the model, the memory a gradient round copies the basis columns new since
the last re-optimisation into (``_scratch``: at most ~1.5 n (k + 1) floats for the k columns of the
largest such step, k ~ d / 6 on section 6.1's schedule: ~0.25 n d_max floats beside C's n d_max).

With the residual r_i = 1 - y_i o_i, example i is active when r_i > 0 and the loss is
1/2 sum_i w_i max(0, r_i)^2 (the L2-loss of eq. 4, with instance weights w_i).

Validation rows (``data.validation``), never trained on, keep the same three things under ``val``:
their basis columns, their outputs (the model's decision values on them) and the direction's outputs.
Every round that moves o (``spsvm_add_basis``, ``spsvm_gradient``) moves theirs too and answers with
their error and loss sums (``core.partition.validation``): one kernel column of the validation rows per
basis function, the rest O(n_val d) per Newton iteration.
"""

import numba
import numpy as np

from core.config import NJIT_SUMS
from core.kernels import KernelSpec, _bits, _float, dense_products, kernel_block, kernel_rows_into
from core.partition.validation import validation_sums
from core.rows import n_rows, take_rows
from core.sampling import row_keys, smallest_drawn

BIAS_TERM = 1.0  # K' = K + 1: the kernel of the feature map (1, phi(x))


def basis_kernel(X, Z, kernel, x_sq_norms=None, transposed=False, x_transposed=None):
    """K'(x, z) = 1 + K(x, z) for the rows of X and Z (the kernel SpSVM expands in), shape (n_x, n_z);
    with ``transposed``, its transpose (n_z, n_x), C-contiguous, from ``x_transposed`` (dense X's transpose,
    ``core.rows.transposed_rows``) when given: ``kernel_rows_into``'s dot products, which on a partition's
    candidates (7,500 x 54 rows, 10 columns) took 147 us against 203 us through the tiles (one thread, in cache)."""
    spec = kernel if isinstance(kernel, KernelSpec) else KernelSpec.from_dict(kernel)
    if transposed and x_transposed is not None:
        K = np.empty((n_rows(Z), n_rows(X)))
        kernel_rows_into(K, np.arange(n_rows(Z)), 0, X, Z, spec, x_sq_norms=x_sq_norms, x_transposed=x_transposed)
    else:
        K = kernel_block(X, Z, spec, x_sq_norms=x_sq_norms, transposed=transposed)
    K += BIAS_TERM
    return K


def _directional_sums(data, o, columns, coef):
    """For each row c of the (k, n) ``columns`` (a direction of the outputs): at o + coef_c columns_c,
    the loss, its first and second derivative in coef_c, and the interval [lower_c, upper_c] around coef_c
    on which the loss is one quadratic in coef_c (no example's activity changes strictly inside it)."""
    k = columns.shape[0]
    coef = np.asarray(coef, np.float64)
    loss, slope, curvature, below, above = np.zeros(k), np.zeros(k), np.zeros(k), np.zeros(k), np.zeros(k)
    _directional_kernel(o, data.y, data.weight, np.ascontiguousarray(columns), coef, loss, slope, curvature, below,
                        above)
    return loss, slope, curvature, coef - below, coef + above


_FAR = np.int64(0x7FEFFFFFFFFFFFFF)  # the bits of the largest float64: no kink
_NEAR = 8 * np.finfo(np.float64).eps  # a kink this close to b, relative to |b|, is taken to be at b


@numba.njit(**dict(NJIT_SUMS, error_model="numpy"))  # numpy's division: by 0, an infinity or NaN
def _directional_kernel(o, y, w, columns, coef, loss, slope, curvature, below, above):
    """One pass over each direction for ``_directional_sums``: with the margin m_i = 1 - y_i o_i and
    r_i = m_i - b y_i v_i, the loss 1/2 sum w_i max(0, r_i)^2, its slope -sum_{r_i > 0} w_i y_i v_i r_i
    and curvature sum_{r_i > 0} w_i v_i^2 in b, and the distances from b to the nearest kinks below and
    above it: example i's term changes its quadratic only where r_i = 0, at b + t_i, t_i = r_i / (y_i v_i)
    (none for v_i = 0: an infinity or NaN, which no comparison below takes).  A kink at b itself closes both
    sides, and so does one within rounding of it (|t_i| <= 8 eps |b|: r_i's last bits carry the rounding of
    b y_i v_i, so its sign there says nothing).  The distances, never negative, are compared as the integers
    of their bits (the same order): a minimum of integers vectorises where numba's minimum of floats did not
    (25,000 rows x 10 directions: 0.19 ms a pass, against 1.04 ms with float minima and 0.13 ms for the sums
    alone).
    Branch-free over a contiguous row, so it vectorises."""
    for c in range(columns.shape[0]):
        b, column = coef[c], columns[c]
        near = _NEAR * abs(b)
        sq_sum, slope_sum, curvature_sum = 0.0, 0.0, 0.0
        nearest_below, nearest_above = _FAR, _FAR
        for i in range(column.shape[0]):
            v, margin = column[i], 1.0 - y[i] * o[i]
            yv = y[i] * v
            r = margin - b * yv
            w_active = w[i] if r > 0.0 else 0.0
            sq_sum += w_active * r * r
            slope_sum += w_active * yv * r
            curvature_sum += w_active * v * v
            t = r / yv
            nearest_above = min(nearest_above, _bits(abs(t)) if t >= -near else _FAR)
            nearest_below = min(nearest_below, _bits(abs(t)) if t <= near else _FAR)
        loss[c] += 0.5 * sq_sum
        slope[c] -= slope_sum
        curvature[c] += curvature_sum
        below[c], above[c] = _float(nearest_below), _float(nearest_above)


@numba.njit(**NJIT_SUMS)
def _step_kernel(o, z, step, y, w, was_active, active, changed):
    """Move the outputs o += step z in place (not at all for step 0) and return the loss there,
    1/2 sum_i w_i max(0, r_i)^2 with r_i = 1 - y_i o_i, with the number of examples that entered and left the
    active set.  Unless ``active`` is empty (the loss alone): each example's activity r_i > 0 into ``active``,
    and into ``changed`` those whose activity differs from ``was_active``, the entering ones from the front in
    ascending order and the leaving ones from the back in descending order."""
    n = o.shape[0]
    tracked = active.shape[0] == n
    loss = 0.0
    for i in range(n):
        o[i] += step * z[i]  # o itself for step 0: z is finite
        r = 1.0 - y[i] * o[i]
        if r > 0.0:
            loss += w[i] * r * r
        if tracked:
            active[i] = r > 0.0
    entered, left = 0, 0
    if tracked:
        for i in range(n):
            if active[i] and not was_active[i]:
                changed[entered] = i
                entered += 1
            elif was_active[i] and not active[i]:
                left += 1
                changed[n - left] = i
    return 0.5 * loss, entered, left


def _step(data, o, z, step, was_active=None):
    """``_step_kernel`` on a partition's rows: the loss after o += step z, and with ``was_active`` (the active
    set before), the active set after and the examples that entered and left it, in ascending order."""
    n = len(data)
    if was_active is None:
        return _step_kernel(o, z, float(step), data.y, data.weight, _NO_FLAGS, _NO_FLAGS, _NO_INDICES)[0]
    active, changed = np.empty(n, np.bool_), np.empty(n, np.int64)
    loss, entered, left = _step_kernel(o, z, float(step), data.y, data.weight, was_active, active, changed)
    return loss, active, changed[:entered], changed[n - left:][::-1]


_NO_FLAGS, _NO_INDICES = np.zeros(0, np.bool_), np.zeros(0, np.int64)


def spsvm_start(data, state, request):
    """Empty basis: o = 0, every example active (r = 1), room for ``capacity`` basis columns.

    Answer: the partition's ``loss`` at o = 0.
    """
    n = len(data)
    state = {"C": np.zeros((n, request["capacity"]), order="F"), "d": 0, "o": np.zeros(n),
             "factor": np.ones(n, bool), "z": np.zeros(n), "cand": np.zeros((0, n)),
             "val": _validation_state(data, request["capacity"])}
    return state, {"loss": 0.5 * float(data.weight.sum())}


def _validation_state(data, capacity, rows=None, beta=None, direction=None, kernel=None):
    """The validation rows' basis columns ``C``, outputs ``o`` and direction outputs ``z`` (None without
    validation rows): empty, or rebuilt from the basis ``rows``, ``beta`` and ``direction``."""
    val = data.validation
    if val is None:
        return None
    n = len(val)
    state = {"C": np.zeros((n, capacity), order="F"), "o": np.zeros(n), "z": np.zeros(n)}
    if beta is not None and len(beta):
        d = len(beta)
        state["C"][:, :d] = basis_kernel(val.rows, rows, kernel, x_sq_norms=val.sq_norms)
        state["o"] = state["C"][:, :d] @ beta
        if direction is not None:
            state["z"] = state["C"][:, :d] @ direction
    return state


def _validation_answer(data, state):
    """The validation sums of the current outputs (the model's L2 loss, as training's)."""
    val = state["val"]
    return validation_sums(data, val["o"] if val is not None else None, squared=True)


def _drawn(data, state, request):
    """Local indices, draw keys and row keys of this partition's candidates of draw number ``draw`` (none when
    it is -1).

    Draw d's candidates are the ``kappa`` distinct rows with the smallest ``draw_keys(row_keys(x, seed), d)``
    whose row key is not in ``taken`` (sorted: the basis' rows and their duplicates): the same rows whatever the
    row order and partitioning, as each partition reports its own ``kappa`` smallest.  Identical rows share
    a key and count once (each partition keeps its first one: they are the same basis function).
    """
    if request["draw"] < 0:
        return np.zeros(0, np.int64), np.zeros(0, np.uint64), np.zeros(0, np.uint64)
    if "distinct" not in state:  # once per fit (and per rebuilt task)
        keys = row_keys(data.rows, request["seed"])
        _, first = np.unique(keys, return_index=True)
        state["distinct"] = distinct = np.sort(first)
        state["distinct_keys"] = keys[distinct]
    distinct, distinct_keys = state["distinct"], state["distinct_keys"]
    near, drawn = smallest_drawn(distinct_keys, request["draw"], request["kappa"], request["taken"])
    return distinct[near], drawn, distinct_keys[near]


def _rebuilt(data, state, request):
    """``state``, or when the request has ``rebuild`` set (a lost task), the state rebuilt from the
    driver's model, sent as flat keys (the wire format is flat): basis ``model_rows``,
    ``model_beta`` (the outputs' coefficients), ``model_factor_beta`` (those at which the factor's
    active set was taken), ``model_direction`` (the line search's, or None), ``model_capacity``."""
    if not request.get("rebuild"):
        return state
    n, d, d_f = len(data), len(request["model_beta"]), len(request["model_factor_beta"])
    C = np.zeros((n, request["model_capacity"]), order="F")
    if d:
        C[:, :d] = basis_kernel(data.rows, request["model_rows"], request["kernel"], x_sq_norms=data.sq_norms)
    direction = request["model_direction"]
    return {"C": C, "d": d, "o": C[:, :d] @ request["model_beta"],
            "factor": 1.0 - data.y * (C[:, :d_f] @ request["model_factor_beta"]) > 0.0,
            "z": np.zeros(n) if direction is None else C[:, :d] @ direction, "cand": np.zeros((0, n)),
            "val": _validation_state(data, request["model_capacity"], request["model_rows"], request["model_beta"],
                                     direction, request["kernel"])}


def spsvm_add_basis(data, state, request):
    """Append the basis column of ``row`` with coefficient ``coef`` (o += coef c), then fetch rows.

    Request: ``kernel``, ``row`` (a one-row block, or None to only fetch), ``scored`` (the row's
    index among the candidates of the last ``spsvm_score``, whose kernel column the partition
    keeps, or -1; a rebuilt task computes the column from ``row``), ``coef``, ``checkpoint``
    (save o, I and d first, for ``spsvm_restore``), ``score_rows`` (None, or the next stage's
    candidates: their first ``spsvm_score`` round, at b = 0, runs here after the update), and the
    candidates to fetch: ``draw``, ``seed``, ``kappa`` and ``taken`` (see ``_drawn``).
    Answer: the ``loss`` after the update; with ``score_rows``, that score round's sums, named
    ``score_`` + ``SCORE_SUMS``; this partition's candidates (``_fetched_answer``); the validation sums
    after the update.
    """
    state = _rebuilt(data, state, request)
    answer = {}
    val = state["val"]
    if request["checkpoint"]:
        state["saved"] = (state["o"].copy(), state["factor"].copy(), state["d"],
                          None if val is None else val["o"].copy())
    if request["row"] is not None:
        C, d, o = state["C"], state["d"], state["o"]
        if d >= C.shape[1]:
            raise ValueError(f"the partition holds room for {C.shape[1]} basis columns only")
        if request["scored"] >= 0 and state["cand"].shape[0]:  # the column spsvm_score computed for it
            c = state["cand"][request["scored"]]
        else:  # not scored, or a rebuilt task
            c = basis_kernel(data.rows, request["row"], request["kernel"], x_sq_norms=data.sq_norms)[:, 0]
        C[:, d] = c
        state["d"] = d + 1
        answer["loss"] = _step(data, o, c, request["coef"])
        if val is not None:
            val_rows = data.validation
            val["C"][:, d] = basis_kernel(val_rows.rows, request["row"], request["kernel"],
                                          x_sq_norms=val_rows.sq_norms)[:, 0]
            val["o"] += request["coef"] * val["C"][:, d]
    else:
        answer["loss"] = _step(data, state["o"], state["o"], 0.0)
    answer.update(_validation_answer(data, state))
    if request["score_rows"] is not None:
        rows = request["score_rows"]
        sums = _score_sums(data, state, request["kernel"], rows, np.zeros(n_rows(rows)))
        answer.update({"score_" + name: value for name, value in sums.items()})
    answer.update(_fetched_answer(data, state, request))
    return state, answer


def _fetched_answer(data, state, request):
    """This partition's candidates of the request's draw (``_drawn``; none for draw -1) as answer entries:
    ``fetched_draw_keys``, ``fetched_row_keys``, ``fetched_ids``, ``fetched_rows``."""
    local, drawn, keys = _drawn(data, state, request)
    return {"fetched_draw_keys": drawn, "fetched_row_keys": keys, "fetched_ids": data.ids[local],
            "fetched_rows": take_rows(data.rows, local)}


def spsvm_restore(data, state, request):
    """Return to the state saved by the last ``spsvm_add_basis`` with ``checkpoint`` (Method 1's trials);
    a task that lost it rebuilds that state from the model the request always carries (``_rebuilt``)."""
    if "saved" not in state:
        return _rebuilt(data, state, request), {}
    state["o"], state["factor"], state["d"], val_o = state.pop("saved")
    if val_o is not None:
        state["val"]["o"] = val_o
    return state, {}


SCORE_SUMS = ("loss", "slope", "curvature", "lower", "upper")  # a score round's answer per candidate


def _score_sums(data, state, kernel, rows, coef):
    """The candidates' directional sums at ``coef`` (``_directional_sums``, named as ``SCORE_SUMS``), their
    kernel rows first computed from ``rows`` when given (kept in ``state["cand"]`` for the next rounds)."""
    if rows is not None:
        state["cand"] = basis_kernel(data.rows, rows, kernel, x_sq_norms=data.sq_norms, transposed=True,
                                     x_transposed=data.rows_t)
    return dict(zip(SCORE_SUMS, _directional_sums(data, state["o"], state["cand"], coef)))


def spsvm_score(data, state, request):
    """Method 2's one-dimensional problems: the loss of o + b_c K'(., x_c) for each candidate c.

    Request: ``kernel``, ``rows`` (the candidates' block, sent in the first round of a stage,
    None afterwards), ``coef`` (b_c) and the candidates to fetch meanwhile (``draw``, ``seed``,
    ``kappa``, ``taken``: see ``_drawn``; draw -1 for none).  Answer per candidate (``SCORE_SUMS``):
    ``loss``, ``slope`` and ``curvature`` (first and second derivative in b_c) of the loss at b_c,
    and ``lower`` and ``upper``, this partition's nearest kinks around b_c (``_directional_sums``);
    and the fetched candidates (``_fetched_answer``).
    """
    state = _rebuilt(data, state, request)
    answer = _score_sums(data, state, request["kernel"], request["rows"], request["coef"])
    answer.update(_fetched_answer(data, state, request))
    return state, answer


def spsvm_line(data, state, request):
    """The loss along the Newton direction: o + t z, z = C delta.

    Request: ``direction`` (delta, sent in the first round of a line search, None afterwards) and
    ``step`` (t).  Answer: ``loss``, ``slope``, ``curvature`` in t and the nearest kinks around t,
    ``lower`` and ``upper`` (``_directional_sums``).
    """
    state = _rebuilt(data, state, request)
    if request["direction"] is not None:
        state["z"] = state["C"][:, :state["d"]] @ request["direction"]
        if state["val"] is not None:
            state["val"]["z"] = state["val"]["C"][:, :state["d"]] @ request["direction"]
    loss, slope, curvature, lower, upper = _directional_sums(data, state["o"], state["z"][None, :], [request["step"]])
    return state, {"loss": float(loss[0]), "slope": float(slope[0]), "curvature": float(curvature[0]),
                   "lower": float(lower[0]), "upper": float(upper[0])}


def spsvm_gradient(data, state, request):
    """Take the step o += t z, then report the gradient sums and the active set's changes.

    Request: ``step`` (t; 0 for none), ``gram_from`` (the size of the driver's factor of P) and
    ``derive`` (whether the driver derives the residual sum from the one before, see below).
    When the basis has grown past that size, the answer first has ``gram_block`` =
    sum_{i in I} w_i K'_iJ^T K'_ik for the new columns k = gram_from..d-1 over the factor's active
    set I (what the factor needs to grow; with ``residual_sum``, one pass over the cached columns:
    ``dense_products``, which on 1,000 x 7,500 columns by 140 took ~0.6x BLAS's time).  Then the new active set
    I' = {r_i > 0} replaces the factor's I.  Answer: ``residual_sum`` = sum_{i in I'} w_i (y_i - o_i)
    K'_iJ (the loss part of the gradient of eq. 6 is its negative), the ``loss``, and how P changes
    from I to I': when at most d examples changed, their rows sqrt(w_i) K'_iJ (``entering``,
    ``leaving``), else the dense change of K_JI W K_JI^T (``gram_change``, None otherwise); the
    validation sums after the step.  With ``derive`` (the driver sets it only when the basis is unchanged
    since the round before, which answered the residual sum at o - t z over I) the answer has
    ``residual_change`` in place of ``residual_sum``: the terms of the examples that entered I' less those
    of the examples that left I, O(|I' - I| d) instead of a pass over the cached columns; the driver adds
    the rest (``core.spsvm._Fit.newton``).
    """
    state = _rebuilt(data, state, request)
    C, d, o, y = state["C"], state["d"], state["o"], data.y
    start = request["gram_from"]
    answer = {}
    answer["loss"], active, entering, leaving = _step(data, o, state["z"], request["step"], state["factor"])
    if request["step"] and state["val"] is not None:
        state["val"]["o"] += request["step"] * state["val"]["z"]
    answer.update(_validation_answer(data, state))
    if start < d:  # the Gram block and the residual sum in one pass over the cached columns
        sums = _scratch(state, (len(data), d - start + 1))
        np.multiply(C[:, start:d], np.where(state["factor"], data.weight, 0.0)[:, None], out=sums[:, :-1])
        sums[:, -1] = np.where(active, data.weight * (y - o), 0.0)
        products = dense_products(C[:, :d].T, sums)
        answer.update(gram_block=products[:, :-1], residual_sum=products[:, -1])
    elif not request["derive"]:
        answer["residual_sum"] = C[:, :d].T @ np.where(active, data.weight * (y - o), 0.0)
    scale_in, scale_out = np.sqrt(data.weight[entering]), np.sqrt(data.weight[leaving])
    rows_in = C[entering, :d] * scale_in[:, None]
    rows_out = C[leaving, :d] * scale_out[:, None]
    if request["derive"]:  # sum w_i (y_i - o_i) K'_iJ over I' less I: sqrt(w_i) K'_iJ times sqrt(w_i) (y_i - o_i)
        answer["residual_change"] = (rows_in.T @ (scale_in * (y[entering] - o[entering]))
                                     - rows_out.T @ (scale_out * (y[leaving] - o[leaving])))
    if entering.size + leaving.size <= d:
        answer.update(entering=rows_in, leaving=rows_out, gram_change=None)
    else:
        answer.update(entering=np.zeros((0, d)), leaving=np.zeros((0, d)),
                      gram_change=rows_in.T @ rows_in - rows_out.T @ rows_out)
    state["factor"] = active
    return state, answer


def _scratch(state, shape):
    """A C-contiguous float64 array of ``shape`` in memory the state keeps for it, grown (to half as much again
    as asked) when too small: on this project's VM, fresh memory's first writes took about a seventh of the time
    of the Gram block they hold the columns of (1,000 x 7,500 by 7,500 x 140: 3.0 ms against 20.6 ms, and
    0.7 ms into memory already touched; ``bench/HISTORY.md``)."""
    size = shape[0] * shape[1]
    if state.get("scratch") is None or state["scratch"].size < size:
        state["scratch"] = np.empty(size + size // 2)
    return state["scratch"][:size].reshape(shape)
