"""Seeded random keys for training rows that do not depend on how the data is partitioned.

A row's key is a 64-bit hash of the seed and the row's non-zero entries
(column index and the bits of the value), so the same row gets the same key
on any engine, in any partition, dense or CSR.  "m random rows" is then
"the m rows with the smallest keys": each partition reports its m smallest
and the driver keeps the m smallest of those, the same rows whatever the
partitioning (identical rows share a key; ties keep partition order).

``example_keys`` also folds in the label and the weight: the key by which
selections break exact ties (``core.partition.data.PartitionData.keys``).
``draw_keys`` turns fixed keys into those of one numbered draw in O(n), for
methods that draw a new random subset at every step; ``smallest_drawn`` finds a
draw's first k rows in one pass, without forming them all.
"""

import numba
import numpy as np

from core.config import NJIT
from core.rows import as_rows, is_sparse

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@numba.njit(**NJIT)
def _mix(z):
    """splitmix64's finaliser: a bijection of uint64 that spreads every input bit."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@numba.njit(**NJIT)
def _fold(h, column, bits):
    return _mix(h ^ _mix(np.uint64(column) * _GOLDEN + bits))


@numba.njit(**NJIT)
def _dense_keys(X, seed):
    bits = X.view(np.uint64)
    out = np.empty(X.shape[0], np.uint64)
    for i in range(X.shape[0]):
        h = _mix(seed)
        for j in range(X.shape[1]):
            if X[i, j] != 0.0:
                h = _fold(h, j, bits[i, j])
        out[i] = h
    return out


@numba.njit(**NJIT)
def _csr_keys(data, indices, indptr, seed):
    bits = data.view(np.uint64)
    out = np.empty(indptr.shape[0] - 1, np.uint64)
    for i in range(out.shape[0]):
        h = _mix(seed)
        for q in range(indptr[i], indptr[i + 1]):
            if data[q] != 0.0:
                h = _fold(h, indices[q], bits[q])
        out[i] = h
    return out


@numba.njit(**NJIT)
def _fold_values(keys, values, tag):
    bits = values.view(np.uint64)
    out = np.empty(keys.shape[0], np.uint64)
    for i in range(keys.shape[0]):
        out[i] = _fold(keys[i], tag, bits[i])
    return out


@numba.njit(**NJIT)
def _draw_salt(draw):
    return _mix(draw * _GOLDEN)


@numba.njit(**NJIT)
def _rekey(keys, draw):
    salt = _draw_salt(draw)
    out = np.empty(keys.shape[0], np.uint64)
    for i in range(keys.shape[0]):
        out[i] = _mix(keys[i] ^ salt)
    return out


@numba.njit(**NJIT)
def _smallest_drawn(keys, draw, excluded, chosen, chosen_keys):
    """Fill ``chosen`` (positions) and ``chosen_keys`` (their draw keys), in increasing order of draw key, with
    the entries of ``keys`` outside the sorted ``excluded`` whose draw keys are the smallest; returns how many
    were found.  One pass: an entry is compared with the largest kept draw key and, when below it, looked up in
    ``excluded`` and inserted in order (about k ln(n / k) insertions for random keys)."""
    k = chosen.shape[0]
    if k == 0:
        return 0
    salt = _draw_salt(draw)
    found = 0
    for i in range(keys.shape[0]):
        drawn = _mix(keys[i] ^ salt)
        if found == k and drawn >= chosen_keys[k - 1]:
            continue
        at = np.searchsorted(excluded, keys[i])
        if at < excluded.shape[0] and excluded[at] == keys[i]:
            continue
        j = found if found < k else k - 1  # a full list gives up its largest
        while j > 0 and chosen_keys[j - 1] > drawn:
            chosen_keys[j], chosen[j] = chosen_keys[j - 1], chosen[j - 1]
            j -= 1
        chosen_keys[j], chosen[j] = drawn, i
        found = min(found + 1, k)
    return found


def row_keys(rows, seed):
    """uint64 key of every row of a dense or CSR block (see the module doc); ``seed``: int >= 0."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**64:
        raise ValueError(f"seed must be an integer in [0, 2**64), got {seed!r}")
    rows = as_rows(rows)
    if is_sparse(rows):
        return _csr_keys(rows.data, rows.indices.astype(np.int64), rows.indptr.astype(np.int64), np.uint64(seed))
    return _dense_keys(rows, np.uint64(seed))


def example_keys(rows, y, weight, seed=0):
    """uint64 key of every example: its row's key (``row_keys``) with its label and weight folded in, so that
    only examples identical in all three share a key."""
    keys = row_keys(rows, seed)
    keys = _fold_values(keys, np.ascontiguousarray(y, np.float64), np.uint64(2**64 - 1))
    return _fold_values(keys, np.ascontiguousarray(weight, np.float64), np.uint64(2**64 - 2))


def draw_keys(keys, draw):
    """The keys of draw number ``draw`` (an int >= 0): a seeded bijection of ``keys``, a fresh random order of the
    rows for every draw (the rows with the m smallest are draw ``draw``'s m random rows)."""
    return _rekey(np.ascontiguousarray(keys, np.uint64), np.uint64(draw))


def smallest_drawn(keys, draw, k, excluded):
    """The positions of the ``k`` entries of ``keys`` outside ``excluded`` (a sorted uint64 array) that come first
    in draw number ``draw`` (the smallest ``draw_keys(keys, draw)``), in that order, and their draw keys; fewer
    when fewer are left.  The same as sorting ``draw_keys`` of the entries outside ``excluded`` and keeping the
    first k, in one pass over ``keys`` without forming or sorting their draw keys (a draw per stage of SpSVM-2
    over every row of a partition: 80 us for argpartition alone on 7,500 rows)."""
    keys = np.ascontiguousarray(keys, np.uint64)
    excluded = np.ascontiguousarray(excluded, np.uint64)
    if excluded.size > 1 and np.any(excluded[1:] < excluded[:-1]):
        raise ValueError("excluded must be sorted in increasing order")
    k = min(int(k), keys.size)
    chosen, chosen_keys = np.empty(k, np.int64), np.empty(k, np.uint64)
    found = _smallest_drawn(keys, np.uint64(draw), excluded, chosen, chosen_keys)
    return chosen[:found], chosen_keys[:found]
