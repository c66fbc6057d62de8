"""The models a fit passed through on its way to its final support size: error against support size.

SpSVM-2 records beta at every basis size (``core.spsvm.truncate``) and the slant sparsifier every
step (``core.slant.slant_model_at``), so the model at any smaller support size is known without
retraining.  ``recorded_path`` writes those models as one coefficient matrix over the final support
vectors, so that one kernel block K(X, support vectors) scores every size at once, and
``path_mistakes`` counts what each size misclassifies in a block of rows.  The other methods record
no path.
"""

from dataclasses import dataclass

import numpy as np

from core.kernels import kernel_block
from core.partition.spsvm import BIAS_TERM
from core.rows import n_rows
from core.slant import slant_path_coef

MAX_POINTS = 50  # support sizes on a path, at most (a geometric grid that ends at the model's size)
SLANT_METHODS = ("slant_basic", "slant_aggressive")
BATCH = 4096  # rows of X per kernel block when scoring a path


@dataclass(frozen=True)
class SupportPath:
    """The model at each of ``sizes`` (increasing): f_r(x) = K(x, support vectors) @ coef[r] + bias[r].

    Row r of ``coef`` is aligned with the final model's support vectors, zeros beyond ``sizes[r]``.
    """

    sizes: np.ndarray
    coef: np.ndarray
    bias: np.ndarray


def recorded_path(model, max_points=MAX_POINTS):
    """The ``SupportPath`` a SpSVM-2 or slant fit recorded in ``model.metadata``, or None for a model
    with no recorded path (the other methods, SpSVM-2 trained without ``keep_path_coef``, a pruned model)."""
    method = model.metadata.get("method")
    n = model.n_support
    if method == "spsvm" and model.metadata.get("path", {}).get("coef") and n:
        stages = model.metadata["path"]["coef"]
        sizes = _grid(n, max_points)
        coef = np.zeros((sizes.size, n))
        for r, d in enumerate(sizes):  # stage d's beta sits at [d (d - 1) / 2, d (d + 1) / 2) of the path
            coef[r, :d] = stages[d * (d - 1) // 2: d * (d + 1) // 2]
        return SupportPath(sizes, coef, coef.sum(axis=1) * BIAS_TERM)  # 1 + K: the bias is sum(beta)
    if method in SLANT_METHODS and "steps" in model.metadata and n:
        sizes = _grid(n, max_points)
        return SupportPath(sizes, slant_path_coef(model, sizes), np.full(sizes.size, model.bias))
    return None


def _grid(n, max_points):
    """Every support size from 1 to n, or ``max_points`` of them evenly spaced on a log scale, n included."""
    if n <= max_points:
        return np.arange(1, n + 1)
    return np.unique(np.geomspace(1, n, num=min(max_points, n)).round().astype(np.int64))


def path_mistakes(model, path, X, y, weights=None, threshold=0.0):
    """The weighted count of the rows of X (labels ``y`` in {-1, +1}) that the model at each size of
    ``path`` misclassifies (predicts +1 where f(x) > ``threshold``); one float per size."""
    y = np.asarray(y, np.float64)
    weights = np.ones(y.shape) if weights is None else np.asarray(weights, np.float64)
    mistakes = np.zeros(path.sizes.size)
    for lo in range(0, n_rows(X), BATCH):
        K = kernel_block(X[lo:lo + BATCH], model.support_vectors, model.kernel)
        wrong = (K @ path.coef.T + path.bias > threshold) != (y[lo:lo + BATCH, None] > 0)
        mistakes += weights[lo:lo + BATCH] @ wrong
    return mistakes
