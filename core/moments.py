"""Per-group feature moments of ragged rows: the figures the checks of the training data take.

The Spark engine's tasks check their rows (``spark_bsvm.engine.blocks.partition_groups``: the training
tasks theirs, or the tasks of a job of checks before the training stage): per group of rows (one label,
validation mark and row size) and feature j, the rows' values x_ij counted as zeros where a sparse row stores
nothing:

    mean_gj     = (1 / n_g) sum_{i in g} x_ij
    variance_gj = (1 / (n_g - 1)) sum_{i in g} (x_ij - mean_gj)^2        (0 when n_g = 1)
    nonzeros_gj = #{i in g : x_ij != 0}

The variance is summed in a second pass about the mean (no sum of squares, which loses a large
mean's digits); the zeros a sparse row leaves out add (n_g - s_gj) mean_gj^2, s_gj the entries
stored for (g, j).  Rows the checks cannot use (a null row, one with a null entry) count as rows of
zeros.  The same pass flags each row holding a NaN, an
infinite value or one above ``core.rows.LARGEST_FEATURE`` in magnitude.

Rows come as Arrow stores a column of them, with no per-entry index array: row i holds the next
``lengths[i]`` values; a sparse row's columns are the next ``lengths[i]`` entries of ``indices`` (the
sparse rows' indices, one after the other), a dense row's are 0, 1, ...  Sums run in row order, as
``numpy.bincount`` would add the entries.

The checks need no feature's figures on their own, only those of all of a group's n_g x p values at once
(``value_moments``), which the tasks send in place of p numbers a figure:

    mean_g    = (1 / p) sum_j mean_gj
    squares_g = sum_j (n_g - 1) variance_gj + n_g sum_j (mean_gj - mean_g)^2

the sum of squared deviations about mean_g: those within each feature, then those of the features' means
about mean_g; each a sum of squares about a mean, so that a large mean costs it no digits.  Groups combine
the same way, their means about the mean of all their values (``spark_bsvm.engine.blocks``).
"""

import numba
import numpy as np

from core.config import NJIT
from core.rows import LARGEST_FEATURE


def group_moments(lengths, values, group_of, n_groups, width, usable, sparse=None, indices=None):
    """``mean``, ``variance`` and ``nonzeros`` as (n_groups, width) arrays, and per row whether it holds a
    value that is NaN, infinite or above ``LARGEST_FEATURE`` in magnitude (``bad_values``), of rows stored as
    the module doc says.

    ``lengths``: entries stored per row; ``values``: the entries, float64; ``group_of``: each row's group in
    0..n_groups-1; ``width``: the features (at least every row's largest column + 1); ``usable``: the rows
    whose entries count (the others count as rows of zeros); ``sparse``: per row, whether its columns come
    from ``indices`` (int32), None where every row is dense.  A ValueError when the arrays do not agree or
    a row's column lies outside ``width``.
    """
    lengths = np.ascontiguousarray(lengths, dtype=np.int64)
    values = np.ascontiguousarray(values, dtype=np.float64)
    group_of = np.ascontiguousarray(group_of, dtype=np.int64)
    usable = np.ascontiguousarray(usable, dtype=np.bool_)
    n = lengths.size
    if sparse is None:
        sparse, indices = np.zeros(n, np.bool_), np.zeros(0, np.int32)
    sparse = np.ascontiguousarray(sparse, dtype=np.bool_)
    indices = np.ascontiguousarray(indices, dtype=np.int32)
    if not (group_of.size == usable.size == sparse.size == n):
        raise ValueError(f"lengths, group_of, usable and sparse must have one entry per row: {n}, {group_of.size}, "
                         f"{usable.size}, {sparse.size}")
    if int(lengths.sum()) != values.size or int(lengths[sparse].sum()) != indices.size:
        raise ValueError(f"the rows' lengths ({int(lengths.sum())} entries, {int(lengths[sparse].sum())} of them "
                         f"in sparse rows) do not match values ({values.size}) and indices ({indices.size})")
    if n and (group_of.min() < 0 or group_of.max() >= n_groups):
        raise ValueError(f"group_of must lie in 0..{n_groups - 1}")
    rows = np.bincount(group_of, minlength=n_groups).astype(np.float64)
    sums, stored, nonzeros, squares = (np.zeros(n_groups * width) for _ in range(4))
    bad_values = np.zeros(n, np.bool_)
    outside = _sums(lengths, values, sparse, indices, group_of, usable, width, sums, stored, nonzeros, bad_values)
    if outside:
        raise ValueError(f"{outside} entries have a column outside 0..{width - 1}")
    counts = np.repeat(rows, width)
    mean = np.divide(sums, counts, out=np.zeros_like(sums), where=counts > 0)
    _squared_deviations(lengths, values, sparse, indices, group_of, usable, width, mean, squares)
    rows, shape = rows[:, None], (n_groups, width)
    mean = mean.reshape(shape)
    with np.errstate(invalid="ignore", over="ignore"):  # a NaN or an infinity makes its cells NaN: bad rows
        squares = squares.reshape(shape) + (rows - stored.reshape(shape)) * mean ** 2
    variance = np.divide(squares, rows - 1, out=np.zeros_like(squares), where=rows > 1)
    return {"mean": mean, "variance": variance, "nonzeros": nonzeros.reshape(shape), "bad_values": bad_values}


@numba.njit(**NJIT)
def _sums(lengths, values, sparse, indices, group_of, usable, width, sums, stored, nonzeros, bad_values):
    """The first pass: per row whether a value is NaN, infinite or above ``LARGEST_FEATURE`` in magnitude; per
    (group, column) cell the sum of the usable rows' entries, their count and their nonzeros.  Returns the count
    of entries whose column lies outside the width (not added)."""
    entry = at = outside = 0
    for i in range(lengths.size):
        base, m = group_of[i] * width, lengths[i]
        bad = False
        for k in range(m):
            bad |= not abs(values[entry + k]) <= LARGEST_FEATURE  # NaN too
        bad_values[i] = bad
        if usable[i] and sparse[i]:
            for k in range(m):
                column = indices[at + k]
                if column < 0 or column >= width:
                    outside += 1
                    continue
                value = values[entry + k]
                sums[base + column] += value
                stored[base + column] += 1.0
                nonzeros[base + column] += value != 0.0
        elif usable[i]:
            for k in range(min(m, width)):
                value = values[entry + k]
                sums[base + k] += value
                stored[base + k] += 1.0
                nonzeros[base + k] += value != 0.0
            outside += max(m - width, 0)
        entry += m
        if sparse[i]:
            at += m
    return outside


@numba.njit(**NJIT)
def _squared_deviations(lengths, values, sparse, indices, group_of, usable, width, mean, squares):
    """The second pass: per cell the sum of (x_ij - mean_gj)^2 over the usable rows' stored entries (those
    ``_sums`` added)."""
    entry = at = 0
    for i in range(lengths.size):
        base, m = group_of[i] * width, lengths[i]
        if usable[i] and sparse[i]:
            for k in range(m):
                column = indices[at + k]
                if 0 <= column < width:
                    deviation = values[entry + k] - mean[base + column]
                    squares[base + column] += deviation * deviation
        elif usable[i]:
            for k in range(min(m, width)):
                deviation = values[entry + k] - mean[base + k]
                squares[base + k] += deviation * deviation
        entry += m
        if sparse[i]:
            at += m


def value_moments(mean, variance, rows):
    """(mean_g, squares_g) of the module doc: the mean of all the values of a group of ``rows`` rows and their sum
    of squared deviations about it, from the group's per-feature ``mean`` and sample ``variance`` (its row of
    ``group_moments``' arrays, its features alone)."""
    center = float(mean.mean()) if mean.size else 0.0
    with np.errstate(invalid="ignore", over="ignore"):  # NaN where a value is NaN or infinite: a bad row
        return center, float((rows - 1) * variance.sum() + rows * np.square(mean - center).sum())
