"""The block of rows a partition holds for a whole fit; every partition function reads one."""

import functools
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from core.rows import as_rows, squared_norms, take_rows, transposed_rows
from core.sampling import example_keys


# Dense rows up to this size are also kept transposed (``PartitionData.rows_t``): at most as much memory again as
# the rows (features of 0 and 1 take a bit a row, ``core.rows.TransposedRows``).
# Up to it, a kernel block of 10-16 columns over the rows stays below the size at which ``core.kernels`` takes it
# to numba's pool for two threads, which the transposed path (one thread) would lose.
TRANSPOSED_LIMIT_BYTES = 32 << 20


@dataclass
class PartitionData:
    """One partition of the training set, fixed for the whole fit.

    ``validation``: the partition's validation rows (a ``PartitionData`` of their own), held beside the
    training rows and never trained on; the partition functions score the current model on them
    (``core.partition.validation``).  None when the fit has no validation rows.
    """

    rows: object  # float64 ndarray (n, p) or scipy CSR matrix
    y: np.ndarray  # float64 labels in {-1, +1}
    weight: np.ndarray  # float64 instance weights (ones when unweighted)
    ids: np.ndarray  # int64 ids, unique over the training set
    sq_norms: np.ndarray  # ||x_i||^2, computed once
    validation: Optional["PartitionData"] = None
    _keys: np.ndarray = field(default=None, repr=False)
    _id_order: np.ndarray = field(default=None, repr=False)

    @classmethod
    def build(cls, rows, y, weight, ids, validation=None):
        """The block of these rows; ``validation`` (a boolean mask over them, or None) marks the rows that
        are held out for validation instead of trained on."""
        rows = as_rows(rows)
        # writable arrays: numba compiles a function apart for a read-only argument (a Spark task's weight
        # column is Arrow's read-only view), so a weighted fit would compile again what an unweighted one has
        y, weight, ids = (np.require(a, dtype, ["C", "W"]) for a, dtype in ((y, np.float64), (weight, np.float64),
                                                                             (ids, np.int64)))
        if validation is None:
            return cls(rows, y, weight, ids, squared_norms(rows))
        held = np.asarray(validation, bool)
        if held.all():
            raise ValueError("a partition holds only validation rows, so it has nothing to train on: use fewer "
                             "partitions, or mark fewer rows for validation")
        train, val = np.flatnonzero(~held), np.flatnonzero(held)
        block = cls.build(take_rows(rows, train), y[train], weight[train], ids[train])
        if val.size:
            block.validation = cls.build(take_rows(rows, val), y[val], weight[val], ids[val])
        return block

    @property
    def keys(self):
        """Each example's uint64 content key (``core.sampling.example_keys``), computed on first use.

        Selections rank by their value, then by this key, then by id, so that what they pick depends on
        the examples alone, not on row order or partitioning.  Only examples identical in row, label and
        weight share a key; the id then decides between them, and swapping two such examples gives the
        same model (the problem is symmetric in them)."""
        if self._keys is None:
            self._keys = example_keys(self.rows, self.y, self.weight)
        return self._keys

    @property
    def id_order(self):
        """``np.argsort(ids, kind="stable")``, computed on first use: ``core.partition.common.locate`` finds
        ids by it every round."""
        if self._id_order is None:
            self._id_order = np.argsort(self.ids, kind="stable")
        return self._id_order

    @functools.cached_property
    def rows_t(self):
        """The rows transposed (``core.rows.transposed_rows``) when they are dense and take at most
        ``TRANSPOSED_LIMIT_BYTES``, else None; computed on first use.  Kernel columns of a few examples at a
        time over these rows (SpSVM-2's candidates) cost less from it than from the tiles of ``kernel_block``."""
        return transposed_rows(self.rows, TRANSPOSED_LIMIT_BYTES)

    def __len__(self):
        return self.y.shape[0]
