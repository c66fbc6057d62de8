"""Kernel columns kept for reuse: K(x_i, z) over the rows x_i of a block, one column per example z, the
least recently used given up beyond a memory limit.

The slant sparsifier (``core.slant``) steps on the same examples again and again (its support vectors,
and the steps a round refuted): each partition keeps the columns of its rows, and the driver those of
the examples it holds, whose number grows (rows added complete every kept column, in one kernel block).
A store of dense rows also keeps their transpose, from which a column costs a quarter to two thirds less
than from the rows (``kernel_rows_into``'s ``x_transposed``), when it takes no more memory than the columns may.
Rows added are few against many columns, whose values over them the tiles compute in a third of the
transpose's time (14 rows against 128 columns: 17 against 49 us, the same bits); dense rows and their transpose
grow in place, with room kept past their end as the columns' width does.
"""

import numba
import numpy as np

from core.config import NJIT
from core.kernels import kernel_rows_from_transposed, kernel_rows_into
from core.rows import (as_rows, csr_from_arrays, is_dense_block, is_sparse, n_rows, squared_norms, stack_rows,
                       take_rows, to_csr, to_dense, transposed_rows)


class KernelColumns:
    """K(X, z) for examples z named by keys, stored transposed: ``K[column, :n]`` holds one, ``Z.take([column])``
    its example's row (``_DenseRows`` for dense X, ``_SparseRows`` for CSR X).

    ``rows``: the block X, to which ``add_rows`` appends (``sq_norms``: its squared row norms, when known);
    ``spec``: the kernel.  The columns take at most ``limit_bytes`` (at least ``min_columns`` of them),
    except that a column used since ``begin_round`` is never given up: a round that uses more gets more.
    Dense rows of at most ``limit_bytes`` are also kept transposed (``rows_t``, else None), and every value
    is then ``kernel_block``'s to the bit, whatever the columns computed with it.
    """

    def __init__(self, rows, spec, limit_bytes, min_columns=1, sq_norms=None):
        self._block, self.spec = rows, spec  # the rows, and dense ones' room to grow (``rows``)
        self.sq_norms = squared_norms(rows) if sq_norms is None else sq_norms
        self.limit_bytes, self.min_columns = limit_bytes, min_columns
        self.n = n_rows(rows)
        self.rows_t = transposed_rows(rows, self.limit_bytes)
        self.K = np.empty((self._most(self.n), self.n))  # its pages are touched as columns come
        self.Z = (_SparseRows if is_sparse(rows) else _DenseRows)(self.K.shape[0], rows.shape[1])
        self.z_sq_norms = np.empty(self.K.shape[0])
        self.column_of = {}  # key -> row of K
        self.key_at = np.full(self.K.shape[0], -1, np.int64)  # row of K -> key (-1: free)
        self.used = np.zeros(self.K.shape[0], np.int64)  # row of K -> round of its last use
        self.round = 1

    @property
    def rows(self):
        """The block X."""
        return self._block[:self.n] if is_dense_block(self._block) else self._block

    def _most(self, width):
        return max(self.min_columns, self.limit_bytes // (8 * max(width, 1)))

    def __contains__(self, key):
        """Whether the column of the example ``key`` is kept."""
        return key in self.column_of

    def begin_round(self):
        """The columns used from now on are kept until the next call."""
        self.round += 1

    def add_rows(self, rows):
        """Append ``rows`` to the block and complete every kept column over them."""
        old = self.n
        self._append(rows)
        self.sq_norms = np.concatenate([self.sq_norms, squared_norms(rows)])
        if self.n > self.K.shape[1]:  # twice the width, with the most recently used columns that fit
            width = 2 * self.n
            keep = np.argsort(-self.used, kind="stable")[:max(self._most(width), int(np.sum(self.used == self.round)))]
            keep = keep[self.key_at[keep] >= 0]
            self._resize(keep, max(self._most(width), keep.size), width, old)
        kept = np.flatnonzero(self.key_at >= 0)
        if kept.size:
            kernel_rows_into(self.K, kept, old, rows, self.Z.take(kept), self.spec, x_sq_norms=self.sq_norms[old:],
                             z_sq_norms=self.z_sq_norms[kept])

    def _append(self, rows):
        """``rows`` after the block's: dense ones into the room past its end (twice the rows' room when full), and
        into the transpose while it takes at most the memory the columns may."""
        n = self.n + n_rows(rows)
        if not (is_dense_block(self._block) and is_dense_block(rows)):
            self._block, self.rows_t, self.n = stack_rows([self.rows, rows]), None, n
            return
        if n > self._block.shape[0]:
            block = np.empty((2 * n, self._block.shape[1]))
            block[:self.n] = self.rows
            self._block = block
        self._block[self.n:n] = rows
        self.n = n
        if self.rows_t is not None and self.rows.nbytes <= self.limit_bytes:  # ``transposed_rows``' limit
            self.rows_t.append(rows)
        else:
            self.rows_t = None

    def keep_rows(self, keep):
        """Drop the block's rows where the mask ``keep`` is False, from every kept column too."""
        at = np.flatnonzero(keep)
        self._block, self.sq_norms = take_rows(self.rows, at), self.sq_norms[at]
        self.rows_t = None if self.rows_t is None else self.rows_t.take(at)
        _keep_values(self.K, np.flatnonzero(self.key_at >= 0), at)
        self.n = at.size

    def _resize(self, keep, columns, width, filled):
        """``K`` of ``columns`` x ``width``, with the columns ``keep`` (their first ``filled`` values) first."""
        K, z_sq_norms = np.empty((columns, width)), np.empty(columns)
        K[:keep.size, :filled], z_sq_norms[:keep.size] = self.K[keep, :filled], self.z_sq_norms[keep]
        Z = self.Z.resized(keep, columns)
        key_at = np.full(columns, -1, np.int64)
        key_at[:keep.size] = self.key_at[keep]
        used = np.zeros(columns, np.int64)
        used[:keep.size] = self.used[keep]
        self.K, self.Z, self.z_sq_norms, self.key_at, self.used = K, Z, z_sq_norms, key_at, used
        self.column_of = {int(key): j for j, key in enumerate(key_at[:keep.size])}

    def get(self, keys, rows_of):
        """Rows of ``K`` holding the columns of the examples ``keys``: those not kept are computed, in one
        kernel block (``rows_of(indices)``: the rows of those of ``keys``)."""
        at = np.empty(len(keys), np.int64)
        fresh = []
        for j, key in enumerate(keys):
            column = self.column_of.get(key)
            if column is None:
                column = self._free_column()
                if self.key_at[column] >= 0:
                    del self.column_of[int(self.key_at[column])]
                self.column_of[key], self.key_at[column] = column, key
                fresh.append(j)
            self.used[column] = self.round
            at[j] = column
        if fresh:
            columns, Z = at[fresh], rows_of(fresh)
            z_sq_norms = squared_norms(Z)
            self.Z.put(columns, Z)
            self.z_sq_norms[columns] = z_sq_norms
            if self.rows_t is not None and is_dense_block(Z):  # arguments right by construction: no checks
                kernel_rows_from_transposed(self.K, columns, 0, self.rows_t, self.sq_norms, Z, z_sq_norms, self.spec)
            else:
                kernel_rows_into(self.K, columns, 0, self.rows, Z, self.spec, x_sq_norms=self.sq_norms,
                                 z_sq_norms=z_sq_norms, x_transposed=self.rows_t)
        return at

    def column(self, key, rows_of):
        """``get([key], rows_of)[0]``, with no arrays made when the column is kept (the slant driver asks for one
        column a step, ~5,000 times a path on ijcnn1, most of them kept)."""
        column = self.column_of.get(key)
        if column is None:
            return int(self.get([key], rows_of)[0])
        self.used[column] = self.round
        return column

    def _free_column(self):
        """A row of ``K`` for a new column: a free one, else the least recently used, else (every one used
        this round) one of twice as many."""
        column = int(self.used.argmin())
        if self.used[column] < self.round:  # free ones were never used
            return column
        size = self.K.shape[0]
        self._resize(np.arange(size), 2 * size, self.K.shape[1], self.n)
        return size


class _DenseRows:
    """The examples' rows of a store of dense X: row c of one (columns, p) array, the example of column c."""

    def __init__(self, columns, n_features):
        self.values = np.empty((columns, n_features))

    def take(self, columns):
        """The rows of ``columns``, a dense block."""
        return self.values[columns]

    def put(self, columns, Z):
        """Hold the rows of the block Z as those of ``columns``."""
        self.values[columns] = to_dense(Z)

    def resized(self, keep, columns):
        """A store of ``columns`` rows, the rows of ``keep`` first."""
        resized = _DenseRows(columns, self.values.shape[1])
        resized.values[:keep.size] = self.values[keep]
        return resized


class _SparseRows:
    """The examples' rows of a store of CSR X, each column's stored entries apart: a dense row per column would
    take columns x p values, 156 GiB for the 20,971 columns a store of 400 rows keeps when the rows have a
    million features (rows of text or hashed features), of which tens are stored."""

    def __init__(self, columns, n_features):
        self.n_features = n_features
        empty = (np.zeros(0), np.zeros(0, np.int32))
        self.entries = [empty] * columns  # (values, feature indices) of each column's row

    def take(self, columns):
        """The rows of ``columns``, a CSR block."""
        held = [self.entries[c] for c in columns]
        indptr = np.zeros(len(held) + 1, np.int64)
        np.cumsum([values.size for values, _ in held], out=indptr[1:])
        data = np.concatenate([values for values, _ in held]) if held else np.zeros(0)
        indices = np.concatenate([indices for _, indices in held]) if held else np.zeros(0, np.int32)
        return as_rows(csr_from_arrays(data, indices, indptr, (len(held), self.n_features)))

    def put(self, columns, Z):
        """Hold the rows of the block Z as those of ``columns``."""
        Z = to_csr(Z)
        for i, c in enumerate(columns.tolist()):
            lo, hi = Z.indptr[i], Z.indptr[i + 1]
            self.entries[c] = (Z.data[lo:hi].copy(), Z.indices[lo:hi].copy())

    def resized(self, keep, columns):
        """A store of ``columns`` rows, the rows of ``keep`` first."""
        resized = _SparseRows(columns, self.n_features)
        resized.entries[:keep.size] = [self.entries[c] for c in keep.tolist()]
        return resized


@numba.njit(**NJIT)
def _keep_values(K, columns, at):
    """``K[c, :at.size] = K[c, at]`` for the kept ``columns`` c, in place: ``at`` increases, so each value moves
    down or stays.  (numpy's ``K[:, :m] = K[:, at]`` copied every row of the store, free ones too, through a new
    array: 2.6% of the slant path's time on ijcnn1, ``bench/HISTORY.md``.)"""
    for c in columns:
        row = K[c]
        for j in range(at.shape[0]):
            row[j] = row[at[j]]
