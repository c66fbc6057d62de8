"""Partition side of the dual decomposition (C-SVC and the budget SVMs).

Per-example state: the dual variable alpha_i and the kernel part of the
gradient of the dual objective f(a) = 1/2 a^T Q a - e^T a,

    G_i = (Q a)_i - 1 = y_i sum_j a_j y_j K(x_i, x_j) - 1,

plus the box bound U_i = C w_i.  The driver may add a ridge mu/2 ||a||^2
(budget-L2's ball multiplier), so selection uses F_i = G_i + mu a_i.

Shrinking (as LIBSVM's, Chang & Lin 2011, section 5.1).  An example at a
bound that lies in only one of I_up, I_low can only pair as i (I_up) or only
as j (I_low); when its s = -y F lies beyond the other side's extreme of the
last round (s < min over I_low of s for i, s > max over I_up of s for j),
the request's ``shrink_below`` / ``shrink_above``, it cannot be in a
violating pair and is shrunk: its gradient is no longer updated, and the
round's changes are logged instead.  An example whose alpha changes, and every
example on the driver's ``unshrink``, is restored from the changes logged
since it was shrunk (summed per example, one kernel product per shrink round).
Shrunk examples are left out of the candidates and the statistics; the
driver stops only after a round with none (``core.dual``).

Rows (``core.row_store``).  The driver keeps every candidate's row it receives, so the answer
carries the rows of the candidates this partition has not reported under the request's ``rows_key``
only (``cand_new`` marks them); the partition keeps every working-set row it receives, so the request
carries the rows it does not hold only (``ws_new``).  A new key or a reset (a new solve, a ledger
started again, a rebuilt task) starts both records afresh.

With a feature map in the request (``map_key``..., see
``core.partition.common.feature_map_request``) the rows x_i are replaced by
the explicit features phi(x_i) throughout (the L0-norm SVM's inner solves).
"""

import numpy as np

from core.partition.common import feature_mapped, kernel_times, locate, top_k
from core.row_store import RowStore
from core.rows import stack_rows, take_rows

NEG, POS = 0, 1  # class slots of the per-class answers (y = -1, y = +1)


def _reset(data, request):
    """Rebuild alpha and G from the driver's support set (first round, or a lost task)."""
    alpha = np.zeros(len(data))
    local, which = locate(data, request["sv_ids"])
    alpha[local] = request["sv_alpha"][which]
    coef = request["sv_alpha"] * request["sv_y"]
    grad = data.y * kernel_times(data, request["sv_rows"], coef, request["kernel"]) - 1.0
    upper = request["C"] * data.weight
    # shrunk_at: -1 for an active example, else the length of the change log when it was shrunk
    return {"alpha": alpha, "grad": grad, "upper": upper, "shrunk_at": np.full(len(data), -1), "log": []}


def _net_changes(log):
    """The changes of ``log`` (a list of (ids, rows, coef)) summed per example: (rows, coef), the examples
    in the order of their first change (the working sets' order, not the ids', which follow the rows'
    order in the data: the kernel products' sums must not)."""
    ids = np.concatenate([ids for ids, _, _ in log])
    first_of, inverse = np.unique(ids, return_index=True, return_inverse=True)[1:]
    coef = np.bincount(inverse, weights=np.concatenate([coef for _, _, coef in log]))
    by_first = np.argsort(first_of)
    return take_rows(stack_rows([rows for _, rows, _ in log]), first_of[by_first]), coef[by_first]


def _add_to_gradients(data, grad, rows, coef, kernel, at=None):
    """G_i += y_i sum_j coef_j K(x_i, z_j) for every example, or for the examples ``at`` only."""
    if at is None:
        grad += data.y * kernel_times(data, rows, coef, kernel)
    else:
        grad[at] += data.y[at] * kernel_times(data, rows, coef, kernel, at=at)


def _restore(data, state, which, kernel):
    """Bring the gradients of the shrunk examples ``which`` up to date and make them active."""
    shrunk_at, log, grad = state["shrunk_at"], state["log"], state["grad"]
    for start in np.unique(shrunk_at[which]):
        here = which[shrunk_at[which] == start]
        if start < len(log):
            _add_to_gradients(data, grad, *_net_changes(log[start:]), kernel, at=here)
    shrunk_at[which] = -1
    if (shrunk_at < 0).all():
        log.clear()


def dual_round(data, state, request):
    """Apply the last working set's alpha changes, then report violators and statistics.

    Request: ``kernel``, ``C`` (box scale, inf for none), ``ridge`` (mu),
    ``n_select`` (per class and direction), ``rows_key``
    (the driver's ``RowLedger``), ``reset`` with
    ``sv_ids, sv_rows, sv_y, sv_alpha`` to (re)build the state, and
    ``ws_ids, ws_new, ws_rows, ws_y, ws_alpha_old, ws_alpha`` for the update
    G_i += y_i sum_j K(x_i, x_j) y_j (a_j - a_j_old) (``ws_rows``: the rows of
    those marked ``ws_new`` only), ``shrink_below`` and
    ``shrink_above`` (the shrinking thresholds; -inf and inf for none) and
    ``unshrink`` (restore every shrunk example first).

    Answer: the ``n_select`` most violating examples of each of I_up and
    I_low in each class (``cand_*``; exact ties go to the smaller content
    key ``cand_keys``, see ``PartitionData.keys``; ``cand_rows`` holds the rows
    of those marked ``cand_new`` only), the per-class extremes
    of s = -y F over I_up / I_low, the per-class bias statistics over free variables and
    at the bounds, and this partition's part of sum_i a_i (G_i - 1), all over
    the active examples; ``shrunk``, how many are not.
    """
    data = feature_mapped(data, state, request)
    if request["reset"]:
        state.update(_reset(data, request))
    if request["reset"] or state.get("rows_key") != request["rows_key"]:
        state.update(rows_key=request["rows_key"], rows_sent=np.zeros(len(data), bool), rows_received=RowStore())
    alpha, grad, upper, shrunk_at = state["alpha"], state["grad"], state["upper"], state["shrunk_at"]
    kernel = request["kernel"]
    if len(request["ws_ids"]):
        state["rows_received"].add(request["ws_ids"][request["ws_new"]], request["ws_rows"])
        ws_rows = state["rows_received"].take(request["ws_ids"])
        coef = request["ws_y"] * (request["ws_alpha"] - request["ws_alpha_old"])
        updated = np.flatnonzero(shrunk_at < 0)  # the active examples; the shrunk ones get a log entry
        everyone = updated.size == len(data)
        _add_to_gradients(data, grad, ws_rows, coef, kernel, at=None if everyone else updated)
        if not everyone:
            state["log"].append((request["ws_ids"], ws_rows, coef))
        local, which = locate(data, request["ws_ids"])
        alpha[local] = request["ws_alpha"][which]
        moved = local[shrunk_at[local] >= 0]  # left its bound: it may pair again
        if moved.size:
            _restore(data, state, moved, kernel)
    if request["unshrink"]:
        _restore(data, state, np.flatnonzero(shrunk_at >= 0), kernel)

    F = grad + request["ridge"] * alpha
    score = -data.y * F
    pos = data.y > 0
    at_zero = alpha <= 0.0
    at_upper = alpha >= upper
    up = np.where(pos, ~at_upper, ~at_zero)
    low = np.where(pos, ~at_zero, ~at_upper)
    beyond = (up & ~low & (score < request["shrink_below"])) | (low & ~up & (score > request["shrink_above"]))
    shrunk_at[beyond & (shrunk_at < 0)] = len(state["log"])
    active = shrunk_at < 0
    up &= active
    low &= active
    k = request["n_select"]
    chosen = []
    answer = {"up_max": np.full(2, -np.inf), "low_min": np.full(2, np.inf),
              "free_count": np.zeros(2), "free_sum": np.zeros(2),
              "upper_max": np.full(2, -np.inf), "zero_min": np.full(2, np.inf)}
    for slot, in_class in ((NEG, ~pos), (POS, pos)):
        for mask, largest, key in ((up & in_class, True, "up_max"), (low & in_class, False, "low_min")):
            if mask.any():
                answer[key][slot] = score[mask].max() if largest else score[mask].min()
            chosen.append(top_k(score, mask, k, largest, ties=(data.keys, data.ids)))
        free = in_class & ~at_zero & ~at_upper
        answer["free_count"][slot] = free.sum()
        answer["free_sum"][slot] = F[free].sum()
        if (in_class & at_upper & active).any():
            answer["upper_max"][slot] = F[in_class & at_upper & active].max()
        if (in_class & at_zero & active).any():
            answer["zero_min"][slot] = F[in_class & at_zero & active].min()
    cand = np.unique(np.concatenate(chosen))
    new = ~state["rows_sent"][cand]
    state["rows_sent"][cand] = True
    answer.update(
        cand_ids=data.ids[cand], cand_keys=data.keys[cand], cand_new=new, cand_rows=take_rows(data.rows, cand[new]),
        cand_y=data.y[cand], cand_alpha=alpha[cand], cand_grad=grad[cand], cand_upper=upper[cand],
        cand_score=score[cand],
        objective_part=float(alpha @ (grad - 1.0)), shrunk=int(np.count_nonzero(~active)),
    )
    return state, answer
