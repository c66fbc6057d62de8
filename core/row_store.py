"""Rows by example id, so that each crosses the wire once (the dual decomposition's, ``core.dual``).

Every round each partition reports its most violating examples with their rows, and most are the
examples it reported the round before: on ijcnn1 only 10% of the rows a partition reported in a C-SVC
fit were new (budget-L1: 23%).  Every round the driver sends every partition the rows of the working
set's changed variables, and most were sent before (84% in that C-SVC fit; 63% for budget-L1).  So the
driver keeps every row it receives (``RowLedger.received``) and notes which it has sent to all
(``shared``), each partition keeps the rows it receives, and either side sends the rows the other does
not hold, under the ledger's ``key``.  The partitions forget both records whenever the key changes (a
new solve, or a ledger started again for its size) and whenever they rebuild their state (a task
restarted, or a round whose answers the driver lost), when the driver forgets ``shared`` too: a
partition then sends rows the driver may hold already, which ``RowStore.add`` passes over.

A ``RowStore`` keeps dense rows in one array, CSR rows as one array of values and one of column indices
with each row's span; all grow by doubling, so a row is copied once on arrival, not at every add.
"""

import secrets

import numpy as np

from core.rows import csr_from_arrays, is_sparse, to_csr, to_dense


def _room(array, needed):
    """``array`` itself, or a copy with room for at least ``needed`` entries along axis 0 (twice as many)."""
    if needed <= array.shape[0]:
        return array
    grown = np.empty((max(needed, 2 * array.shape[0]),) + array.shape[1:], array.dtype)
    grown[: array.shape[0]] = array
    return grown


class RowStore:
    """Map example id -> row, dense or CSR as the first rows added are (a CSR row may have fewer columns
    than another: taken together, they have the most)."""

    def __init__(self):
        self.n_features = 0
        self._slot = {}  # id -> row slot
        self._sparse = None  # decided by the first rows added
        self._dense = self._values = self._columns = np.empty(0)
        self._span = np.empty((0, 2), np.int64)  # a CSR row's [start, stop) in _values and _columns
        self._stored = 0  # CSR values held

    def __len__(self):
        return len(self._slot)

    @property
    def nbytes(self):
        """Bytes the store has allocated."""
        return self._dense.nbytes + self._values.nbytes + self._columns.nbytes + self._span.nbytes

    def add(self, ids, rows):
        """Keep the rows of the examples ``ids`` that the store does not hold yet (``rows``: their block,
        in the order of ``ids``)."""
        if self._sparse is None:
            self._sparse = is_sparse(rows)
            self._dense = np.empty((0, rows.shape[1]))
            self._columns = np.empty(0, np.int64 if rows.shape[1] >= 2**31 else np.int32)
        self.n_features = max(self.n_features, rows.shape[1])
        new = [k for k, i in enumerate(ids.tolist()) if i not in self._slot]
        if not new:
            return
        first = len(self._slot)
        self._slot.update(zip(ids[new].tolist(), range(first, first + len(new))))
        if not self._sparse:
            self._dense = _room(self._dense, first + len(new))
            self._dense[first: first + len(new)] = to_dense(rows[new])
            return
        block = to_csr(rows)[new]
        start = self._stored + block.indptr[:-1]
        self._span = _room(self._span, first + len(new))
        self._span[first: first + len(new)] = np.column_stack([start, start + np.diff(block.indptr)])
        self._values = _room(self._values, self._stored + block.nnz)
        self._columns = _room(self._columns, self._stored + block.nnz)
        self._values[self._stored: self._stored + block.nnz] = block.data
        self._columns[self._stored: self._stored + block.nnz] = block.indices
        self._stored += block.nnz

    def take(self, ids):
        """The block of the rows of ``ids`` (each held), in that order."""
        slots = np.fromiter(map(self._slot.__getitem__, ids.tolist()), np.int64, ids.size)
        if not self._sparse:
            return self._dense[slots]
        start, stop = self._span[slots].T
        indptr = np.zeros(slots.size + 1, np.int64)
        np.cumsum(stop - start, out=indptr[1:])
        at = np.repeat(start - indptr[:-1], stop - start) + np.arange(indptr[-1])
        return csr_from_arrays(self._values[at], self._columns[at], indptr.astype(self._columns.dtype),
                               (slots.size, self.n_features))


class RowLedger:
    """The driver's side of the rows exchanged with the partitions under one ``key``: the rows received
    (``received``, a ``RowStore``) and the ids whose rows every partition holds (``shared``)."""

    def __init__(self):
        self.key = secrets.token_hex(8)  # names this ledger to the partitions; a new ledger has a new one
        self.received = RowStore()
        self.shared = set()

    def to_share(self, ids):
        """Which of ``ids`` the partitions do not hold yet (a boolean mask); from now on they count as held."""
        new = np.fromiter((i not in self.shared for i in ids.tolist()), bool, ids.size)
        self.shared.update(ids[new].tolist())
        return new
