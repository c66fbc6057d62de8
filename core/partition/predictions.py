"""The fitted model's predictions on a partition's own rows: how many fall on each side of f(x) = 0."""

import numpy as np

from core.partition.common import kernel_times


def count_positive(data, state, request):
    """Rows of the partition where f(x) = sum_j coef_j K(x, s_j) + bias > 0 (the positive class), of all.

    ``request``: ``rows``, ``coef``, ``bias``, ``kernel`` (a KernelSpec's dict) of the expansion.  The
    partition's state is neither read nor changed, so a rebuilt partition answers the same."""
    f = kernel_times(data, request["rows"], request["coef"], request["kernel"]) + request["bias"]
    return state, {"positive": int(np.count_nonzero(f > 0)), "rows": len(data)}
