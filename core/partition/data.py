"""The block of rows a partition holds for a whole fit; every partition function reads one."""

from dataclasses import dataclass

import numpy as np

from core.rows import as_rows, squared_norms


@dataclass
class PartitionData:
    """One partition of the training set, fixed for the whole fit."""

    rows: object  # float64 ndarray (n, p) or scipy CSR matrix
    y: np.ndarray  # float64 labels in {-1, +1}
    weight: np.ndarray  # float64 instance weights (ones when unweighted)
    ids: np.ndarray  # int64 ids, unique over the training set
    sq_norms: np.ndarray  # ||x_i||^2, computed once

    @classmethod
    def build(cls, rows, y, weight, ids):
        rows = as_rows(rows)
        return cls(rows, np.asarray(y, np.float64), np.asarray(weight, np.float64),
                   np.asarray(ids, np.int64), squared_norms(rows))

    def __len__(self):
        return self.y.shape[0]

