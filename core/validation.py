"""Argument checks shared by the training functions, the kernel spec and the Spark params."""

import math


def check_positive(**values):
    """A ValueError naming the first of ``values`` (name=value) that is not a positive finite number."""
    for name, value in values.items():
        try:
            ok = math.isfinite(float(value)) and float(value) > 0
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ValueError(f"{name} must be a positive finite number, got {value!r}")
