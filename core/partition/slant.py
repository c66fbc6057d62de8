"""Partition side of the slant-loss sparsifier (Cotter, Shalev-Shwartz & Srebro).

Per-example state.  Fixed by the reference model g(x) = <w, phi(x)> + b:

    m_i = y_i g(x_i),   h_i = min(1, m_i) - y_i b   (section 4.6),   eligible_i = m_i > 0   (section 4.2)

and, changing with the sparse model w~ = sum_j a~_j y_j phi(x_j) (section 4.5):

    c~_i = y_i <w~, phi(x_i)>        (the responses),        support_i = a~_i > 0.

The violation of example i is v_i = h_i - c~_i; the objective of problem 4.1
is f(w~) = max over eligible i of v_i.  A step on index k adds eta to a~_k
and c~_i += eta y_k y_i K(x_i, x_k) for every i (``add_steps``).

Each round a partition applies the steps the driver took since the last
round, then reports the responses of its support examples (the driver holds
their rows) and, per class, its ``n_select`` most violating eligible
non-support examples with their rows, ranked by (v desc, content key asc, id
asc: exact ties go by the example, not its row position, see
``PartitionData.keys``), and the (v, key, id) of the best one it did not
report: the driver's bound on everything it does not see.

Validation rows (``data.validation``, never stepped on) keep the sparse model's
decision values f~(x) = <w~, phi(x)> + b; each round answers with their error
and hinge loss after every step it applied (``core.partition.validation``), so
the driver knows them at every support size.
"""

import numpy as np

from core.kernels import KernelSpec, kernel_block
from core.partition.common import kernel_times, locate, top_k
from core.partition.validation import validation_sums_per_step
from core.rows import take_rows

NEG, POS = 0, 1  # class slots of the per-class answers (y = -1, y = +1)


def add_steps(responses, y, K, cols, step_y, eta):
    """Apply subgradient steps in order: c~ += eta y_k y K(., x_k) (section 4.5).

    ``K[:, cols[t]]`` holds the kernel values with the t-th step's example,
    ``step_y[t]`` its label.  The driver and the partitions both step with
    this function, so that they do the same arithmetic.
    """
    for col, label in zip(np.asarray(cols).tolist(), np.asarray(step_y).tolist()):
        responses += (eta * label) * y * K[:, col]
    return responses


def ranked(values, keys, ids, mask, k):
    """The k best entries of ``mask`` by (value desc, key asc, id asc) and the (value, key, id) of the next one.

    Returns ``(chosen, next_value, next_key, next_id)``; ``next_value`` is -inf,
    ``next_key`` 0 and ``next_id`` -1 when nothing is left over.
    """
    idx = top_k(values, mask, k + 1, True, ties=(keys, ids))
    if idx.size > k:
        return idx[:k], float(values[idx[k]]), keys[idx[k]], int(ids[idx[k]])
    return idx, -np.inf, np.uint64(0), -1


def kernel_bound(data, spec):
    """A bound on |K(x, z)| over the partition's rows: 1 for rbf, |x . z| <= max ||x||^2 for linear,
    (gamma max ||x||^2 + |coef0|)^degree for poly (which need not be positive semi-definite)."""
    if spec.name == "rbf" or len(data) == 0:
        return 1.0 if spec.name == "rbf" else 0.0
    largest = float(data.sq_norms.max())
    if spec.name == "linear":
        return largest
    return (spec.gamma * largest + abs(spec.coef0)) ** spec.degree


def _reset(data, request):
    """Rebuild h, eligibility, responses and support from the reference and the driver's model."""
    spec = KernelSpec.from_dict(request["kernel"])
    margin = data.y * (kernel_times(data, request["ref_rows"], request["ref_coef"], spec) + request["ref_bias"])
    h = np.minimum(1.0, margin) - data.y * request["ref_bias"]
    responses = np.zeros(len(data))
    support = np.zeros(len(data), bool)
    if len(request["sv_ids"]):
        responses = data.y * kernel_times(data, request["sv_rows"], request["sv_coef"], spec)
        local, _ = locate(data, request["sv_ids"])
        support[local] = True
    val = data.validation
    val_f = None if val is None else kernel_times(val, request["sv_rows"], request["sv_coef"], spec) \
        + request["ref_bias"]
    return {"h": h, "eligible": margin > 0.0, "responses": responses, "support": support, "val_f": val_f}


def slant_round(data, state, request):
    """Apply the driver's last steps, then report support responses and the top violators per class.

    Request: ``kernel``, ``eta``, ``n_select`` (per class); ``reset`` with
    ``ref_rows, ref_coef, ref_bias`` (the reference expansion) and
    ``sv_ids, sv_rows, sv_coef`` (the sparse model so far, signed
    coefficients) to (re)build the state; the steps as ``step_ids,
    step_rows, step_y`` (each stepped example once) and ``step_order``
    (indices into them, one per step, in order).

    Answer: ``sv_ids, sv_keys, sv_h, sv_c`` for the support examples held here;
    ``cand_ids, cand_keys, cand_rows, cand_y, cand_h, cand_c``; ``next_value``, ``next_key`` and
    ``next_id`` (per class) of the best unreported eligible non-support
    example; on reset also ``kmax`` (``kernel_bound``) and ``n_eligible``.  Validation sums:
    ``val_mistakes`` and ``val_loss`` after each step of the round (arrays) and ``val_weight``.
    """
    answer = {}
    if request["reset"]:
        state = _reset(data, request)
        spec = KernelSpec.from_dict(request["kernel"])
        answer["kmax"] = kernel_bound(data, spec)
        answer["n_eligible"] = int(state["eligible"].sum())
    h, eligible, responses, support = state["h"], state["eligible"], state["responses"], state["support"]
    order = request["step_order"]
    K_val, val_scale = None, np.zeros(0)
    if len(order):
        spec = KernelSpec.from_dict(request["kernel"])
        K = kernel_block(data.rows, request["step_rows"], spec, x_sq_norms=data.sq_norms)
        add_steps(responses, data.y, K, order, request["step_y"][order], request["eta"])
        local, _ = locate(data, request["step_ids"])
        support[local] = True
        val_scale = request["eta"] * request["step_y"][order]
        if data.validation is not None:
            K_val = kernel_block(data.validation.rows, request["step_rows"], spec,
                                 x_sq_norms=data.validation.sq_norms)
    answer.update(validation_sums_per_step(data, state["val_f"], K_val, order, val_scale))
    violation = h - responses
    chosen = []
    answer.update(next_value=np.full(2, -np.inf), next_key=np.zeros(2, np.uint64), next_id=np.full(2, -1, np.int64))
    for slot, in_class in ((NEG, data.y < 0), (POS, data.y > 0)):
        idx, value, key, next_id = ranked(violation, data.keys, data.ids, eligible & ~support & in_class,
                                          request["n_select"])
        chosen.append(idx)
        answer["next_value"][slot], answer["next_key"][slot], answer["next_id"][slot] = value, key, next_id
    cand = np.concatenate(chosen)
    sv = np.flatnonzero(support)
    answer.update(sv_ids=data.ids[sv], sv_keys=data.keys[sv], sv_h=h[sv], sv_c=responses[sv],
                  cand_ids=data.ids[cand], cand_keys=data.keys[cand], cand_rows=take_rows(data.rows, cand),
                  cand_y=data.y[cand], cand_h=h[cand], cand_c=responses[cand])
    return state, answer
