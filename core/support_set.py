"""The driver's record of the current support set: ids, labels, rows, alphas.

The driver holds O(support + working set): every example whose dual
variable is non-zero has passed through a working set, which brought its
row along; examples whose variable returns to zero are dropped.
"""

import numpy as np

from core.rows import stack_rows, take_rows


class SupportSet:
    """Mutable map id -> (alpha, y, row) of the examples with alpha != 0."""

    def __init__(self):
        self._alpha = {}
        self._y = {}
        self._row = {}

    def __len__(self):
        return len(self._alpha)

    def update(self, ids, alpha, y, rows):
        """Record new alphas for a working set (rows: its row block, same order)."""
        for k, i in enumerate(ids.tolist()):
            if alpha[k] != 0.0:
                if i not in self._alpha:
                    self._y[i] = float(y[k])
                    self._row[i] = take_rows(rows, np.array([k]))
                self._alpha[i] = float(alpha[k])
            elif i in self._alpha:
                del self._alpha[i], self._y[i], self._row[i]

    def scale(self, factor):
        """Multiply every alpha by ``factor`` > 0."""
        for i in self._alpha:
            self._alpha[i] *= factor

    def sums(self):
        """(sum alpha, sum alpha^2) over the whole training set."""
        a = np.fromiter(self._alpha.values(), np.float64, len(self._alpha))
        return float(a.sum()), float(a @ a)

    def arrays(self, n_features):
        """(ids, rows, y, alpha) sorted by id; ``rows`` is dense or CSR like the inputs."""
        ids = np.array(sorted(self._alpha), np.int64)
        if ids.size == 0:
            return ids, np.zeros((0, n_features)), np.zeros(0), np.zeros(0)
        rows = stack_rows([self._row[i] for i in ids.tolist()])
        y = np.array([self._y[i] for i in ids.tolist()])
        alpha = np.array([self._alpha[i] for i in ids.tolist()])
        return ids, rows, y, alpha
