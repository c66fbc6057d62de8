"""Partition side of the dual decomposition (C-SVC and the budget SVMs).

Per-example state: the dual variable alpha_i and the kernel part of the
gradient of the dual objective f(a) = 1/2 a^T Q a - e^T a,

    G_i = (Q a)_i - 1 = y_i sum_j a_j y_j K(x_i, x_j) - 1,

plus the box bound U_i = C w_i.  The driver may add a ridge mu/2 ||a||^2
(budget-L2's ball multiplier), so selection uses F_i = G_i + mu a_i.

With a feature map in the request (``map_key``..., see
``core.partition.common.feature_map_request``) the rows x_i are replaced by
the explicit features phi(x_i) throughout (the L0-norm SVM's inner solves).
"""

import numpy as np

from core.partition.common import feature_mapped, kernel_times, locate, top_k
from core.rows import take_rows

NEG, POS = 0, 1  # class slots of the per-class answers (y = -1, y = +1)


def _reset(data, request):
    """Rebuild alpha and G from the driver's support set (first round, or a lost task)."""
    alpha = np.zeros(len(data))
    local, which = locate(data, request["sv_ids"])
    alpha[local] = request["sv_alpha"][which]
    coef = request["sv_alpha"] * request["sv_y"]
    grad = data.y * kernel_times(data, request["sv_rows"], coef, request["kernel"]) - 1.0
    upper = request["C"] * data.weight
    return {"alpha": alpha, "grad": grad, "upper": upper}


def dual_round(data, state, request):
    """Apply the last working set's alpha changes, then report violators and statistics.

    Request: ``kernel``, ``C`` (box scale, inf for none), ``ridge`` (mu),
    ``budget_tight``, ``n_select`` (per class and direction), ``reset`` with
    ``sv_ids, sv_rows, sv_y, sv_alpha`` to (re)build the state, and
    ``ws_ids, ws_rows, ws_y, ws_alpha_old, ws_alpha`` for the update
    G_i += y_i sum_j K(x_i, x_j) y_j (a_j - a_j_old).

    Answer: the ``n_select`` most violating examples of each of I_up and
    I_low in each class (``cand_*``; exact ties go to the smaller content
    key ``cand_keys``, see ``PartitionData.keys``), the per-class extremes
    of s = -y F over I_up / I_low, the per-class bias statistics over free variables and
    at the bounds, and this partition's part of sum_i a_i (G_i - 1).
    """
    data = feature_mapped(data, state, request)
    if request["reset"]:
        state.update(_reset(data, request))
    alpha, grad, upper = state["alpha"], state["grad"], state["upper"]
    if len(request["ws_ids"]):
        coef = request["ws_y"] * (request["ws_alpha"] - request["ws_alpha_old"])
        grad += data.y * kernel_times(data, request["ws_rows"], coef, request["kernel"])
        local, which = locate(data, request["ws_ids"])
        alpha[local] = request["ws_alpha"][which]

    F = grad + request["ridge"] * alpha
    score = -data.y * F
    pos = data.y > 0
    at_zero = alpha <= 0.0
    at_upper = alpha >= upper
    up = np.where(pos, ~at_upper, ~at_zero)
    low = np.where(pos, ~at_zero, ~at_upper)
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
        if (in_class & at_upper).any():
            answer["upper_max"][slot] = F[in_class & at_upper].max()
        if (in_class & at_zero).any():
            answer["zero_min"][slot] = F[in_class & at_zero].min()
    cand = np.unique(np.concatenate(chosen))
    answer.update(
        cand_ids=data.ids[cand], cand_keys=data.keys[cand], cand_rows=take_rows(data.rows, cand),
        cand_y=data.y[cand], cand_alpha=alpha[cand], cand_grad=grad[cand], cand_upper=upper[cand],
        cand_score=score[cand],
        objective_part=float(alpha @ (grad - 1.0)),
    )
    return state, answer
