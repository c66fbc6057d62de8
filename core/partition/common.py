"""Helpers shared by partition functions."""

import hashlib
import json

import numba
import numpy as np

from core import kernels
from core.config import NJIT
from core.kernels import KernelSpec, kernel_block
from core.partition.data import PartitionData
from core.rows import as_rows, is_sparse, n_rows, take_rows


def kernel_times(data, rows, coef, kernel, at=None):
    """sum_j coef_j K(x_i, z_j) for every row x_i of the partition, or for its rows ``at`` (indices, each with the
    bits it has in the call over every row) (``core.kernels.kernel_times``); zeros when ``rows`` is empty
    (whatever its width: a round that changed no variable)."""
    n = len(data) if at is None else len(at)
    if n_rows(rows) == 0 or n == 0:
        return np.zeros(n)
    spec = kernel if isinstance(kernel, KernelSpec) else KernelSpec.from_dict(kernel)
    if at is None:
        return kernels.kernel_times(data.rows, rows, spec, coef, x_sq_norms=data.sq_norms)
    return kernels.kernel_times(take_rows(data.rows, at), rows, spec, coef, x_sq_norms=data.sq_norms[at],
                                shaped_as=data.rows)


def locate(data, ids):
    """Positions in the partition of those ``ids`` it holds, and which of ``ids`` they are."""
    if len(ids) == 0:  # most slant rounds release none: ~20 us of searches for nothing
        return np.zeros(0, np.intp), np.zeros(0, np.intp)
    order = data.id_order
    pos = np.searchsorted(data.ids, ids, sorter=order)
    pos = np.minimum(pos, len(data) - 1)
    local = order[pos] if len(data) else pos
    found = (data.ids[local] == ids) if len(data) else np.zeros(len(ids), bool)
    return local[found], np.flatnonzero(found)


def top_k(values, mask, k, largest, ties):
    """Indices of the k largest (or smallest) ``values`` where ``mask`` holds, best first.

    Exact ties go to the smaller content key, then the smaller id (``ties`` = ``(data.keys, data.ids)``, see
    ``PartitionData.keys``), so that the k are the first k of one total order: the same examples whatever
    the row order, and the union of the partitions' top k holds the global top k.  One pass over the
    rows keeping the best k in order (``_best_first``): a partition's selection each round, where a
    partial sort of the masked values cost ~0.15 ms on 25,000 rows (a fifth of a slant round).
    """
    keys, ids = ties
    return _best_first(np.asarray(values, dtype=np.float64), np.asarray(mask, dtype=np.bool_), int(k),
                       bool(largest), np.asarray(keys, dtype=np.uint64), np.asarray(ids, dtype=np.int64))


@numba.njit(**NJIT)
def unique_inverse(values):
    """``np.unique(values, return_inverse=True)`` for a 1-d int64 array: its sorted distinct values, and each
    value's position among them.  For the few dozen values of a slant round's answer, np.unique's Python took
    about 45 us a call inside a path (885 calls, 4% of ijcnn1's), where this takes a microsecond or two."""
    order = np.argsort(values, kind="mergesort")
    distinct, inverse = np.empty(values.size, np.int64), np.empty(values.size, np.int64)
    k = -1
    for j in range(values.size):
        value = values[order[j]]
        if k < 0 or value != distinct[k]:
            k += 1
            distinct[k] = value
        inverse[order[j]] = k
    return distinct[:k + 1].copy(), inverse


@numba.njit(**NJIT)
def ranks_before(value_a, key_a, id_a, value_b, key_b, id_b):
    """Whether example a ranks before example b: a larger value, then a smaller content key, then a smaller
    id (the order of ``top_k``'s ties)."""
    if value_a != value_b:
        return value_a > value_b
    if key_a != key_b:
        return key_a < key_b
    return id_a < id_b


@numba.njit(**NJIT)
def _ahead(a, b, values, sign, keys, ids):
    """Whether entry a ranks before entry b by sign * value (``ranks_before``)."""
    return ranks_before(sign * values[a], keys[a], ids[a], sign * values[b], keys[b], ids[b])


@numba.njit(**NJIT)
def _best_first(values, mask, k, largest, keys, ids):
    """The best min(k, mask.sum()) entries of ``mask`` in rank order (``_ahead``), in one pass: a sorted list
    of at most k, which an entry ahead of its last (all entries until it is full) joins at the place a
    binary search finds, the entries after it moving down (a full list drops its last)."""
    sign = 1.0 if largest else -1.0
    k = min(k, values.shape[0])
    best = np.empty(k, dtype=np.int64)
    size = 0
    last = -np.inf  # sign * the value of the full list's last entry: entries below it never join
    for i in range(values.shape[0]):
        if not mask[i] or k == 0 or sign * values[i] < last:
            continue
        if size == k and not _ahead(i, best[k - 1], values, sign, keys, ids):
            continue
        lo, hi = 0, size  # the first place whose entry i is ahead of
        while lo < hi:
            mid = (lo + hi) // 2
            if _ahead(i, best[mid], values, sign, keys, ids):
                hi = mid
            else:
                lo = mid + 1
        size = min(size + 1, k)
        for j in range(size - 1, lo, -1):
            best[j] = best[j - 1]
        best[lo] = i
        if size == k:
            last = sign * values[best[k - 1]]
    return best[:size]


def feature_map_request(kernel, centers, proj):
    """Request entries under which a partition function sees explicit features instead of its rows.

    The map is phi(x) = K(x, centers) P: ``centers`` an (m, p) row block,
    ``proj`` P either an (m,) vector (a diagonal P) or an (m, r) matrix, so
    that phi(x) . phi(z) = K(x, centers) P P^T K(centers, z).  ``map_key``
    is a digest of the map, under which partitions keep the mapped rows
    (see ``feature_mapped``): requests after the first may carry the key alone.
    """
    spec = kernel if isinstance(kernel, KernelSpec) else KernelSpec.from_dict(kernel)
    centers = as_rows(centers)
    proj = np.ascontiguousarray(proj, dtype=np.float64)
    if proj.ndim not in (1, 2) or proj.shape[0] != n_rows(centers):
        raise ValueError(f"proj must have one row per center ({n_rows(centers)}), got shape {proj.shape}")
    return {"map_key": content_key(spec, centers, proj), "map_kernel": spec.to_dict(), "map_centers": centers,
            "map_proj": proj}


def content_key(kernel, *arrays):
    """A digest of ``kernel`` (a ``KernelSpec``) and ``arrays`` (row blocks, dense or CSR, and vectors): the key
    under which a partition keeps what it computed from them, so that a later request with the same content,
    from the same fit or another on the same engine, reuses it."""
    digest = hashlib.blake2b(json.dumps(kernel.to_dict(), sort_keys=True).encode(), digest_size=16)
    for block in arrays:
        for array in (block.data, block.indices, block.indptr) if is_sparse(block) else (block,):
            array = np.asarray(array)
            digest.update(f"{array.dtype.str}{array.shape}".encode())
            digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def feature_mapped(data, state, request):
    """The partition seen through the request's feature map (``data`` itself when it has none).

    The mapped rows are computed once per ``map_key`` and kept in
    ``state["mapped"]``; a request whose key is not the kept one must carry
    the whole map (``feature_map_request``).
    """
    key = request.get("map_key")
    if key is None:
        return data
    kept = state.get("mapped")
    if kept is not None and kept[0] == key:
        return kept[1]
    if "map_centers" not in request:
        raise ValueError(f"feature map {key} is neither kept by this partition nor carried by the request")
    K = kernel_block(data.rows, request["map_centers"], KernelSpec.from_dict(request["map_kernel"]),
                     x_sq_norms=data.sq_norms)
    proj = request["map_proj"]
    mapped = PartitionData.build(K * proj if proj.ndim == 1 else K @ proj, data.y, data.weight, data.ids)
    state["mapped"] = (key, mapped)
    return mapped
