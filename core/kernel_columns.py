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
from core.rows import is_dense_block, n_rows, squared_norms, stack_rows, take_rows, to_dense, transposed_rows


class KernelColumns:
    """K(X, z) for examples z named by keys, stored transposed: ``K[column, :n]`` holds one, ``Z[column]``
    its example's row (dense).

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
        self.Z = np.empty((self.K.shape[0], rows.shape[1]))
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
            kernel_rows_into(self.K, kept, old, rows, self.Z[kept], self.spec, x_sq_norms=self.sq_norms[old:],
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
        K, Z, z_sq_norms = np.empty((columns, width)), np.empty((columns, self.Z.shape[1])), np.empty(columns)
        K[:keep.size, :filled], Z[:keep.size], z_sq_norms[:keep.size] = self.K[keep, :filled], self.Z[keep], \
            self.z_sq_norms[keep]
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
            self.Z[columns], self.z_sq_norms[columns] = to_dense(Z), z_sq_norms
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


@numba.njit(**NJIT)
def _keep_values(K, columns, at):
    """``K[c, :at.size] = K[c, at]`` for the kept ``columns`` c, in place: ``at`` increases, so each value moves
    down or stays.  (numpy's ``K[:, :m] = K[:, at]`` copied every row of the store, free ones too, through a new
    array: 2.6% of the slant path's time on ijcnn1, ``bench/HISTORY.md``.)"""
    for c in columns:
        row = K[c]
        for j in range(at.shape[0]):
            row[j] = row[at[j]]
