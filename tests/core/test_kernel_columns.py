"""KernelColumns: kept kernel columns equal the naive kernel, the least recently used give way, a round keeps
what it uses, added rows complete every kept column (dropped ones leave them), and a dense store's columns are
``kernel_block``'s to the bit."""

import numpy as np
import scipy.sparse as sp

from core.kernel_columns import KernelColumns
from core.kernels import KernelSpec, kernel_block
from tests.naive import naive_kernel

KERNEL = KernelSpec("rbf", gamma=0.7)


def _column(columns, key, rows):
    return columns.K[columns.get([key], lambda _: rows)[0], :columns.n]


def test_columns_are_the_kernel_and_the_least_recently_used_gives_way():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    columns = KernelColumns(X, KERNEL, limit_bytes=8 * 30 * 2)  # room for 2
    at = columns.get([10, 11], lambda fresh: X[[10, 11]][fresh])
    np.testing.assert_allclose(columns.K[at, :30], naive_kernel(X, X[[10, 11]], KERNEL).T, rtol=1e-13)
    columns.begin_round()
    _column(columns, 11, X[[11]])  # 10 is now the least recently used
    _column(columns, 12, X[[12]])
    assert set(columns.column_of) == {11, 12}
    columns.begin_round()
    at = columns.get([1, 2, 3], lambda fresh: X[[1, 2, 3]][fresh])  # beyond the limit in one round: more rows
    assert len(set(at.tolist())) == 3 and columns.K.shape[0] >= 3
    np.testing.assert_allclose(columns.K[at, :30], naive_kernel(X, X[[1, 2, 3]], KERNEL).T, rtol=1e-13)


def test_rows_added_complete_every_kept_column():
    rng = np.random.default_rng(1)
    X, more = sp.csr_matrix(rng.normal(size=(20, 4)) * (rng.random((20, 4)) < 0.5)), rng.normal(size=(50, 4))
    columns = KernelColumns(X, KERNEL, limit_bytes=1 << 20)
    z = X[[3]].toarray()
    before = _column(columns, 3, z).copy()
    columns.add_rows(sp.csr_matrix(more))  # beyond the width of K: a wider K, the column kept
    assert columns.n == 70 and 3 in columns.column_of
    after = _column(columns, 3, z).copy()
    np.testing.assert_array_equal(after[:20], before)
    np.testing.assert_allclose(after, naive_kernel(np.vstack([X.toarray(), more]), z, KERNEL)[:, 0], rtol=1e-13)
    keep = np.arange(70) % 3 != 0  # rows dropped: from the kept columns too
    columns.keep_rows(keep)
    np.testing.assert_array_equal(_column(columns, 3, z), after[keep])


def test_dense_rows_kept_transposed_give_a_column_the_same_bits_however_its_rows_came():
    """Dense rows within the store's memory are kept transposed: a column completed over rows added later, or
    over rows that were dropped, holds the same bits as the column of a store built over those rows at once;
    rows beyond the store's memory are not transposed, and their columns are still the kernel."""
    rng = np.random.default_rng(2)
    X, more = rng.normal(size=(40, 6)), rng.normal(size=(1_100, 6))  # 1,140 rows: two of the transpose's tiles
    X[:, [0, 2]], more[:, 0] = rng.integers(0, 2, (40, 2)), rng.integers(0, 2, 1_100)  # 0 and 1: features as bits
    z = X[[5]]
    grown = KernelColumns(X, KERNEL, limit_bytes=1 << 20)
    assert grown.rows_t.shape == (6, 40) and list(grown.rows_t.slots < 0) == [True, False, True, False, False, False]
    _column(grown, 5, z)
    grown.add_rows(more[:1_000])
    grown.add_rows(more[1_000:])  # into the room past the rows, of the block and of its transpose
    assert grown.rows_t.shape == (6, 1_140) and not np.any(grown.rows_t.slots < 0)  # a store that grows: values
    assert grown.rows_t.values.shape[1] > 1_140
    whole = KernelColumns(np.vstack([X, more]), KERNEL, limit_bytes=1 << 20)
    np.testing.assert_array_equal(grown.rows, np.vstack([X, more]))
    np.testing.assert_array_equal(_column(grown, 5, z), _column(whole, 5, z))
    np.testing.assert_array_equal(_column(grown, 9, X[[9]]), _column(whole, 9, X[[9]]))  # a column after them
    keep = np.arange(1_140) % 4 != 1
    grown.keep_rows(keep)
    np.testing.assert_array_equal(_column(grown, 7, X[[7]]), _column(KernelColumns(np.vstack([X, more])[keep], KERNEL,
                                                                                   limit_bytes=1 << 20), 7, X[[7]]))
    large = KernelColumns(more, KERNEL, limit_bytes=more.nbytes - 1)
    assert large.rows_t is None
    np.testing.assert_allclose(_column(large, 0, more[[0]]), naive_kernel(more, more[[0]], KERNEL)[:, 0], rtol=1e-13)


def test_rows_dropped_leave_every_kept_column_and_spare_the_free_ones():
    """``keep_rows`` moves each kept column's values of the kept rows down in place; the rows of K no column
    holds are left as they were (a later column fills its row whole)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 5))
    columns = KernelColumns(X, KERNEL, limit_bytes=8 * 40 * 6)  # room for 6
    at = columns.get([4, 9, 17], lambda fresh: X[[4, 9, 17]][fresh])
    before = columns.K[at, :40].copy()
    free = np.setdiff1d(np.arange(columns.K.shape[0]), at)
    columns.K[free] = -1.0
    keep = rng.random(40) < 0.6
    columns.keep_rows(keep)
    np.testing.assert_array_equal(columns.K[at, :columns.n], before[:, keep])
    assert (columns.K[free] == -1.0).all()
    np.testing.assert_allclose(_column(columns, 30, X[[30]]), naive_kernel(X[keep], X[[30]], KERNEL)[:, 0],
                               rtol=1e-13)


def test_a_dense_stores_columns_are_the_kernel_blocks_bits():
    """Columns computed from the rows' transpose without ``kernel_rows_into``'s checks hold ``kernel_block``'s
    values to the bit, features kept as bits among them."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(70, 5))
    X[:, 1] = rng.integers(0, 2, 70)
    columns = KernelColumns(X, KERNEL, limit_bytes=1 << 20)
    assert columns.rows_t is not None
    at = columns.get([3, 8, 20], lambda fresh: X[[3, 8, 20]][fresh])
    np.testing.assert_array_equal(columns.K[at, :70], kernel_block(X, X[[3, 8, 20]], KERNEL, transposed=True))


def test_column_is_get_of_one_key_and_computes_no_kept_column_again():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(30, 4))
    columns = KernelColumns(X, KERNEL, limit_bytes=1 << 20)
    first = columns.column(6, lambda fresh: X[[6]])
    assert isinstance(first, int) and columns.column_of == {6: first}

    def computed_again(fresh):
        raise AssertionError(f"the kept column of {fresh} computed again")

    columns.begin_round()
    assert columns.column(6, computed_again) == first == columns.get([6], computed_again)[0]
    assert columns.used[first] == columns.round
    np.testing.assert_array_equal(columns.K[first, :30], kernel_block(X, X[[6]], KERNEL, transposed=True)[0])
