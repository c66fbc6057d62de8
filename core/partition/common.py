"""Helpers shared by partition functions."""

import numpy as np

from core.kernels import KernelSpec, kernel_block
from core.rows import n_rows

_CHUNK = 512  # columns of a kernel block computed at once when applying many rows


def kernel_times(data, rows, coef, kernel):
    """sum_j coef_j K(x_i, z_j) for every row x_i of the partition (chunked over z)."""
    spec = kernel if isinstance(kernel, KernelSpec) else KernelSpec.from_dict(kernel)
    out = np.zeros(len(data))
    m = n_rows(rows)
    for lo in range(0, m, _CHUNK):
        hi = min(lo + _CHUNK, m)
        block = rows[lo:hi]
        out += kernel_block(data.rows, block, spec, x_sq_norms=data.sq_norms) @ coef[lo:hi]
    return out


def locate(data, ids):
    """Positions in the partition of those ``ids`` it holds, and which of ``ids`` they are."""
    order = np.argsort(data.ids, kind="stable")
    pos = np.searchsorted(data.ids, ids, sorter=order)
    pos = np.minimum(pos, len(data) - 1)
    local = order[pos] if len(data) else pos
    found = (data.ids[local] == ids) if len(data) else np.zeros(len(ids), bool)
    return local[found], np.flatnonzero(found)


def top_k(values, mask, k, largest):
    """Indices of the k largest (or smallest) ``values`` where ``mask`` holds."""
    idx = np.flatnonzero(mask)
    if idx.size > k:
        v = values[idx] if largest else -values[idx]
        idx = idx[np.argpartition(-v, k - 1)[:k]]
    return idx
