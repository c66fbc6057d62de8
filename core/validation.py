"""Argument checks shared by the training functions, the kernel spec, the engines and the Spark params."""

import math

import numpy as np


def check_positive(**values):
    """A ValueError naming the first of ``values`` (name=value) that is not a positive finite number."""
    for name, value in values.items():
        try:
            ok = math.isfinite(float(value)) and float(value) > 0
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ValueError(f"{name} must be a positive finite number, got {value!r}")


def check_integer(low, **values):
    """The ``values`` (name=value) as Python ints, in order, or a ValueError naming the first that is not an
    integer >= ``low`` (numpy integers and integral floats such as 1e3 count; bools and strings do not)."""
    checked = []
    for name, value in values.items():
        try:
            ok = not isinstance(value, (bool, np.bool_)) and float(value).is_integer() and value >= low
        except (TypeError, ValueError, OverflowError):
            ok = False
        if not ok:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        checked.append(int(value))
    return checked


def check_weights(weights, n):
    """``weights`` as a float64 array of n positive finite numbers, or a ValueError naming what is wrong
    with them (the engines train on positive weights only: rows of weight 0 contribute nothing)."""
    weights = np.asarray(weights, np.float64)
    if weights.shape != (n,):
        raise ValueError(f"weights must hold one number per row ({n}), got shape {weights.shape}")
    problems = [(np.count_nonzero(~np.isfinite(weights)), "NaN or infinite"),
                (np.count_nonzero(weights < 0), "negative"), (np.count_nonzero(weights == 0), "0")]
    for count, kind in problems:
        if count:
            raise ValueError(f"weights has {count} value(s) that are {kind}; weights must be positive and finite "
                             "(drop the rows of weight 0: they contribute nothing)")
    return weights
