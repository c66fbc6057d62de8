"""Row blocks: the two kinds of feature matrix the core handles.

A row block is either a 2-D C-contiguous float64 ``numpy.ndarray`` or a
float64 ``scipy.sparse.csr_matrix`` in canonical form (sorted column indices,
no duplicate entries).  ``as_rows`` turns user input into one of the two;
every other function here expects a block that ``as_rows`` produced.
"""

import sys

import numba
import numpy as np

from core.config import NJIT


# the largest feature magnitude the kernels take: squared norms and dot products of values near the square root
# of the largest double (1.3e154) overflow, and an RBF distance ||x||^2 + ||z||^2 - 2 x.z of infinities is NaN,
# on which a fit stalls or trains garbage; below 1e100, rows of up to 1e100 features keep them finite
LARGEST_FEATURE = 1e100


class FeatureValueError(ValueError):
    """Rows holding NaN, infinity or values above ``LARGEST_FEATURE`` in magnitude: the message names them and
    the fix for a caller of the core; ``peak`` holds the largest magnitude found (NaN or infinity where the rows
    held those), for a caller that words its own message (a model's scoring tasks name the features column)."""

    def __init__(self, message, peak):
        super().__init__(message)
        self.peak = peak


def as_rows(X, n_features=None):
    """Validate ``X`` and return it as a dense or CSR row block.

    Dense input (anything ``np.asarray`` accepts) becomes a 2-D C-contiguous
    float64 array.  Sparse input (any scipy sparse matrix or array format)
    becomes a float64 ``csr_matrix`` with sorted indices and duplicates summed,
    its indices int32 wherever they fit (scikit-learn's svmlight reader gives
    int64: numba compiles every sparse kernel apart for each index type); the
    caller's matrix is never modified.  When ``n_features`` is given, a
    sparse block with fewer columns is widened to ``n_features`` columns (the
    missing features are zero); any other column mismatch is an error.

    Raises ``ValueError`` for input that is not 2-D, holds NaN, infinity or
    values above ``LARGEST_FEATURE`` in magnitude (a ``FeatureValueError``),
    or does not have ``n_features`` columns.
    """
    if is_sparse(X):
        import scipy.sparse as sp

        if X.ndim != 2:
            raise ValueError(f"expected a 2-D block of rows, got a sparse array of shape {X.shape}")
        X = sp.csr_matrix(X, dtype=np.float64)
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()  # also sorts the indices of each row
        if not _int32_indexed(X) and _int32_fits(X):
            X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape)
        values = X.data
    else:
        try:
            X = np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError) as exc:  # rows of different lengths, None or text among the values
            raise ValueError("rows must all hold the same number of numbers (a 2-D array): found rows of different "
                             f"lengths or values that are not numbers ({type(exc).__name__})") from None
        if X.ndim != 2:
            hint = " (use x.reshape(1, -1) for a single row)" if X.ndim == 1 else ""
            raise ValueError(f"expected a 2-D block of rows, got an array of shape {X.shape}{hint}")
        X = values = np.ascontiguousarray(X)
    # two reductions, no copy of the block (a NaN makes both NaN)
    peak = np.maximum(-values.min(), values.max()) if values.size else 0.0
    if not np.isfinite(peak):
        raise FeatureValueError("rows contain NaN or infinity: impute or drop those values first", peak)
    if peak > LARGEST_FEATURE:
        raise FeatureValueError(f"rows contain values of magnitude up to {peak:.3g}, above {LARGEST_FEATURE:g}: the "
                                "kernels' squared norms of such rows overflow; rescale the features first (e.g. "
                                "standardize them)", peak)
    if n_features is not None and X.shape[1] != n_features:
        if X.shape[1] > n_features or not is_sparse(X):
            raise ValueError(f"rows have {X.shape[1]} features but {n_features} are expected: "
                             "use the feature count the model or data set was built with")
        X = csr_from_arrays(X.data, X.indices, X.indptr, (X.shape[0], n_features))
    return X


DENSE_SHARE = 0.5  # a CSR block with at least this share of nonzero values trains as a dense block


def dense_enough(nonzeros, n, p):
    """Whether rows with ``nonzeros`` nonzero values among n x p train faster as a dense block than as CSR.

    At 59% nonzero (ijcnn1, whose rows VectorAssembler makes sparse and dense in turn) a dense block's
    kernel products took 0.6-0.85x the time of the CSR block's (bench of 25,000 rows, 1 to 300 columns);
    at 22% (Forest-shaped rows) dense was faster for a few columns and slower for 100.  Dense storage then
    costs at most 8 / (12 x 0.5) = 1.33x the CSR's bytes.  The whole data set decides, by a count both
    engines make alike, so that Spark's partitions and LocalEngine's blocks are of one kind."""
    return nonzeros >= DENSE_SHARE * n * p


def is_sparse(X):
    """True when ``X`` is a scipy sparse matrix (a block: CSR), False otherwise (a block: a dense array).

    It does not import scipy.sparse to tell: until some module has, nothing can be one.  So a process that
    only ever holds dense rows (a Spark task of dense data, an in-process fit of numpy arrays) never imports
    it, which took 0.10-0.16 s in a fresh Python process, more than the rest of a training task's modules.
    A numpy array is told apart first, by its type alone: the slant path asks some 25,000 times
    (``bench/HISTORY.md``)."""
    if type(X) is np.ndarray:
        return False
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(X)


def n_rows(X):
    """Number of rows of the block."""
    return X.shape[0]


def take_rows(X, idx):
    """The rows ``idx`` (integer indices or a boolean mask) as a new block of the same kind."""
    idx = np.asarray(idx)
    if idx.size == 0:
        idx = idx.astype(np.intp)  # np.asarray([]) is float
    if is_sparse(X):
        return to_csr(X[idx])
    return np.ascontiguousarray(X[idx])


def stack_rows(blocks):
    """Stack a list of blocks vertically.

    All dense gives a dense block; any sparse block makes the result CSR.
    Sparse blocks with fewer columns are widened as in ``as_rows``.
    """
    if len(blocks) == 0:
        raise ValueError("stack_rows needs at least one block")
    if all(is_dense_block(b) and b.shape[1] == blocks[0].shape[1] for b in blocks):  # nothing to check again
        return np.vstack(blocks)
    n_features = max(b.shape[1] for b in blocks)
    blocks = [as_rows(b, n_features=n_features) for b in blocks]
    if not any(is_sparse(b) for b in blocks):
        return np.vstack(blocks)
    import scipy.sparse as sp

    return as_rows(sp.vstack([to_csr(b) for b in blocks], format="csr"))


def transposed_rows(X, limit_bytes):
    """A dense block's transpose (``TransposedRows``), or None for CSR rows or dense ones of more than
    ``limit_bytes``: ``core.kernels.kernel_rows_into``'s ``x_transposed``, for callers that compute kernel
    columns over the same rows again and again."""
    if is_sparse(X) or X.nbytes > limit_bytes:
        return None
    return TransposedRows.of(X)


class TransposedRows:
    """A dense block's rows transposed, a row per feature, in the bytes that kernel columns read fastest: the
    features whose every value is +0.0 or 1.0 (one-hot codes, indicators) as one bit a row, the others as float64.

    ``values``: (p_values, width) float64, C-contiguous, the rows' values in its first n columns (a transpose that
    grows keeps room past them, ``append``); ``bits``: (p_bits, row_bytes) uint8, row_bytes whole blocks
    of 32 rows (4 ceil(n / 32) bytes, zeros past n): row i's value of the k-th such feature is bit i % 8 of
    ``bits[k, i // 8]``; ``slots``: (p,) int64, feature f's row of ``values`` (slots[f] >= 0) or of ``bits``
    (-1 - slots[f]).  A column of n rows reads the rows' transpose whole: on an ijcnn1 partition (25,000 x 22,
    ten one-hot features) 2.4 MB against 4.4 MB, which on a core with 2 MB of L2 cut four columns' dot
    products from 180 to 107 us (``bench/HISTORY.md``).  ``core.kernels`` adds a bit's column value where it
    is set (``core.simd.lanes_add_where``), to the bit what a multiply-add by 0.0 or 1.0 gives."""

    def __init__(self, values, flags, valued, bitwise):
        """From the transposed ``values`` (p_values, n) of the features ``valued`` and the bools ``flags``
        (p_bits, n) of the features ``bitwise``."""
        self.n = n = values.shape[1]
        self.values = np.ascontiguousarray(values, np.float64)
        self.slots = np.empty(valued.size + bitwise.size, np.int64)
        self.slots[valued], self.slots[bitwise] = np.arange(valued.size), -1 - np.arange(bitwise.size)
        self.bits = np.zeros((bitwise.size, _bit_row_bytes(n)), np.uint8)
        packed = np.packbits(flags, axis=1, bitorder="little")
        self.bits[:, :packed.shape[1]] = packed

    @classmethod
    def of(cls, X):
        """The transpose of the dense block ``X``."""
        bitwise = _bit_features(X)
        valued, bitwise = np.flatnonzero(~bitwise), np.flatnonzero(bitwise)
        return cls(X[:, valued].T, X[:, bitwise].T != 0.0, valued, bitwise)

    @property
    def shape(self):
        """(p, n), as the transpose's."""
        return self.slots.size, self.n

    def append(self, X):
        """Append the dense block ``X``'s rows, in place.  A transpose appended to keeps every feature as float64
        values, with room past its rows for as many again: a block that grows a few rows at a time (the slant
        driver's held rows, a few thousand) stays in the caches, where bits save less than appending to them would
        cost, and a copy of the whole transpose at every append took 2% of the slant path's time on ijcnn1."""
        n = self.n + X.shape[0]
        if self.bits.shape[0] or n > self.values.shape[1]:
            every = np.arange(self.slots.size)
            values = np.empty((every.size, 2 * n))
            values[:, :self.n] = self._features(every)
            self.values, self.slots = values, every
        self.values[:, self.n:n] = X.T
        self.n, self.bits = n, np.zeros((0, _bit_row_bytes(n)), np.uint8)

    def take(self, at):
        """The transpose of the rows ``at`` alone, each feature kept as it is here."""
        valued, bitwise = np.flatnonzero(self.slots >= 0), np.flatnonzero(self.slots < 0)
        return TransposedRows(self.values[:, at], self._features(bitwise)[:, at] != 0.0, valued, bitwise)

    def _features(self, features):
        """The rows' values of ``features``, (len(features), n) float64: the transpose's rows."""
        slots = self.slots[features]
        out = np.empty((features.size, self.n))
        out[slots >= 0] = self.values[slots[slots >= 0], :self.n]
        out[slots < 0] = np.unpackbits(self.bits[-1 - slots[slots < 0]], axis=1, count=self.n, bitorder="little")
        return out


def _bit_row_bytes(n):
    """The bytes of a bit row of ``TransposedRows`` over n rows: whole blocks of 32 rows, four bytes each."""
    return 4 * -(-n // 32)


def _bit_features(X):
    """Per feature of the dense block ``X``, whether its every value is +0.0 or 1.0."""
    return np.all((X == 1.0) | ((X == 0.0) & ~np.signbit(X)), axis=0)


def is_dense_block(X):
    """Whether ``X`` already is a dense block as ``as_rows`` makes them (a 2-D C-contiguous float64 array; its
    values are not checked again)."""
    return isinstance(X, np.ndarray) and X.ndim == 2 and X.dtype == np.float64 and X.flags.c_contiguous


def is_csr_block(X):
    """Whether ``X`` already is a CSR block as ``as_rows`` makes them (a canonical float64 ``csr_matrix``, its
    indices int32 wherever they fit; its values are not checked again)."""
    return (is_sparse(X) and type(X) is sys.modules["scipy.sparse"].csr_matrix and X.dtype == np.float64
            and (_int32_indexed(X) or not _int32_fits(X)) and X.has_canonical_format)


def _int32_indexed(X):
    return X.indices.dtype == np.int32 and X.indptr.dtype == np.int32


def _int32_fits(X):
    return max(X.nnz, X.shape[1]) < 2**31


def squared_norms(X):
    """Squared Euclidean norm of every row, shape (n,) float64."""
    if is_sparse(X):
        return _csr_squared_norms(X.data, X.indptr)
    return np.einsum("ij,ij->i", X, X)


def to_dense(X):
    """The block as a C-contiguous float64 array (the block itself when already dense)."""
    if is_sparse(X):
        return X.toarray(order="C")
    return X


def csr_from_arrays(data, indices, indptr, shape):
    """The CSR matrix of ``shape`` over these arrays (not copied).  scipy.sparse is imported here, where sparse
    rows are made from arrays (a model's, a message's, a task's Arrow lists), and not before (``is_sparse``)."""
    import scipy.sparse as sp

    return sp.csr_matrix((data, indices, indptr), shape=shape)


def to_csr(X):
    """The block as a CSR matrix (the block itself when already CSR)."""
    if is_sparse(X):
        return X
    import scipy.sparse as sp

    return sp.csr_matrix(X)


@numba.njit(**NJIT)
def _csr_squared_norms(data, indptr):
    """sum_k x_ik^2 over the stored entries of each row, in storage order."""
    n = indptr.shape[0] - 1
    out = np.zeros(n)
    for i in range(n):
        for q in range(indptr[i], indptr[i + 1]):
            out[i] += data[q] * data[q]
    return out
