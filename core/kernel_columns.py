"""Kernel columns kept for reuse: K(x_i, z) over the rows x_i of a block, one column per example z, the
least recently used given up beyond a memory limit.

The slant sparsifier (``core.slant``) steps on the same examples again and again (its support vectors,
and the steps a round refuted): each partition keeps the columns of its rows, and the driver those of
the examples it holds, whose number grows (a kept column is completed when it is next asked for).
"""

import numpy as np

from core.kernels import kernel_block
from core.rows import n_rows, squared_norms, stack_rows, take_rows


class KernelColumns:
    """K(X, z) for examples z named by keys, stored transposed: ``K[column, :n]`` holds one.

    ``rows``: the block X, to which ``add_rows`` appends; ``spec``: the kernel.  The columns take at most
    ``limit_bytes`` (at least ``min_columns`` of them), except that a column used since ``begin_round``
    is never given up: a round that uses more gets more.
    """

    def __init__(self, rows, spec, limit_bytes, min_columns=1):
        self.rows, self.sq_norms, self.spec = rows, squared_norms(rows), spec
        self.limit_bytes, self.min_columns = limit_bytes, min_columns
        self.n = n_rows(rows)
        self.K = np.empty((self._most(self.n), self.n))  # its pages are touched as columns come
        self.column_of = {}  # key -> row of K
        self.key_at = np.full(self.K.shape[0], -1, np.int64)  # row of K -> key (-1: free)
        self.filled = np.zeros(self.K.shape[0], np.int64)  # row of K -> entries computed
        self.used = np.zeros(self.K.shape[0], np.int64)  # row of K -> round of its last use
        self.round = 1

    def _most(self, width):
        return max(self.min_columns, self.limit_bytes // (8 * max(width, 1)))

    def begin_round(self):
        """The columns used from now on are kept until the next call."""
        self.round += 1

    def add_rows(self, rows):
        """Append ``rows`` to the block; the kept columns are completed as they are used."""
        self.rows = stack_rows([self.rows, rows])
        self.sq_norms = np.concatenate([self.sq_norms, squared_norms(rows)])
        self.n = n_rows(self.rows)
        if self.n > self.K.shape[1]:  # twice the width, the most recently used columns that fit
            width = 2 * self.n
            keep = np.argsort(-self.used, kind="stable")[:max(self._most(width), int(np.sum(self.used == self.round)))]
            keep = keep[self.key_at[keep] >= 0]
            K = np.empty((max(self._most(width), keep.size), width))
            K[:keep.size, :self.K.shape[1]] = self.K[keep]
            self.K = K
            self.key_at, self.filled, self.used = (np.concatenate([a[keep], np.full(K.shape[0] - keep.size, fill,
                                                                                     np.int64)])
                                                   for a, fill in ((self.key_at, -1), (self.filled, 0),
                                                                   (self.used, 0)))
            self.column_of = {int(key): j for j, key in enumerate(self.key_at[:keep.size])}

    def get(self, keys, rows):
        """Rows of ``K`` holding the columns of the examples ``keys`` (``rows``: theirs), each complete over
        the block's rows: those not kept are computed in one kernel block."""
        at = np.empty(len(keys), np.int64)
        fresh = []
        for j, key in enumerate(keys):
            column = self.column_of.get(key)
            if column is None:
                column = self._free_column()
                if self.key_at[column] >= 0:
                    del self.column_of[int(self.key_at[column])]
                self.column_of[key], self.key_at[column], self.filled[column] = column, key, 0
                fresh.append(j)
            elif self.filled[column] < self.n:
                done = self.filled[column]
                self.K[column, done:self.n] = kernel_block(take_rows(self.rows, np.arange(done, self.n)),
                                                           take_rows(rows, [j]), self.spec,
                                                           x_sq_norms=self.sq_norms[done:], transposed=True)[0]
                self.filled[column] = self.n
            self.used[column] = self.round
            at[j] = column
        if fresh:
            self.K[at[fresh], :self.n] = kernel_block(self.rows, take_rows(rows, fresh), self.spec,
                                                      x_sq_norms=self.sq_norms, transposed=True)
            self.filled[at[fresh]] = self.n
        return at

    def _free_column(self):
        """A row of ``K`` for a new column: a free one, else the least recently used, else (every one used
        this round) one of twice as many."""
        column = int(np.argmin(self.used))
        if self.used[column] < self.round:  # free ones were never used
            return column
        size = self.K.shape[0]
        self.K = np.concatenate([self.K, np.empty((size, self.K.shape[1]))])
        self.key_at = np.concatenate([self.key_at, np.full(size, -1, np.int64)])
        self.filled, self.used = (np.concatenate([a, np.zeros(size, np.int64)]) for a in (self.filled, self.used))
        return size
