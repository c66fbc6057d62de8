"""Argument checks shared by the training functions and the Spark params."""

import numpy as np


def check_positive(**values):
    """A ValueError naming the first of ``values`` (name=value) that is not a positive finite number."""
    for name, value in values.items():
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a positive finite number, got {value!r}")
