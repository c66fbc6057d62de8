"""Row blocks: coercion, validation and the helpers of core.rows."""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal

from core.rows import (LARGEST_FEATURE, TransposedRows, as_rows, is_csr_block, is_sparse, n_rows, squared_norms,
                       stack_rows, take_rows, to_csr, to_dense, transposed_rows)


def _csr(X):
    return sp.csr_matrix(np.asarray(X, dtype=np.float64))


@pytest.mark.parametrize("X", [[[1, 2], [3, 4]], np.array([[1, 2], [3, 4]], np.int32),
                               np.asfortranarray([[1.0, 2.0], [3.0, 4.0]]), np.array([[1, 2], [3, 4]], np.float32)])
def test_dense_input_becomes_c_contiguous_float64(X):
    R = as_rows(X)
    assert type(R) is np.ndarray and R.dtype == np.float64 and R.flags.c_contiguous
    assert_array_equal(R, [[1.0, 2.0], [3.0, 4.0]])


@pytest.mark.parametrize("fmt", ["coo", "csc", "lil", "dok", "csr_array", "coo_array"])
def test_any_sparse_format_becomes_csr_matrix(fmt):
    X = np.array([[0, 2, 0], [1, 0, 3]])
    S = sp.coo_array(X).asformat(fmt.split("_")[0]) if fmt.endswith("array") else sp.coo_matrix(X).asformat(fmt)
    R = as_rows(S)
    assert type(R) is sp.csr_matrix and R.dtype == np.float64 and R.has_canonical_format
    assert_array_equal(R.toarray(), X)


def test_duplicates_are_summed_and_indices_sorted_without_touching_the_input():
    data, indices, indptr = np.array([1.0, 2.0, 5.0]), np.array([2, 0, 2]), np.array([0, 3])
    S = sp.csr_matrix((data, indices, indptr), shape=(1, 3))
    R = as_rows(S)
    assert R.has_canonical_format and R.nnz == 2
    assert_array_equal(R.indices, [0, 2])
    assert_array_equal(R.toarray(), [[2.0, 0.0, 6.0]])
    assert_array_equal(S.indices, [2, 0, 2])
    assert_array_equal(S.data, [1.0, 2.0, 5.0])


def test_int64_indices_become_int32_without_touching_the_input():
    S = sp.csr_matrix(np.array([[0.0, 2.0, 0.0], [1.0, 0.0, 3.0]]))
    S.indices, S.indptr = S.indices.astype(np.int64), S.indptr.astype(np.int64)  # as sklearn's svmlight reader
    R = as_rows(S)
    assert (R.indices.dtype, R.indptr.dtype) == (np.int32, np.int32)
    assert_array_equal(R.toarray(), S.toarray())
    assert (S.indices.dtype, S.indptr.dtype) == (np.int64, np.int64)
    assert is_csr_block(R) and not is_csr_block(S)  # kernels take R as it is and S through as_rows


@pytest.mark.parametrize("X", [np.ones(3), np.ones((2, 2, 2)), 5.0])
def test_not_2d_is_an_error(X):
    with pytest.raises(ValueError, match="expected a 2-D block of rows"):
        as_rows(X)


def test_1d_error_says_how_to_fix():
    with pytest.raises(ValueError, match=r"reshape\(1, -1\)"):
        as_rows(np.ones(3))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("sparse", [False, True])
def test_nan_and_inf_are_errors(bad, sparse):
    X = np.array([[1.0, 0.0], [0.0, bad]])
    with pytest.raises(ValueError, match="NaN or infinity"):
        as_rows(_csr(X) if sparse else X)


@pytest.mark.parametrize("sparse", [False, True])
def test_values_whose_squares_overflow_are_errors_and_the_largest_allowed_is_kept(sparse):
    X = np.array([[1.0, 0.0], [0.0, -1e160]])
    with pytest.raises(ValueError, match=r"magnitude up to 1e\+160, above 1e\+100: .* rescale the features"):
        as_rows(_csr(X) if sparse else X)
    X[1, 1] = -LARGEST_FEATURE
    assert np.isfinite(squared_norms(as_rows(_csr(X) if sparse else X))).all()


def test_n_features():
    with pytest.raises(ValueError, match="rows have 2 features but 3 are expected"):
        as_rows(np.ones((1, 2)), n_features=3)
    with pytest.raises(ValueError, match="rows have 4 features but 3 are expected"):
        as_rows(_csr(np.ones((1, 4))), n_features=3)
    R = as_rows(_csr([[1.0, 2.0]]), n_features=5)
    assert R.shape == (1, 5) and type(R) is sp.csr_matrix
    assert_array_equal(R.toarray(), [[1.0, 2.0, 0.0, 0.0, 0.0]])
    assert as_rows(np.ones((1, 3)), n_features=3).shape == (1, 3)


def test_kind_and_row_count():
    assert not is_sparse(as_rows(np.ones((4, 2)))) and n_rows(as_rows(np.ones((4, 2)))) == 4
    assert is_sparse(as_rows(_csr(np.ones((3, 2))))) and n_rows(as_rows(_csr(np.ones((3, 2))))) == 3


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("idx", [[2, 0, 2], np.array([True, False, True, False]), []])
def test_take_rows(sparse, idx):
    X = np.arange(12.0).reshape(4, 3)
    R = take_rows(as_rows(_csr(X) if sparse else X), idx)
    assert is_sparse(R) == sparse
    assert_array_equal(to_dense(R), X[np.asarray(idx, dtype=None if len(idx) else int)])
    if not sparse:
        assert R.flags.c_contiguous


def _bits_of(flags):
    """Bool rows packed as ``TransposedRows.bits`` holds them: bit i % 8 of byte i // 8, whole blocks of 32 rows."""
    n = flags.shape[1]
    padded = np.zeros((flags.shape[0], 32 * -(-n // 32)), bool)
    padded[:, :n] = flags
    return np.packbits(padded, axis=1, bitorder="little")


def _assert_transpose(T, X, bit_features):
    """``T`` holds X's transpose, the features ``bit_features`` as bits and the others as float64 values."""
    bitwise = np.isin(np.arange(X.shape[1]), bit_features)
    assert T.shape == X.T.shape
    assert_array_equal(T.slots < 0, bitwise)
    assert_array_equal(T.values[T.slots[~bitwise], :T.n], X.T[~bitwise])
    assert T.values.flags.c_contiguous and T.values.dtype == np.float64 and T.values.shape[1] >= T.n
    assert_array_equal(T.bits[-1 - T.slots[bitwise]], _bits_of(X.T[bitwise] == 1.0))
    assert np.signbit(T.values[:, :T.n]).sum() == np.signbit(X.T[~bitwise]).sum()


def test_transposed_rows_only_of_dense_rows_within_the_limit():
    X = np.arange(12.0).reshape(4, 3)
    _assert_transpose(transposed_rows(X, limit_bytes=X.nbytes), X, [])
    assert transposed_rows(X, limit_bytes=X.nbytes - 1) is None
    assert transposed_rows(as_rows(_csr(X)), limit_bytes=1 << 30) is None


def test_transposed_rows_keep_features_of_zeros_and_ones_as_bits_and_appends_as_values():
    """Features whose every value is +0.0 or 1.0 take a bit a row (-0.0 keeps a feature a value: its bit could
    not give the sign back); rows appended make every feature a value, in place, with room for as many rows
    again; rows taken keep each feature as it was."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(70, 6))
    X[:, 1], X[:, 4], X[:, 5] = rng.integers(0, 2, 70), 0.0, rng.integers(0, 2, 70)
    X[3, 5] = -0.0
    T = TransposedRows.of(X)
    _assert_transpose(T, X, [1, 4])
    assert T.bits.shape == (2, 12) and T.values.nbytes + T.bits.nbytes == 4 * 70 * 8 + 2 * 12
    more, at = rng.normal(size=(9, 6)), np.array([0, 5, 7, 70, 78])
    more[:, 1] = 1.0
    taken = T.take(at[:3])
    _assert_transpose(taken, X[at[:3]], [1, 4])
    taken.append(more)
    _assert_transpose(taken, np.vstack([X[at[:3]], more]), [])
    _assert_transpose(T.take(np.array([], np.int64)), X[:0], [1, 4])
    T.append(more)
    both = np.vstack([X, more])
    _assert_transpose(T, both, [])
    assert T.values.shape[1] == 2 * 79
    _assert_transpose(T.take(at), both[at], [])
    values = T.values
    T.append(more[:2])  # into the room past the rows
    assert T.values is values
    _assert_transpose(T, np.vstack([both, more[:2]]), [])
    many = rng.normal(size=(80, 6))
    T.append(many)  # beyond it: twice the rows' room
    assert T.values.shape[1] == 2 * 161
    _assert_transpose(T, np.vstack([both, more[:2], many]), [])
    _assert_transpose(TransposedRows.of(X[at[:3]]), X[at[:3]], [1, 4, 5])  # row 3's -0.0 not among them


def test_stack_rows():
    A, B = np.arange(6.0).reshape(2, 3), np.arange(3.0).reshape(1, 3) + 10
    dense = stack_rows([A, B])
    assert type(dense) is np.ndarray and dense.flags.c_contiguous
    assert_array_equal(dense, np.vstack([A, B]))
    for blocks in ([_csr(A), _csr(B)], [A, _csr(B)], [_csr(A), B]):
        R = stack_rows(blocks)
        assert type(R) is sp.csr_matrix and R.has_canonical_format
        assert_array_equal(R.toarray(), np.vstack([A, B]))
    wide = stack_rows([_csr([[1.0]]), A])
    assert_array_equal(wide.toarray(), [[1.0, 0.0, 0.0], *A])


def test_stack_rows_errors():
    with pytest.raises(ValueError, match="at least one block"):
        stack_rows([])
    with pytest.raises(ValueError, match="features"):
        stack_rows([np.ones((1, 2)), np.ones((1, 3))])


@pytest.mark.parametrize("sparse", [False, True])
def test_squared_norms(sparse):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 7)) * (rng.random((30, 7)) < 0.4)
    R = as_rows(_csr(X) if sparse else X)
    norms = squared_norms(R)
    assert norms.shape == (30,) and norms.dtype == np.float64
    assert_allclose(norms, [np.dot(x, x) for x in X], rtol=0, atol=1e-12)
    assert squared_norms(as_rows(np.ones((0, 3)))).shape == (0,)


def test_to_dense():
    X = as_rows(np.ones((2, 2)))
    assert to_dense(X) is X
    D = to_dense(as_rows(_csr([[0.0, 1.0], [2.0, 0.0]])))
    assert type(D) is np.ndarray and D.flags.c_contiguous
    assert_array_equal(D, [[0.0, 1.0], [2.0, 0.0]])


def test_to_csr():
    X = np.array([[0.0, 2.0], [3.0, 0.0]])
    csr = as_rows(sp.csr_matrix(X))
    assert to_csr(csr) is csr
    converted = to_csr(X)
    assert converted.format == "csr" and converted.has_canonical_format
    assert_array_equal(converted.toarray(), X)


def test_dense_rows_never_import_scipy_sparse():
    """is_sparse tells without importing scipy.sparse, so a fit of dense rows never imports it (0.10-0.16 s
    in a fresh process); sparse input imports it where it is made."""
    import subprocess
    import sys

    code = ("import sys, numpy as np\n"
            "from core.engine import LocalEngine\n"
            "from core.kernels import KernelSpec, kernel_block\n"
            "from core.spsvm import fit_spsvm\n"
            "from core.svc import fit_csvc\n"
            "from core.synthetic import make_rings\n"
            "X, y = make_rings(300, 4, seed=1)\n"
            "with LocalEngine(X, y, n_partitions=2) as engine:\n"
            "    fit_spsvm(engine, max_basis=10, lam=0.1, kernel=KernelSpec('rbf', gamma=0.5)).predict(X)\n"
            "    fit_csvc(engine, C=1.0, kernel=KernelSpec('rbf', gamma=0.5)).predict(X)\n"
            "print('scipy.sparse' in sys.modules)\n"
            "import scipy.sparse\n"
            "from core.rows import is_sparse\n"
            "print(is_sparse(scipy.sparse.csr_matrix(X)), is_sparse(X))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True", "False"]
