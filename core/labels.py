"""Binary labels: any two values in, +-1 out, with the mapping kept for the model."""

import numpy as np


def encode_labels(labels):
    """Map a 1-D array of exactly two distinct label values to +-1.

    Returns ``(y, classes)``: ``y`` is float64 with -1 for ``classes[0]`` and
    +1 for ``classes[1]``, where ``classes`` holds the two values sorted (the
    larger one is the positive class, as in scikit-learn and MLlib).
    """
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise ValueError(f"labels must be a 1-D array, got shape {labels.shape}")
    if labels.size == 0:
        raise ValueError("the training data is empty: there are no labels")
    if labels.dtype == object and any(v is None for v in labels):
        raise ValueError(f"labels contain {sum(v is None for v in labels)} null value(s); drop or fill those rows")
    try:
        distinct = np.unique(labels)
    except TypeError:  # numpy sorts the values, and 1 < "a" has no answer
        kinds = sorted({type(v).__name__ for v in labels})
        raise ValueError(f"labels mix values of the types {kinds}, which cannot be ordered (the larger label is the "
                         "positive class): give labels of one type") from None
    classes = two_classes(distinct)
    y = np.where(labels == classes[1], 1.0, -1.0)
    return y, classes


class LabelCountError(ValueError):
    """Labels that are not two values: the message names them and the fix for an estimator's caller; ``found``
    holds the distinct values, sorted, for a caller that words its own fix (the jobs' [data] settings)."""

    def __init__(self, message, found):
        super().__init__(message)
        self.found = found


def two_classes(distinct, weighted=False):
    """The two distinct label values, sorted; a ValueError naming what was found otherwise.  ``weighted``: the
    values are those of the rows of weight > 0 (the rows of weight 0 dropped before), which a message about
    a single value says."""
    classes = np.sort(np.asarray(distinct))
    if classes.dtype.kind == "f" and not np.all(np.isfinite(classes)):
        raise ValueError("labels contain NaN or infinite values; drop or fix those rows")
    if classes.size != 2:
        shown = ", ".join(repr(v) for v in classes[:10].tolist())
        more = "" if classes.size <= 10 else f" ... ({classes.size} in all)"
        found = f"found {classes.size}" + (" among the rows of weight > 0" if weighted and classes.size < 2 else "")
        if classes.size > 2:
            fix = "for more classes wrap the estimator in OneVsRest"
        elif weighted:
            fix = ("the rows of weight 0 are dropped (they contribute nothing), so give some rows of each label a "
                   "positive weight")
        else:
            fix = ("every row has that label; within OneVsRest, which fits one model per class 0, 1, ..., up to the "
                   "largest label, one of those classes has no rows: index the labels as 0 to k-1 (StringIndexer)")
        raise LabelCountError(f"binary classification needs exactly two label values, {found}: [{shown}{more}]; "
                              f"{fix}", classes.tolist())
    return classes.tolist()


def check_training_classes(classes, training_rows):
    """A ValueError unless both ``classes`` keep rows to train on once the validation rows are held out.
    ``training_rows``: how many rows of each class are not held out, in the order of ``classes``."""
    for value, count in zip(classes, training_rows):
        if count == 0:
            raise ValueError(f"every row of label {value!r} is held out for validation, so the training rows "
                             "hold one label only: hold out fewer of that label's rows")


def decode_labels(y_sign, classes):
    """Map signs (+-1, or decision values whose sign is taken) back to label values."""
    return np.where(np.asarray(y_sign) > 0, np.asarray(classes[1]), np.asarray(classes[0]))
