"""Many settings in one engine session: fit each setting of a small grid (kernel and regulariser; the slant
sparsifier's step size) one after another on the same partitions, and keep the one whose kept model
validates best.

On Spark the whole grid is one barrier stage (one ``SparkEngine`` or one hosted fit): the rows reach the
tasks once, numba compiles once per task, and every setting is scored on the same validation rows.  Each
fit is the one the core function makes alone on that engine (its partition state starts afresh), so the
grid's model for a setting equals a separate fit with it.
"""

import time

import numpy as np

from core.kernels import KernelSpec
from core.selection import check_selection


def fit_grid(engine, *, function, settings, select="best", tolerance=0.0, **arguments):
    """Fit ``function(engine, **arguments, **setting, select=select, tolerance=tolerance)`` for every setting
    of ``settings`` (dicts of the core function's keyword arguments, e.g. ``{"lam": 0.1, "kernel":
    KernelSpec("rbf", gamma=0.5)}`` or ``{"eta": 0.25}``); return the model with the smallest validation error
    of its kept size (the first on ties).

    ``function`` must record a validation path (``fit_spsvm``, ``fit_ebsvm``, ``fit_slant``), and the engine
    must hold validation rows.  The model's ``metadata["grid"]`` is the table of every setting: its arguments, its
    validation path (sizes, errors), the size it kept and that size's error, its seconds; ``chosen`` is
    the index of the setting returned.
    """
    check_selection(select, tolerance, engine.n_validation)
    if not engine.n_validation:
        raise ValueError("a grid chooses its setting by the validation error, and the training data has no "
                         "validation rows: hold some out (validationFraction or validationIndicatorCol; "
                         "LocalEngine's validation mask)")
    if not settings:
        raise ValueError("settings is empty: give at least one setting to fit")
    table, best, best_model = [], None, None
    for setting in settings:
        start = time.perf_counter()
        model = function(engine, **arguments, **setting, select=select, tolerance=tolerance)
        path = model.metadata["validation"]
        table.append({"setting": _plain(setting), "sizes": path["sizes"], "error": path["error"],
                      "kept_size": path["kept_size"], "kept_error": path["kept_error"],
                      "seconds": time.perf_counter() - start})
        if best is None or path["kept_error"] < table[best]["kept_error"]:
            best, best_model = len(table) - 1, model
    best_model.metadata["grid"] = {"settings": table, "chosen": best, "select": select,
                                   "tolerance": float(tolerance)}
    return best_model


def _plain(setting):
    """A setting as JSON-able values (a KernelSpec as its dict)."""
    return {key: value.to_dict() if isinstance(value, KernelSpec) else
            (value.item() if isinstance(value, np.generic) else value) for key, value in setting.items()}
