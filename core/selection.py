"""Choosing what a fit keeps by its validation path: the end of the path, the size (or checkpoint) with the
best validation error, or the smallest one within a tolerance of the best.

A fit whose engine holds validation rows (``Engine.n_validation`` > 0) records, for every support size it
passed through (SpSVM-2's basis sizes, the slant sparsifier's support sizes) or every checkpoint (the
elastic budget SVM), the validation error and loss of the model it had there, from the sums the
partitions return in the same rounds that move the model (``core.partition.validation``).  That record is
``metadata["validation"]`` (``validation_record``); the model kept is the one at ``kept_size`` of it.
"""

import numpy as np

SELECT_RULES = ("end", "best", "withinTolerance")


def check_selection(select, tolerance, n_validation):
    """A ValueError naming a bad ``select`` or ``tolerance``, or a rule that needs validation rows without any."""
    if select not in SELECT_RULES:
        raise ValueError(f"select must be one of {SELECT_RULES}, got {select!r}")
    if not (np.isfinite(tolerance) and tolerance >= 0):
        raise ValueError(f"tolerance must be a finite number >= 0 (a share of the validation rows), got {tolerance!r}")
    if select != "end" and n_validation == 0:
        raise ValueError(f"select={select!r} chooses by the validation error, and the training data has no "
                         "validation rows: hold some out (validationFraction or validationIndicatorCol; "
                         "LocalEngine's validation mask) or keep select='end'")


def chosen_index(errors, select, tolerance=0.0):
    """The index of the path point ``select`` keeps: the last ('end'), the first of the smallest error
    ('best'), or the first whose error is at most the smallest plus ``tolerance`` ('withinTolerance')."""
    errors = np.asarray(errors, np.float64)
    if select == "end" or not errors.size:
        return errors.size - 1
    best = errors.min()
    return int(np.flatnonzero(errors <= best + (tolerance if select == "withinTolerance" else 0.0))[0])


def summed(answers, keys=("val_mistakes", "val_loss")):
    """The partitions' validation sums of ``keys`` added up and divided by the validation weight."""
    weight = sum(a["val_weight"] for a in answers)
    return tuple(sum(a[k] for a in answers) / weight if weight else np.nan for k in keys)


def validation_record(sizes, errors, losses, select, tolerance, **extra):
    """``metadata["validation"]`` of a fit: the path (support sizes with their validation error and loss,
    plus ``extra`` columns such as the elastic budget SVM's steps) and what ``select`` kept from it."""
    kept = chosen_index(errors, select, tolerance)
    record = {"sizes": [int(s) for s in sizes], "error": [float(e) for e in errors],
              "loss": [float(v) for v in losses], "select": select, "tolerance": float(tolerance),
              "kept_index": int(kept), "kept_size": int(sizes[kept]), "kept_error": float(errors[kept])}
    record.update({k: list(v) for k, v in extra.items()})
    return record
