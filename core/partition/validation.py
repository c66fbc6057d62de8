"""What a partition reports about its validation rows (``PartitionData.validation``): how the current model
does on them, summed with the weights, for the driver to add up over the partitions.

The rows are never trained on; the partition functions that move the model keep its decision values f(x)
on them up to date beside the training outputs, and answer with ``validation_sums`` of those values.
"""

import numpy as np

from core.partition.common import kernel_times

EMPTY = {"val_mistakes": 0.0, "val_loss": 0.0, "val_weight": 0.0}


def validation_sums(data, f, squared=False):
    """``val_mistakes`` (the weight of the validation rows that f misclassifies: predicted positive where
    f(x) > 0), ``val_loss`` (the weighted hinge loss max(0, 1 - y f), or half its square with ``squared``)
    and ``val_weight`` (their total weight); zeros for a partition without validation rows."""
    val = data.validation
    if val is None:
        return dict(EMPTY)
    return {"val_mistakes": float(val.weight @ _wrong(val.y, f)),
            "val_loss": float(val.weight @ _loss(val.y, f, squared)), "val_weight": float(val.weight.sum())}


def validation_sums_per_step(data, f, columns, order, step_scale, squared=False):
    """The sums of ``validation_sums`` after each of a sequence of steps f += step_scale[t] K[:, order[t]]
    (``columns`` holds K, one column per distinct step), as arrays over the steps; f is updated in place.
    Empty arrays for a partition without validation rows."""
    val = data.validation
    steps = len(order)
    mistakes, loss = np.zeros(steps), np.zeros(steps)
    if val is None:
        return {"val_mistakes": mistakes, "val_loss": loss, "val_weight": 0.0}
    for t, (col, scale) in enumerate(zip(np.asarray(order).tolist(), np.asarray(step_scale).tolist())):
        f += scale * columns[:, col]
        mistakes[t] = val.weight @ _wrong(val.y, f)
        loss[t] = val.weight @ _loss(val.y, f, squared)
    return {"val_mistakes": mistakes, "val_loss": loss, "val_weight": float(val.weight.sum())}


def _wrong(y, f):
    return ((f > 0.0) != (y > 0.0)).astype(np.float64)


def _loss(y, f, squared):
    margin = np.maximum(0.0, 1.0 - y * f)
    return 0.5 * margin * margin if squared else margin


def validate_expansion(data, state, request):
    """Score a kernel expansion the driver holds on the validation rows (for the methods whose model lives on
    the driver, such as the elastic budget SVM's checkpoints).

    Request: ``kernel``, ``rows`` (the support vectors), ``coef`` and ``bias``.  Answer: the hinge-loss
    ``validation_sums`` of f(x) = sum_j coef_j K(x, s_j) + bias.  The state is left as it is.
    """
    val = data.validation
    if val is None:
        return state, dict(EMPTY)
    f = kernel_times(val, request["rows"], request["coef"], request["kernel"]) + request["bias"]
    return state, validation_sums(data, f)
