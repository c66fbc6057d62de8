"""The driver's store of rows by example id, against a dict of the rows added."""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_array_equal

from core.row_store import RowLedger, RowStore
from core.rows import is_csr_block


def _rows(rng, n, sparse, n_features=5):
    X = rng.standard_normal((n, n_features))
    X[rng.random(X.shape) < 0.6] = 0.0
    X[0] = 0.0  # an empty row
    return sp.csr_matrix(X) if sparse else X


@pytest.mark.parametrize("sparse", [False, True])
def test_rows_taken_are_the_first_rows_added_under_each_id_in_any_order(sparse):
    rng = np.random.default_rng(0)
    store, reference = RowStore(), {}
    for _ in range(40):  # many small adds: the arrays grow many times
        ids = rng.choice(300, size=rng.integers(0, 30), replace=False)
        rows = _rows(rng, ids.size, sparse) if ids.size else _rows(rng, 1, sparse)[:0]
        store.add(ids, rows)
        dense = rows.toarray() if sparse else rows
        for k, i in enumerate(ids.tolist()):
            reference.setdefault(i, dense[k])  # a row sent again (by a rebuilt partition) is the same row
    assert len(store) == len(reference)
    ids = rng.permutation(np.array(list(reference), np.int64))
    taken = store.take(ids)
    assert sp.issparse(taken) == sparse and taken.shape == (ids.size, 5)
    if sparse:
        assert is_csr_block(taken)
    assert_array_equal(taken.toarray() if sparse else taken, np.array([reference[i] for i in ids.tolist()]))
    assert store.take(ids[:0]).shape == (0, 5)


def test_csr_rows_of_fewer_columns_are_taken_with_the_most():
    store = RowStore()
    store.add(np.array([7]), sp.csr_matrix([[0.0, 2.0]]))
    store.add(np.array([3]), sp.csr_matrix([[1.0, 0.0, 0.0, 4.0]]))
    assert_array_equal(store.take(np.array([3, 7])).toarray(), [[1, 0, 0, 4], [0, 2, 0, 0]])


def test_a_store_counts_its_bytes():
    store = RowStore()
    assert store.nbytes == 0
    store.add(np.arange(100), np.ones((100, 4)))
    assert store.nbytes >= 100 * 4 * 8
    with pytest.raises(KeyError):
        store.take(np.array([100]))


def test_a_ledger_shares_each_row_once_under_a_key_of_its_own():
    first, second = RowLedger(), RowLedger()
    assert first.key != second.key
    assert_array_equal(first.to_share(np.array([5, 3, 9])), [True, True, True])
    assert_array_equal(first.to_share(np.array([9, 4, 5])), [False, True, False])
    first.shared.clear()  # the partitions rebuilt their state
    assert_array_equal(first.to_share(np.array([9])), [True])
