"""Partition side of the L0-norm SVM (Huang, Zheng, King & Lyu, section 3.4; driver in ``core.l0svm``).

The inner problems are dual decompositions (``dual_round``) over the
explicit features phi(x) = K(x, X_A) P; the functions here serve the steps
between them.  All three are stateless in what they need: a lost partition
gets the same request again.
"""

import numpy as np

from core.partition.common import feature_mapped, locate
from core.rows import take_rows
from core.sampling import row_keys


def sample_rows(data, state, request):
    """This partition's ``m`` rows with the smallest seeded keys (``core.sampling``), in key order.

    Request: ``seed``, ``m``.  Answer: ``keys``, ``ids``, ``rows``.
    """
    keys = row_keys(data.rows, request["seed"])
    chosen = np.argsort(keys, kind="stable")[: request["m"]]
    return state, {"keys": keys[chosen], "ids": data.ids[chosen], "rows": take_rows(data.rows, chosen)}


def _betas(data, request):
    """beta_i of this partition's examples from the driver's (sv_ids, sv_beta); zero elsewhere."""
    beta = np.zeros(len(data))
    local, which = locate(data, request["sv_ids"])
    beta[local] = request["sv_beta"][which]
    return beta


def l0_support(data, state, request):
    """This partition's support examples, for the driver's v = K_{A,:} diag(y) beta of eq. 3.10 (a_A = M v).

    Request: ``sv_ids`` and ``sv_beta`` (the non-zero betas).  Answer: the rows of this partition's support
    examples (``rows``, in the input space, not the feature map), their ``ids``, content ``keys``
    (``PartitionData.keys``) and ``coef`` = y_i beta_i.
    """
    local, which = locate(data, request["sv_ids"])
    return state, {"rows": take_rows(data.rows, local), "ids": data.ids[local], "keys": data.keys[local],
                   "coef": request["sv_beta"][which] * data.y[local]}


def l0_remap(data, state, request):
    """Move the dual state to a new feature map: the warm start of the next inner solve (step 5).

    beta is kept (from the driver's ``sv_ids, sv_beta``); the gradient of the
    dual is rebuilt under the new map phi from the new weight vector
    w = sum_j beta_j y_j phi(x_j) as G_i = y_i phi(x_i) . w - 1 (the state
    layout of ``core.partition.dual``: alpha, grad, upper = C w_i).
    Request: the feature map (``feature_map_request``), ``w``, ``C``,
    ``sv_ids``, ``sv_beta``.  Answer: this partition's support examples in
    the new map (``sv_ids, sv_y, sv_beta, sv_rows``), for the driver's copy.
    """
    mapped = feature_mapped(data, state, request)
    beta = _betas(data, request)
    grad = data.y * (mapped.rows @ request["w"]) - 1.0
    state.update(alpha=beta, grad=grad, upper=request["C"] * data.weight)
    sv = np.flatnonzero(beta)
    return state, {"sv_ids": data.ids[sv], "sv_y": data.y[sv], "sv_beta": beta[sv],
                   "sv_rows": take_rows(mapped.rows, sv)}
