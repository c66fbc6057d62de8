"""Kernel functions and kernel blocks K(X, Z), the hot path of the project.

Three kernels, with LIBSVM's parameterisation:

    rbf     K(x, z) = exp(-gamma ||x - z||^2)
    linear  K(x, z) = x . z
    poly    K(x, z) = (gamma x . z + coef0)^degree

``kernel_block`` splits K into tiles and runs the tiles on numba's threads,
each thread taking the next free tile (``core.threads.fetch_add``) so that a
thread the scheduler puts aside delays only its current tile.
Each tile takes its dot products x . z from a micro-kernel of fused
multiply-adds for dense X (``_dense_dots_into``, in float64 or float32), a
loop over the stored entries for CSR X (or, for a CSR Z of many features
and few entries, rows of text or hashed features, from both as CSR rows:
``_pair_dots``), and turns them into kernel values while they are still in
cache; a few columns over many dense rows can instead be summed from the
rows' transpose (``kernel_rows_into``'s ``x_transposed``), with the same
bits as the tiles.  rbf uses the exp below,
which, unlike a call to libm, the compiler vectorises; the element-wise loops
(exponents, exp, CSR dot products) may take 512-bit vectors
(``_wide_vectors``), with the same values at any width.  The
njit helpers select the kernel by an integer code, so each compiles once.
``kernel_times`` applies K(X, Z) to a vector (or a few) without forming K:
each tile is reduced against its coefficients while in cache, which saves the
block's trip through memory (2.5-3.3x less CPU than a block and its product
with thousands of columns; no gain at 100 columns); ``rbf_times_bounded`` does
so in float32, with a bound on its distance from the float64 values.
``dense_products`` lends the dense tiles' micro-kernel to plain matrix
products with long sums and few columns (SpSVM-2's Gram blocks), where BLAS
runs below its rate.
"""

import collections
import math
import types
from dataclasses import asdict, dataclass, replace

import numba
import numpy as np
from numba.core import types as nb_types
from numba.extending import intrinsic

from core.config import NJIT, NJIT_FMA, NJIT_PARALLEL, NJIT_SUMS
from core.rows import TransposedRows, as_rows, is_csr_block, is_dense_block, is_sparse, squared_norms, to_dense
from core.simd import (lanes_add_where, lanes_fma, lanes_load, lanes_splat, lanes_store, lanes_width, lanes_zeros,
                       prefetch)
from core.threads import fetch_add
from core.validation import check_positive

RBF, LINEAR, POLY = 0, 1, 2
_CODES = {"rbf": RBF, "linear": LINEAR, "poly": POLY}
SCALE = "scale"  # KernelSpec's gamma that follows the data, as scikit-learn's SVC(gamma="scale")

# multiply-adds per tile, the tiles numba's threads share out.  Sized at 500,000 for OpenBLAS's GEMM, which summed
# the dense tiles until the forty-sixth session and started threads of its own from 2^19; since, larger tiles of
# the micro-kernel's sums pay a tile's fixed costs less often (an Intel Xeon VM, 522,910 x 54 rows against 100,
# tiles of 320 rows against 88, alternating runs: kernel_times 85-94 against 95-98 ms, float32 53-57 against
# 56-60 ms; the blocks within their spread; ``bench/HISTORY.md``)
_TILE_MACS = 2_000_000
_TILE_COLS = 256
# largest tile, 256 KB of dot products that stay in L2 while they become kernel values.  A cap on values, not
# rows: a one-column block (a slant step, 25,000 x 22 rows) took 0.17 ms in tiles of 128 rows, 0.09 ms whole
_TILE_VALUES = 1 << 15
_GRAM_TILE = 128  # side of a Gram matrix's square tiles
# how kernel values are computed: "float64", or "float32", the rows and Z rounded to float32 and their dot
# products summed in float32 (half the memory traffic): twice the lanes in the dense rows' micro-kernel,
# float32 entries and tiles in the CSR loop (on 1,000 x 54 tiles of 12-entry rows, 1.2-1.4 against 1.8 ns
# per value on one thread).  rbf then takes exp in float32 as well (``_exp32``, twice the vector lanes and half
# the polynomial: 0.6 against 1.7 ns per value of a 128 x 256 tile, with the exponents), its exponent -gamma
# ||x - z||^2 taken in float64 as for float64 values and rounded to float32, so a value moves by about
# gamma (p + 3) (|x|^2 + |z|^2) 6e-8 plus 1e-7 relative (``rbf_times_bounded`` bounds it); linear and poly finish
# in float64.  A block (``kernel_block``) is then stored in float32, rounding linear and poly values once more;
# sums over the values (``kernel_times``) stay float64.  The effect on trained models: ``bench/bench_precision.py``
PRECISIONS = ("float64", "float32")
# numba's pool only for blocks of at least this many operations (multiply-adds plus ~16 for the exp per
# value), ~10 ms on one core: a pool thread that the scheduler has put aside costs the whole block a
# time slice (ms) on a busy machine, and smaller blocks (an SpSVM round on ijcnn1: 25k x 11 values) ran
# slower on two threads than on one beside busy processes (bench/bench_threads.py)
_PARALLEL_MIN_OPS = 1 << 27
# the tiles a thread of ``_tiles`` takes at once: enough for a run of a block's rows to span 2 MB, a huge page, so
# that two threads seldom fault in the same fresh page of a new block together, and at least ``_RUNS_PER_WORKER``
# runs a thread, so that a busy core's share can still pass to the other.  An Intel Xeon VM, 522,910 x 54 rows
# against 100: the kernel's share of a new float32 block (clearing its pages) took 31 ms on one thread and 63-76 ms
# on two taking one tile at a time; in runs of 64 tiles the float32 block took 71.8 against 84.0 ms (36 against 63 ms
# in the kernel), the float64 block 128 against 152 ms (``bench/HISTORY.md``)
_FAULT_RUN_BYTES = 2 << 20
_RUNS_PER_WORKER = 8
_SAME = 2.0**-46  # ||x-z||^2 below this share of |x|^2 + |z|^2 is rounding noise: taken as 0
_EXP_FLOOR = -708.0  # exp(-708) ~ 3e-308, the domain of _exp_inplace
_EXP_FLOOR32 = np.float32(-87.0)  # exp(-87) ~ 1.6e-38, the floor of _exp32's domain

# exp(x) = 2^k exp(r), k = round(x / ln 2), r = x - k ln 2 (Cody & Waite), |r| <= ln(2) / 2
_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01  # ln 2 in two parts; k * _LN2_HI is exact for |k| < 2^20
_LN2_LO = 1.90821492927058770002e-10
_ROUND = 6755399441055744.0  # 1.5 * 2^52: (t + _ROUND) - _ROUND is t rounded to an integer
_ROUND_BITS = int(np.float64(_ROUND).view(np.int64))  # its bit pattern: t + _ROUND holds round(t) + _ROUND_BITS
_TAYLOR = tuple(1.0 / math.factorial(i) for i in range(14))  # exp(r) to degree 13: error < 1e-17 |exp(r)|
# the same in float32 (``_exp32``): ln 2 in two parts, k * _LN2_HI32 exact for |k| < 2^9 (the last 9 bits of
# _LN2_HI32's significand are 0), and exp(r) to degree 7: error < 5e-9 |exp(r)|, below float32's half-ulp of 6e-8
_LOG2E32, _LN2_HI32, _LN2_LO32 = np.float32(_LOG2E), np.float32(0.693145751953125), np.float32(1.428606765330187e-6)
_ROUND32 = np.float32(1.5 * 2**23)
_ROUND_BITS32 = int(_ROUND32.view(np.int32))
_TAYLOR32 = tuple(np.float32(c) for c in _TAYLOR[:8])


@dataclass(frozen=True)
class KernelSpec:
    """A kernel and its parameters: name 'rbf', 'linear' or 'poly'.

    ``gamma`` is used by rbf and poly, ``degree`` and ``coef0`` by poly only.  ``gamma="scale"``
    (``SCALE``) stands for scikit-learn's data-dependent value 1 / (n_features Var(X)) (see
    ``scale_gamma``): a training function replaces it with its data's value (``for_data``) before any
    kernel is computed, and the model it returns records that number.
    """

    name: str = "rbf"
    gamma: float = 1.0
    degree: int = 3
    coef0: float = 0.0

    def __post_init__(self):
        if not isinstance(self.name, str) or self.name not in _CODES:
            raise ValueError(f"unknown kernel {self.name!r}: use one of {sorted(_CODES)}")
        if self.gamma != SCALE:
            check_positive(gamma=self.gamma)
        gamma, coef0 = self.gamma if self.gamma == SCALE else float(self.gamma), _number(self.coef0)
        if coef0 is None:
            raise ValueError(f"coef0 must be a finite number, got {self.coef0!r}")
        if isinstance(self.degree, bool) or not isinstance(self.degree, (int, np.integer)) or self.degree < 1:
            raise ValueError(f"degree must be an integer >= 1, got {self.degree!r}")
        # plain Python types, so that to_dict() is JSON-able
        object.__setattr__(self, "name", str(self.name))
        object.__setattr__(self, "gamma", gamma)
        object.__setattr__(self, "coef0", coef0)
        object.__setattr__(self, "degree", int(self.degree))

    @property
    def code(self):
        """Integer code of the kernel: RBF, LINEAR or POLY."""
        return _CODES[self.name]

    def for_data(self, engine):
        """This spec with ``gamma="scale"`` replaced by the value for ``engine``'s training data
        (``engine.scale_gamma``); the spec itself when its gamma is a number.  A ValueError where that value is
        no positive finite number: feature values so small (about 1e-155) that the inverse of their variance
        overflows a double (values large enough to overflow the variance itself are refused with the rows,
        ``core.rows.LARGEST_FEATURE``)."""
        if self.gamma != SCALE:
            return self
        if not 0.0 < engine.scale_gamma < np.inf:
            raise ValueError(f"gamma='scale' is 1 / (n_features x the variance of the feature values), and on these "
                             f"rows that is no finite number (gamma {engine.scale_gamma}: feature values of magnitude "
                             "about 1e-155); scale the features (pyspark.ml.feature.StandardScaler, MinMaxScaler) or "
                             "set gamma to a number")
        return replace(self, gamma=engine.scale_gamma)

    def to_dict(self):
        """The spec as a dict of plain JSON-able values."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d):
        """The spec that ``to_dict`` gave ``d``."""
        unknown = set(d) - {"name", "gamma", "degree", "coef0"}
        if unknown:
            raise ValueError(f"unknown kernel parameters {sorted(unknown)}: expected name, gamma, degree, coef0")
        return cls(**d)


def kernel_block(X, Z, spec, x_sq_norms=None, z_sq_norms=None, transposed=False, precision="float64"):
    """The kernel matrix K[i, j] = K(x_i, z_j), shape (n_x, n_z), float64 (float32 with ``precision="float32"``),
    C-contiguous; with ``transposed``, its transpose K(Z, X), shape (n_z, n_x), C-contiguous, each tile written
    transposed (no copy of the block, and X stays the side that is tiled: CSR or many rows).

    X and Z are row blocks (dense or CSR, see ``core.rows``); anything else is
    coerced with ``as_rows``.  Z is made dense for the tiles, so Z should
    have few rows or few features, except that a CSR Z of many features
    against a CSR X stays sparse (``_sparse_pair``: rows of text or hashed
    features).  ``x_sq_norms`` and ``z_sq_norms``, the squared
    row norms from ``squared_norms``, are used by rbf and computed when not
    given.  rbf values below exp(-708) ~ 3e-308 are returned as exp(-708)
    (with ``precision="float32"``, below exp(-87) ~ 1.6e-38 as exp(-87)).
    With Z the same object as X (a Gram matrix), only the tiles on and above
    the diagonal are computed and mirrored: half the work, and K exactly
    symmetric.  ``precision="float32"`` takes the dot products, and rbf's
    exponentials, in float32 (see ``PRECISIONS``), and stores the block in
    float32: half the bytes to write, which bound the block's rate.
    """
    symmetric = Z is X and (z_sq_norms is None or z_sq_norms is x_sq_norms) and not transposed
    if symmetric:
        z_sq_norms = x_sq_norms
    X, Z, args = _prepared(X, Z, spec, x_sq_norms, z_sq_norms, precision)
    n, m = X.shape[0], Z.shape[0]
    K = np.empty((m, n) if transposed else (n, m), np.float32 if precision == "float32" else np.float64)
    _fill(K, np.arange(m) if transposed else _NO_ROWS, 0, X, Z, args, symmetric, transposed, precision)
    return K


def kernel_rows_into(K, rows, start, X, Z, spec, x_sq_norms=None, z_sq_norms=None, x_transposed=None):
    """K(z_j, X) for each row z_j of Z written into ``K[rows[j], start:start + n_x]``, float64 dot products:
    ``kernel_block(X, Z, spec, transposed=True)`` without a block of its own, for kernel columns kept in a
    store of their own (``core.kernel_columns``; a copy there cost ~20 us of a 25,000-row column's ~100).

    ``K``: a C-contiguous float64 array; ``rows``: distinct rows of it, one per row of Z.

    ``x_transposed``: for a dense X, its transpose ``core.rows.transposed_rows(X, ...)``, which a caller that
    computes column after column over the same rows keeps (``KernelColumns``).  The dot products are then summed
    with the rows in the vectors' lanes (``_dots_from_transposed``), the same chains of fused multiply-adds as
    the tiles' and so the same bits, where the tiles, with the columns in the lanes, run far below their rate on
    a few columns of many rows: rbf columns of 25,000 x 22 rows, 1, 2 and 4 at a time, took 205, 253 and
    271 us through the tiles against 60, 93 and 122 us from the transpose (in cache, one thread, CPU as wall;
    ``bench/HISTORY.md``).
    """
    X, Z, args = _prepared(X, Z, spec, x_sq_norms, z_sq_norms, "float64")
    rows = np.asarray(rows, np.int64)
    if not is_dense_block(K):
        raise ValueError("K must be a C-contiguous 2-d float64 array")
    listed = rows.tolist()  # a few rows a call: Python's min and max take less than numpy's
    if rows.shape != (Z.shape[0],) or (listed and not 0 <= min(listed) <= max(listed) < K.shape[0]) \
            or not 0 <= start <= K.shape[1] - X.shape[0]:
        raise ValueError(f"rows (shape {rows.shape}) must name a row of K (shape {K.shape}) for each of the "
                         f"{Z.shape[0]} rows of Z, and start ({start}) leave {X.shape[0]} values in each")
    if x_transposed is None:
        _fill(K, rows, int(start), X, Z, args, False, True, "float64")
        return
    if is_sparse(X) or not (isinstance(x_transposed, TransposedRows) and x_transposed.shape == X.shape[::-1]):
        raise ValueError(f"x_transposed must be the transpose of a dense X (shape {X.shape}): "
                         "core.rows.transposed_rows(X, limit_bytes)")
    _, x_sq, z_sq = args[:3]  # _prepared's checked norms (and Z, a dense block)
    kernel_rows_from_transposed(K, rows, int(start), x_transposed, x_sq, Z, z_sq, spec)


def kernel_rows_from_transposed(K, rows, start, x_transposed, x_sq_norms, Z, z_sq_norms, spec):
    """``kernel_rows_into``'s values from X's transpose without its checks: for a caller whose arguments are right
    by construction, as a column store's are (``KernelColumns``: ``rows`` an int64 array, Z a dense block of X's
    width, the norms float64 arrays of X's and Z's rows, ``spec`` resolved).  The checks took ~16 us of a slant
    path's ~120 us call (ijcnn1)."""
    _rows_from_transposed(K, rows, start, x_transposed.values, x_transposed.bits, x_transposed.slots, Z, spec.code,
                          x_sq_norms, z_sq_norms, spec.gamma, spec.coef0, spec.degree)


_NO_ROWS = np.zeros(0, np.int64)  # ``_tiles``' output rows of a block that is not transposed


def _fill(K, out_rows, out_start, X, Z, args, symmetric, transposed, precision):
    """Fill ``K`` with the kernel values of the blocks X and dense Z (``_prepared``'s ``args``), tile by tile
    (``_tiles``), on numba's pool when the block is worth it."""
    n, m = X.shape[0], Z.shape[0]
    if n == 0 or m == 0:
        return
    depth = _depth(X)
    rows, cols = _tile_shape(m, depth)
    if symmetric:  # square tiles of as many multiply-adds, so that a tile's mirror is a tile
        rows = cols = max(1, min(_GRAM_TILE, m, math.isqrt(_TILE_MACS // depth)))
    pooled = _worth_a_pool(n, m, depth, rows, cols)
    workers = numba.get_num_threads() if pooled else 1
    if is_sparse(Z):
        (_pair_tiles if pooled else _pair_tiles_serial)(*_pair_inputs(X, Z, precision, workers), *args, rows, cols,
                                                        symmetric, transposed, out_rows, out_start, workers, K)
        return
    Z_tiles, Z_tiles32 = _column_tiles(Z, cols, precision)
    X, csr = _tile_inputs(X, precision)
    (_tiles if pooled else _tiles_serial)(X, csr, Z_tiles, Z_tiles32, *args, rows, cols, symmetric, transposed,
                                          out_rows, out_start, workers, K, *_typed_views(K))


def _typed_views(K):
    """(K, None) for a float64 K, (None, K) for a float32 one: ``_tiles``' K64 and K32, for the dot products of a
    dense tile of whole rows, which write into the one that is K (numba prunes the other's branch as it compiles)."""
    return (K, None) if K.dtype == np.float64 else (None, K)


def kernel_times(X, Z, spec, coef, x_sq_norms=None, z_sq_norms=None, precision="float64", shaped_as=None):
    """sum_j coef_j K(x_i, z_j) for every row x_i of X, shape (n_x,) float64: K(X, Z) @ coef.

    The same blocks, norms and ``precision`` as ``kernel_block``; K is never
    stored.  Row tiles run on numba's threads, each thread adding its tiles'
    products into its own rows of the result.  ``coef`` of shape (n_z, k) gives
    the (n_x, k) products with its k columns from one pass over the tiles, each
    column's sums the bits of its own call.  A row's value does not depend on
    the rows beside it, but its sum follows the column tiles, shaped by the
    multiply-adds per value: ``shaped_as``, a block whose shape the tiles then
    take (a CSR block's mean entries per row), gives rows taken from that block
    the bits they have in its own call.
    """
    X, Z, args = _prepared(X, Z, spec, x_sq_norms, z_sq_norms, precision)
    n, m = X.shape[0], Z.shape[0]
    coef = np.asarray(coef, dtype=np.float64)
    if coef.shape[:1] != (m,) or coef.ndim > 2:
        raise ValueError(f"coef has shape {coef.shape} but Z has {m} rows: one coefficient per row of Z (or a row "
                         "of them, one for each product)")
    columns = np.ascontiguousarray(coef.T if coef.ndim == 2 else coef[None])  # (k, m), each product's contiguous
    out = np.zeros((columns.shape[0], n))
    if n == 0 or m == 0:
        return out[0] if coef.ndim == 1 else np.ascontiguousarray(out.T)
    depth = _depth(X if shaped_as is None else _block(shaped_as))
    rows, cols = _tile_shape(m, depth)
    pooled = n > rows and _worth_a_pool(n, m, depth, rows, cols)  # the threads share out row tiles
    workers = numba.get_num_threads() if pooled else 1
    if is_sparse(Z):
        (_pair_tiles_times if pooled else _pair_tiles_times_serial)(*_pair_inputs(X, Z, precision, workers), *args,
                                                                    rows, cols, columns, workers, out)
        return out[0] if coef.ndim == 1 else np.ascontiguousarray(out.T)
    Z_tiles, Z_tiles32 = _column_tiles(Z, cols, precision)
    X, csr = _tile_inputs(X, precision)
    (_tiles_times if pooled else _tiles_times_serial)(X, csr, Z_tiles, Z_tiles32, *args, rows, cols, columns,
                                                      workers, out)
    return out[0] if coef.ndim == 1 else np.ascontiguousarray(out.T)


def dense_products(A, B):
    """A @ B for the float64 arrays A (m, p) and B (p, w), each value the chain of fused multiply-adds over its p
    terms in order from 0.0: the dense kernel tiles' micro-kernel (``_dense_dots_into``), for products whose
    long sums and few columns run BLAS's GEMM below its rate.  SpSVM's Gram blocks over a partition's cached
    columns (``core.partition.spsvm``) are such: 1,000 x 7,500 by 7,500 x 140."""
    A, B = np.ascontiguousarray(A, np.float64), np.ascontiguousarray(B, np.float64)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise ValueError(f"dense_products needs A (m, p) and B (p, w), got shapes {A.shape} and {B.shape}")
    return _dense_dots(A, 0, A.shape[0], B)


# float32's unit roundoff; a float32 rbf expansion's bound (``rbf_times_bounded``) holds while the exponent's error
# delta stays below _BOUNDED_SHARE and the squared norms below _BOUNDED_NORMS (no float32 product or sum overflows)
_U32 = 2.0**-24
_BOUNDED_SHARE = 1.0 / 64
_BOUNDED_NORMS = 2.0**120


def rbf_times_bounded(X, Z, spec, coef, x_sq_norms=None, z_sq_norms=None):
    """``kernel_times`` of an rbf kernel in float32 (``PRECISIONS``), with a bound on its distance from the float64
    values: (g, bound), |g_i - kernel_times(X, Z, spec, coef)_i| <= bound_i (inf where the bound's terms below
    grow too large to hold), from one pass over the float32 tiles.

    With u = 2^-24 and t multiply-adds in a dot product (the features of a dense row, the stored entries of a CSR
    row), x and z rounded to float32 and summed by fused multiply-adds (dense) or products and sums (CSR), the
    float32 x . z moves by at most c |x| |z| <= c (|x|^2 + |z|^2) / 2 with c = (t + 3) u / (1 - (t + 3) u)
    (Higham's gamma_n), plus 2^-149 (2t + sqrt(t) (|x| + |z|)) where values fall below float32's normal range;
    so e = -gamma ||x - z||^2, taken in float64 from the float64 norms, moves by delta = gamma (c (|x|^2 + |z|^2)
    + 2^-148 (2t + sqrt(t) (|x| + |z|))).  Rounding e to float32 adds u |e|, and float32's exp (``_exp32``,
    within one ulp) a factor 1 + 2u.  For delta <= 1/64: |K~ - K| <= 1.02 (delta + 2u) K + 0.39 u (u |e| e^e <=
    u / e bounds the second term), hence K <= 1.017 K~ + 0.4 u and |K~ - K| <= 1.04 (delta + 2u) K~ + 0.4 u (+
    exp(-87) where ``_exp32`` floors its values).  Summed with |coef_j|: |g_i - sum_j coef_j K_ij| <= 1.05
    (delta_i + 2u) S_i + 0.5 u A, S_i = sum_j |coef_j| K~_ij (the pass's second column), A = sum_j |coef_j|,
    delta_i taken at the largest |z|^2.  The float64 values' own error (theirs and the sums' rounding, below
    m 2^-52 S_i + 2^-50 A for m < 2^24 columns) takes the bound to 1.25 (delta_i + 2u) S_i + u A.  Rows whose
    |x|^2 + max |z|^2 reaches 2^120, where a float32 product or sum could overflow, get no bound."""
    if spec.name != "rbf":
        raise ValueError(f"rbf_times_bounded takes an rbf kernel, got {spec.name!r}")
    X, Z = _pair(X, Z)
    m = Z.shape[0]
    coef = np.asarray(coef, dtype=np.float64)
    if coef.shape != (m,):
        raise ValueError(f"coef has shape {coef.shape} but Z has {m} rows: one coefficient per row of Z")
    if m >= 2**24:
        raise ValueError(f"rbf_times_bounded's bound holds for fewer than 2^24 rows of Z, got {m}")
    x_sq = _norms(X, x_sq_norms, "x_sq_norms")
    z_sq = _norms(Z, z_sq_norms, "z_sq_norms")
    magnitude = np.abs(coef)
    both = kernel_times(X, Z, spec, np.column_stack([coef, magnitude]), x_sq, z_sq, precision="float32")
    if m == 0:
        return both[:, 0], np.zeros(X.shape[0])
    terms = np.diff(X.indptr).astype(np.float64) if is_sparse(X) else np.full(X.shape[0], float(X.shape[1]))
    chain = (terms + 3) * _U32
    z_sq_max = z_sq.max()
    norms = x_sq + z_sq_max
    with np.errstate(divide="ignore", invalid="ignore"):
        delta = spec.gamma * (chain / (1 - chain) * norms
                              + 2.0**-148 * (2 * terms + np.sqrt(terms) * (np.sqrt(x_sq) + np.sqrt(z_sq_max))))
    bound = 1.25 * (delta + 2 * _U32) * both[:, 1] + _U32 * magnitude.sum()
    reach = (delta <= _BOUNDED_SHARE) & (norms < _BOUNDED_NORMS) & (chain < 0.5) & np.isfinite(bound)
    return both[:, 0], np.where(reach, bound, np.inf)


def kernel_diag(X, spec, x_sq_norms=None):
    """The diagonal K(x_i, x_i) for every row of X, shape (n,) float64.

    rbf gives exactly 1; linear and poly use the squared norms
    (``x_sq_norms`` when given, computed otherwise).
    """
    X = _block(X)
    code = _code(spec)
    if code == RBF:
        return np.ones(X.shape[0])  # exp(-gamma ||x - x||^2)
    out = _norms(X, x_sq_norms, "x_sq_norms").copy()  # x_i . x_i
    if code == POLY:
        _poly_row(out, spec.gamma, spec.coef0, spec.degree)
    return out


def _prepared(X, Z, spec, x_sq_norms, z_sq_norms, precision):
    """X and Z as blocks, Z dense unless it stays CSR (``_sparse_pair``), and the kernel arguments of the tile
    loops (code, norms, parameters), after the checks of the arguments."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    X, Z = _pair(X, Z)
    code = _code(spec)
    if code == RBF:
        x_sq = _norms(X, x_sq_norms, "x_sq_norms")
        z_sq = _norms(Z, z_sq_norms, "z_sq_norms")
    else:
        x_sq, z_sq = np.zeros(X.shape[0]), np.zeros(Z.shape[0])  # not read by linear and poly
    return X, Z if _sparse_pair(X, Z) else to_dense(Z), (code, x_sq, z_sq, spec.gamma, spec.coef0, spec.degree)


# a CSR Z stays sparse against a CSR X from this many values of its dense rows (32 MB), at most 1 in
# _PAIR_MAX_SHARE of them stored (``_sparse_pair``)
_PAIR_MIN_VALUES = 1 << 22
_PAIR_MAX_SHARE = 64


def _sparse_pair(X, Z):
    """Whether the kernel values of the blocks X and Z are taken from both as CSR rows (``_pair_dots``), where the
    tiles take Z's dense rows: when both are CSR, Z's dense rows would hold at least ``_PAIR_MIN_VALUES`` values
    and at most 1 in ``_PAIR_MAX_SHARE`` of them is stored.  Rows of text or hashed features (a million
    features, tens stored a row) are such, and their dense Z took gigabytes: a C-SVC fit of 400 such rows
    peaked at 6.3 GB.  Forest-shaped rows (22% stored) and a8a's (11%) keep the tiles."""
    if not (is_sparse(X) and is_sparse(Z)):
        return False
    values = Z.shape[0] * Z.shape[1]
    return values >= _PAIR_MIN_VALUES and Z.nnz * _PAIR_MAX_SHARE <= values


def _column_tiles(Z, cols, precision):
    """The rows of the dense Z by column tiles of K, each tile's rows transposed: tile t, Z[t cols:(t + 1) cols].T
    of shape (p, w), is C-contiguous at offset p t cols of one flat array (``_z_tile`` reads it back).  The
    dense rows' micro-kernel loads a feature's columns from one of its rows as vectors (``_dense_dots_into``),
    and a CSR row's entries read contiguous rows of it.

    Returns the tiles and, for ``precision="float32"``, the same tiles in float32, else None: the tile loops then
    take the dot products in float64.  numba compiles the loops once for each (a None argument is a type of its
    own) and prunes the branches that test it, so that float64 kernels compile no float32 code (``_tiles``)."""
    m, p = Z.shape
    flat = np.empty(m * p)
    for jlo in range(0, m, cols):
        jhi = min(jlo + cols, m)
        flat[p * jlo:p * jhi].reshape(p, jhi - jlo)[:] = Z[jlo:jhi].T
    return flat, flat.astype(np.float32) if precision == "float32" else None


def _tile_inputs(X, precision):
    """(X, csr) as the tile loops take them: a dense X and empty CSR arrays, or an empty stand-in for X and
    the (data, indices, indptr, data32) of a CSR X, data32 its entries in float32 for ``precision="float32"``
    (else empty; fixed argument types: each loop compiles once per kind)."""
    if is_sparse(X):
        single = X.data.astype(np.float32) if precision == "float32" else np.empty(0, np.float32)
        return np.empty((0, X.shape[1])), (X.data, X.indices, X.indptr, single)
    return X, (np.empty(0), np.empty(0, dtype=np.int32), np.empty(0, dtype=np.int32), np.empty(0, np.float32))


def _pair_inputs(X, Z, precision, workers):
    """The arrays of ``_pair_tiles`` and ``_pair_tiles_times`` for the CSR blocks X and Z: (data, indices,
    indptr) of each, the same with float32 entries for ``precision="float32"`` (else None), and a row of p
    zeros for each of ``workers`` threads to put a row of X in (float64, and float32 or None): untouched pages
    of them, most of a million features', take no memory."""
    single = precision == "float32"
    x, z = (X.data, X.indices, X.indptr), (Z.data, Z.indices, Z.indptr)
    x32 = (X.data.astype(np.float32), X.indices, X.indptr) if single else None
    z32 = (Z.data.astype(np.float32), Z.indices, Z.indptr) if single else None
    scratch = np.zeros((workers, X.shape[1]))
    scratch32 = np.zeros((workers, X.shape[1]), np.float32) if single else None
    return x, z, x32, z32, scratch, scratch32


def _depth(X):
    """Multiply-adds per kernel value: the features of dense X, the mean stored entries per row of CSR X."""
    return max(1, X.nnz // max(1, X.shape[0])) if is_sparse(X) else max(1, X.shape[1])


def _tile_shape(m, depth):
    """Rows and columns of a tile of K, for ``depth`` multiply-adds per kernel value."""
    cols = max(1, min(m, _TILE_COLS, _TILE_MACS // depth))
    rows = max(1, min(_TILE_VALUES // cols, _TILE_MACS // (cols * depth)))
    return (rows - rows % 8 if rows > 8 else rows), cols  # whole blocks of ``_dense_dots_into``'s eight rows


def _worth_a_pool(n, m, depth, rows, cols):
    """Whether an (n, m) block of ``depth`` multiply-adds per value goes to numba's thread pool: never when the
    pool has one thread (a Spark task of one core, ``NUMBA_NUM_THREADS=1``), where the serial twins do the same
    tiles in the same order without the pool's launch, nor its compilation on a machine's first fit (6.2 s for
    ``_tiles``, 2.3 s for ``_tiles_times`` in a fresh checkout, in every Python worker of an executor)."""
    n_tiles = ((n + rows - 1) // rows) * ((m + cols - 1) // cols)
    return n_tiles > 1 and n * m * (depth + 16) >= _PARALLEL_MIN_OPS and numba.get_num_threads() > 1


def _block(X):
    """X itself when it already is a block as ``as_rows`` makes them, else ``as_rows(X)``."""
    return X if is_dense_block(X) or is_csr_block(X) else as_rows(X)


def _pair(X, Z):
    """Both blocks, a sparse one widened when it has fewer features than the other."""
    X, Z = _block(X), _block(Z)
    px, pz = X.shape[1], Z.shape[1]
    if px < pz and is_sparse(X):
        X = as_rows(X, n_features=pz)
    elif pz < px and is_sparse(Z):
        Z = as_rows(Z, n_features=px)
    elif px != pz:
        raise ValueError(f"X has {px} features but Z has {pz}: both blocks must use the same features")
    return X, Z


def _number(value):
    """``value`` as a finite float, or None when it is not one."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


SCALE_DIGITS = 12  # significant digits of gamma="scale"


def scale_gamma(n_features, variance):
    """scikit-learn's ``gamma="scale"``: 1 / (n_features Var(X)), Var(X) the (unweighted, population)
    variance of all n x n_features feature values, zeros of sparse rows included; 1.0 when that variance
    is 0 (constant features), as scikit-learn.

    Rounded to ``SCALE_DIGITS`` significant digits: the variance is a floating-point sum whose last bits
    follow the order of the rows (numpy's pairwise sums, Spark's aggregates per partition), and gamma
    must not, or the same rows shuffled or partitioned otherwise give another model (a C-SVC moved by
    up to 1e-2 in its coefficients).  Rows in another order then give another gamma only when their
    variances (~1e-16 apart) straddle a rounding boundary (~1e-12 apart): about one time in 10^4."""
    return float(f"{1.0 / (n_features * variance):.{SCALE_DIGITS}g}") if variance != 0 else 1.0


def feature_variance(X):
    """Var(X) over all values of the row block X (zeros of a CSR block included), as ``numpy.var``."""
    if is_sparse(X):
        n_values = X.shape[0] * X.shape[1]
        mean = X.data.sum() / n_values
        return max(float(np.square(X.data).sum() / n_values - mean * mean), 0.0)
    return float(X.var())


def _code(spec):
    if not isinstance(spec, KernelSpec):
        raise TypeError(f"spec must be a KernelSpec, got {type(spec).__name__} (use KernelSpec.from_dict for a dict)")
    if spec.gamma == SCALE:
        raise ValueError("gamma='scale' follows the training data: replace it with spec.for_data(engine) first")
    return spec.code


def _norms(X, given, label):
    """The squared row norms of X: ``given`` after a shape check, else computed."""
    if given is None:
        return squared_norms(X)
    given = np.ascontiguousarray(given, dtype=np.float64)
    if given.shape != (X.shape[0],):
        raise ValueError(f"{label} has shape {given.shape} but the block has {X.shape[0]} rows: "
                         "pass squared_norms() of the same rows")
    return given


@numba.njit(**NJIT_PARALLEL)
def _tiles(X, csr, Z_tiles, Z_tiles32, code, x_sq, z_sq, gamma, coef0, degree, rows, cols, symmetric, transposed,
           out_rows, out_start, workers, K, K64, K32):
    """Fill K tile by tile on ``workers`` threads, each taking the next run of tiles in turn (``_FAULT_RUN_BYTES``,
    ``_RUNS_PER_WORKER``), X dense (``csr`` holding empty arrays) or ``csr`` = (data, indices, indptr, data32) of a
    CSR X (X an empty stand-in of the same width; ``_tile_inputs``);
    ``Z_tiles`` and ``Z_tiles32`` (None: float64 dot products) from ``_column_tiles``; ``K64``, ``K32``: K as the
    one of its dtype, the other None (``_typed_views``), for the dot products of a dense tile of whole rows,
    which write into K.  A dense tile's dot products come from ``_dense_dots_into``.
    ``symmetric`` (Z is X, square tiles): the tiles above the diagonal also fill their mirror.  ``transposed``:
    K holds K(Z, X), each tile put in transposed, the values of z_j in ``K[out_rows[j], out_start:out_start + n]``.

    A tile is ``_fill_tile``'s: the loop of the threads holds nothing else, so that numba compiles a tile's work
    once for the pooled loops and their serial twin, not again inside the pool's outlined loop, and compiles
    only the branches a call can take (the tests of None).  A dense float64 block's first calls on a fresh
    checkout compiled for 13.2 s (serial) and 6.2 s (pooled), against 25.4 s and 11.1 s when the pool's loop held
    every branch of a tile inline (``bench/HISTORY.md``)."""
    n_col_tiles = (z_sq.shape[0] + cols - 1) // cols
    n_tiles = ((x_sq.shape[0] + rows - 1) // rows) * n_col_tiles
    run = max(1, min(_FAULT_RUN_BYTES // (rows * cols * K.itemsize), n_tiles // (_RUNS_PER_WORKER * workers)))
    next_tile = np.zeros(1, dtype=np.int64)
    for _ in numba.prange(workers):  # each thread takes the next free run of tiles until none is left
        first = fetch_add(next_tile, run)
        while first < n_tiles:
            for t in range(first, min(first + run, n_tiles)):
                _fill_tile(t, n_col_tiles, X, csr, Z_tiles, Z_tiles32, code, x_sq, z_sq, gamma, coef0, degree, rows,
                           cols, symmetric, transposed, out_rows, out_start, K, K64, K32)
            first = fetch_add(next_tile, run)


@numba.njit(**NJIT)
def _fill_tile(t, n_col_tiles, X, csr, Z_tiles, Z_tiles32, code, x_sq, z_sq, gamma, coef0, degree, rows, cols,
               symmetric, transposed, out_rows, out_start, K, K64, K32):
    """Tile t of ``_tiles``' K (row tile t // ``n_col_tiles``, column tile t % ``n_col_tiles``; its arguments)."""
    n, m = x_sq.shape[0], z_sq.shape[0]
    p = X.shape[1]
    lo, jlo = (t // n_col_tiles) * rows, (t % n_col_tiles) * cols
    hi, jhi = min(lo + rows, n), min(jlo + cols, m)
    Zj = _z_tile(Z_tiles, p, jlo, jhi)
    whole_rows = n_col_tiles == 1 and not csr[2].shape[0] and not transposed and not symmetric and hi - lo > 1
    if whole_rows and K64 is not None:
        _dense_dots_into(X, lo, hi, Zj, K64[lo:hi])  # whole rows: straight into K
        finish_tile(code, K64[lo:hi], x_sq[lo:hi], z_sq, gamma, coef0, degree)
    elif whole_rows and K32 is not None and code == RBF:
        _dense_dots_into(_rows32(X, lo, hi), 0, hi - lo, _z_tile(Z_tiles32, p, jlo, jhi), K32[lo:hi])  # in float32
        _rbf_values32(K32[lo:hi], x_sq[lo:hi], z_sq, gamma)
    elif not symmetric or jlo >= lo:  # below the diagonal, a symmetric K is the mirror
        if Z_tiles32 is None:
            values = _tile_values(X, csr, lo, hi, Zj, code, x_sq[lo:hi], z_sq[jlo:jhi], gamma, coef0, degree)
            _put_tile(values, K, lo, jlo, symmetric, transposed, out_rows, out_start)
        elif code == RBF:  # float32 values
            values32 = _rbf_tile32(X, csr, lo, hi, _z_tile(Z_tiles32, p, jlo, jhi), x_sq[lo:hi], z_sq[jlo:jhi], gamma)
            _put_tile(values32, K, lo, jlo, symmetric, transposed, out_rows, out_start)
        else:
            values = _tile_values32(X, csr, lo, hi, _z_tile(Z_tiles32, p, jlo, jhi), code, x_sq[lo:hi], z_sq[jlo:jhi],
                                    gamma, coef0, degree)
            _put_tile(values, K, lo, jlo, symmetric, transposed, out_rows, out_start)


@numba.njit(**NJIT)
def _put_tile(tile, K, lo, jlo, symmetric, transposed, out_rows, out_start):
    """Store the tile of K's rows lo.. and columns jlo.. (``_tiles``' K, ``out_rows`` and ``out_start``), and
    its mirror when K is ``symmetric``: a tile on the diagonal keeps its upper triangle and mirrors it, so that
    K is exactly symmetric whatever order a tile sums in (OpenBLAS's GEMM, which summed the dense tiles until the
    forty-sixth session, took x_i . x_j and x_j . x_i in other orders on an AMD EPYC)."""
    if transposed:
        _put_transposed(tile, K, out_rows[jlo:jlo + tile.shape[1]], out_start + lo)
        return
    h, w = tile.shape
    diagonal = symmetric and jlo == lo
    # loops, not slice assignments (``core.config``), over views indexed from 0: K indexed at jlo + j
    # measured up to 1.8x slower (bench/HISTORY.md, the cold start's notes)
    for i in range(h):
        row, values = K[lo + i, jlo:jlo + w], tile[i]
        for j in range(w):
            row[j] = values[j]
        if diagonal:
            for j in range(i):
                row[j] = tile[j, i]
    if symmetric and jlo > lo:
        _put_transposed(tile, K, np.arange(jlo, jlo + w), lo)


_TRANSPOSED_TILE = 1024  # rows a pass of ``_rows_from_transposed``: four columns' 32 KB made kernel values in L1/L2


@numba.njit(**NJIT)
def _rows_from_transposed(K, out_rows, start, values, bits, slots, Z, code, x_sq, z_sq, gamma, coef0, degree):
    """``kernel_rows_into``'s K[out_rows[j], start:start + n] from X's transpose (``core.rows.TransposedRows``'
    ``values``, ``bits`` and ``slots``): tile by tile of ``_TRANSPOSED_TILE`` rows, four columns at a time, their
    dot products (``_dots_from_transposed``) written into their rows of K and made kernel values there while in
    cache (``finish_tile`` of an (h, 1) tile: the exponents and exp every other tile takes)."""
    n, w = x_sq.shape[0], Z.shape[0]
    x_t = _Transposed(values.reshape(values.size), bits.reshape(bits.size), slots, values.shape[1], bits.shape[1])
    for lo in range(0, n, _TRANSPOSED_TILE):
        hi = min(lo + _TRANSPOSED_TILE, n)
        for j in range(0, w, 4):
            last = min(j + 4, w) - 1  # two or three columns: the four columns' sums, the last one repeated
            if last == j:
                _dots_from_transposed_one(K[out_rows[j], start:start + n], x_t, lo, hi, Z[j])
            else:
                rows = (K[out_rows[j], start:start + n], K[out_rows[min(j + 1, last)], start:start + n],
                        K[out_rows[min(j + 2, last)], start:start + n], K[out_rows[last], start:start + n])
                columns = (Z[j], Z[min(j + 1, last)], Z[min(j + 2, last)], Z[last])
                _dots_from_transposed(rows, x_t, lo, hi, columns)
            for c in range(j, last + 1):
                finish_tile(code, K[out_rows[c], start + lo:start + hi].reshape((hi - lo, 1)), x_sq[lo:hi],
                            z_sq[c:c + 1], gamma, coef0, degree)


# ``_rows_from_transposed``'s X transposed for its loops: ``TransposedRows``' arrays flat, the values' width (a
# feature's values start at a multiple of it), the bytes of a bit row
_Transposed = collections.namedtuple("_Transposed", "values bits slots width row_bytes")


@numba.njit(**NJIT)
def _dots_from_transposed(rows, x_t, lo, hi, columns):
    """rows[c][i] = x_i . z_c for i in lo..hi-1 and the four columns z_c, from X's transpose ``x_t``
    (``_Transposed``; lo a multiple of 32): each the chain of fused multiply-adds over the features in order
    from 0.0, as ``_dense_dots_into``'s, so the same bits as the tiles give (``core.simd``: the sums of 32 rows
    and four columns in registers across the features); a feature kept as bits adds z_c where its bit is set,
    the same bits as the multiply-add by its 0.0 or 1.0.  The rows left over after the blocks of 32 go eight
    (or fewer) at a time."""
    p, values = columns[0].shape[0], x_t.values
    i = lo
    while i + 32 <= hi:
        zero = lanes_zeros(values)
        sums = (zero, zero, zero, zero, zero, zero, zero, zero, zero, zero, zero, zero, zero, zero, zero, zero)
        for f in range(p):
            k = x_t.slots[f]
            if k >= 0:
                at = k * x_t.width + i
                sums = _add_feature_to_four_columns(
                    (lanes_load(values, at, 8), lanes_load(values, at + 8, 8), lanes_load(values, at + 16, 8),
                     lanes_load(values, at + 24, 8)), columns, f, sums)
            else:
                sums = _add_bits_to_four_columns(x_t.bits, (-1 - k) * x_t.row_bytes + i // 8, columns, f, sums)
        for c in range(4):
            for v in range(4):
                lanes_store(rows[c], i + 8 * v, 8, sums[4 * c + v])
        i += 32
    while i < hi:
        lanes = min(8, hi - i)
        zero = lanes_zeros(values)
        a, b, c, d = zero, zero, zero, zero
        for f in range(p):
            k = x_t.slots[f]
            z0, z1 = lanes_splat(zero, columns[0][f]), lanes_splat(zero, columns[1][f])
            z2, z3 = lanes_splat(zero, columns[2][f]), lanes_splat(zero, columns[3][f])
            if k >= 0:
                x = lanes_load(values, k * x_t.width + i, lanes)
                a, b, c, d = lanes_fma(x, z0, a), lanes_fma(x, z1, b), lanes_fma(x, z2, c), lanes_fma(x, z3, d)
            else:
                at = (-1 - k) * x_t.row_bytes + i // 8
                a, b = lanes_add_where(x_t.bits, at, z0, a), lanes_add_where(x_t.bits, at, z1, b)
                c, d = lanes_add_where(x_t.bits, at, z2, c), lanes_add_where(x_t.bits, at, z3, d)
        for column, value in enumerate((a, b, c, d)):
            lanes_store(rows[column], i, lanes, value)
        i += lanes


@numba.njit(**NJIT)
def _dots_from_transposed_one(row, x_t, lo, hi, z):
    """``_dots_from_transposed`` for the one column z: 32 rows' sums in registers a pass, the last pass's vectors
    masked to the rows left."""
    p, values = z.shape[0], x_t.values
    for i in range(lo, hi, 32):
        lanes0, lanes1 = min(8, hi - i), min(8, max(0, hi - i - 8))
        lanes2, lanes3 = min(8, max(0, hi - i - 16)), min(8, max(0, hi - i - 24))
        a0 = a1 = a2 = a3 = lanes_zeros(values)
        for f in range(p):
            k, value = x_t.slots[f], lanes_splat(values, z[f])
            if k >= 0:
                at = k * x_t.width + i
                a0 = lanes_fma(lanes_load(values, at, lanes0), value, a0)
                a1 = lanes_fma(lanes_load(values, at + 8, lanes1), value, a1)
                a2 = lanes_fma(lanes_load(values, at + 16, lanes2), value, a2)
                a3 = lanes_fma(lanes_load(values, at + 24, lanes3), value, a3)
            else:  # a block's four bytes lie within the bit row: it holds whole blocks of 32 rows
                at = (-1 - k) * x_t.row_bytes + i // 8
                a0, a1 = lanes_add_where(x_t.bits, at, value, a0), lanes_add_where(x_t.bits, at + 1, value, a1)
                a2, a3 = lanes_add_where(x_t.bits, at + 2, value, a2), lanes_add_where(x_t.bits, at + 3, value, a3)
        lanes_store(row, i, lanes0, a0)
        lanes_store(row, i + 8, lanes1, a1)
        lanes_store(row, i + 16, lanes2, a2)
        lanes_store(row, i + 24, lanes3, a3)


@numba.njit(**NJIT)
def _add_feature_to_four_columns(x, columns, f, sums):
    """One feature's step of ``_dots_from_transposed``'s 16 chains: sums[4 c + v] plus x[v] times column c's
    value of feature f."""
    z0, z1 = lanes_splat(x[0], columns[0][f]), lanes_splat(x[0], columns[1][f])
    z2, z3 = lanes_splat(x[0], columns[2][f]), lanes_splat(x[0], columns[3][f])
    return (lanes_fma(x[0], z0, sums[0]), lanes_fma(x[1], z0, sums[1]), lanes_fma(x[2], z0, sums[2]),
            lanes_fma(x[3], z0, sums[3]), lanes_fma(x[0], z1, sums[4]), lanes_fma(x[1], z1, sums[5]),
            lanes_fma(x[2], z1, sums[6]), lanes_fma(x[3], z1, sums[7]), lanes_fma(x[0], z2, sums[8]),
            lanes_fma(x[1], z2, sums[9]), lanes_fma(x[2], z2, sums[10]), lanes_fma(x[3], z2, sums[11]),
            lanes_fma(x[0], z3, sums[12]), lanes_fma(x[1], z3, sums[13]), lanes_fma(x[2], z3, sums[14]),
            lanes_fma(x[3], z3, sums[15]))


@numba.njit(**NJIT)
def _add_bits_to_four_columns(bits, at, columns, f, sums):
    """``_add_feature_to_four_columns`` for a feature kept as bits, the 32 rows' four bytes from ``bits[at]``:
    sums[4 c + v] plus column c's value of feature f in the lanes whose bit is set."""
    s = sums[0]
    z0, z1 = lanes_splat(s, columns[0][f]), lanes_splat(s, columns[1][f])
    z2, z3 = lanes_splat(s, columns[2][f]), lanes_splat(s, columns[3][f])
    return (lanes_add_where(bits, at, z0, sums[0]), lanes_add_where(bits, at + 1, z0, sums[1]),
            lanes_add_where(bits, at + 2, z0, sums[2]), lanes_add_where(bits, at + 3, z0, sums[3]),
            lanes_add_where(bits, at, z1, sums[4]), lanes_add_where(bits, at + 1, z1, sums[5]),
            lanes_add_where(bits, at + 2, z1, sums[6]), lanes_add_where(bits, at + 3, z1, sums[7]),
            lanes_add_where(bits, at, z2, sums[8]), lanes_add_where(bits, at + 1, z2, sums[9]),
            lanes_add_where(bits, at + 2, z2, sums[10]), lanes_add_where(bits, at + 3, z2, sums[11]),
            lanes_add_where(bits, at, z3, sums[12]), lanes_add_where(bits, at + 1, z3, sums[13]),
            lanes_add_where(bits, at + 2, z3, sums[14]), lanes_add_where(bits, at + 3, z3, sums[15]))


@numba.njit(**NJIT)
def _put_transposed(tile, K, rows, start):
    """K[rows[j], start + i] = tile[i, j], a row of K at a time (contiguous writes)."""
    for j in range(rows.shape[0]):
        row = K[rows[j], start:start + tile.shape[0]]
        for i in range(row.shape[0]):
            row[i] = tile[i, j]


@numba.njit(**NJIT)
def _z_tile(Z_tiles, p, jlo, jhi):
    """Column tile jlo..jhi-1 of ``_column_tiles``: rows jlo..jhi-1 of Z transposed, (p, jhi - jlo), C-contiguous."""
    return Z_tiles[p * jlo:p * jhi].reshape((p, jhi - jlo))


@numba.njit(**NJIT)
def _tile_values(X, csr, lo, hi, Zj, code, x_sq, z_sq, gamma, coef0, degree):
    """The kernel values of rows lo..hi-1 of X (dense, or CSR as ``csr`` holds it) with the columns of the tile
    Zj, a new float64 (hi - lo, w) tile (``x_sq``, ``z_sq``: the norms of those rows and columns): float64 dot
    products, finished in float64."""
    data, indices, indptr, _ = csr
    dots = _csr_dots(data, indices, indptr, Zj, lo, hi) if indptr.shape[0] else _dense_dots(X, lo, hi, Zj)
    finish_tile(code, dots, x_sq, z_sq, gamma, coef0, degree)
    return dots


@numba.njit(**NJIT)
def _tile_values32(X, csr, lo, hi, Zj32, code, x_sq, z_sq, gamma, coef0, degree):
    """``_tile_values`` from float32 dot products with the float32 tile Zj32 (``_tile_dots32``), finished in float64:
    linear and poly values in float32 (rbf takes ``_rbf_tile32``, or ``_rbf_values32`` on a dense block's tile of
    whole rows)."""
    dots = _tile_dots32(X, csr, lo, hi, Zj32).astype(np.float64)
    finish_tile(code, dots, x_sq, z_sq, gamma, coef0, degree)
    return dots


@numba.njit(**NJIT)
def _rbf_tile32(X, csr, lo, hi, Zj32, x_sq, z_sq, gamma):
    """rbf values of rows lo..hi-1 of X (dense, or CSR as ``csr`` holds it) with the columns of the float32 tile
    Zj32, a new float32 (hi - lo, w) tile: float32 dot products, -gamma ||x - z||^2 from them and the float64
    norms (``_rbf_exponents``, rounded to float32 as it stores them), and float32 exp (``_exp32``)."""
    values = _tile_dots32(X, csr, lo, hi, Zj32)
    _rbf_values32(values, x_sq, z_sq, gamma)
    return values


@numba.njit(**NJIT)
def _tile_dots32(X, csr, lo, hi, Zj32):
    """The float32 dot products of rows lo..hi-1 of X (dense, or CSR as ``csr`` holds it, its float32 entries) with
    the columns of the float32 tile Zj32, a new float32 (hi - lo, w) tile."""
    _, indices, indptr, data32 = csr
    if indptr.shape[0]:
        return _csr_dots(data32, indices, indptr, Zj32, lo, hi)
    return _dense_dots(_rows32(X, lo, hi), 0, hi - lo, Zj32)


@numba.njit(**NJIT)
def _rows32(X, lo, hi):
    """Dense rows lo..hi-1 of X rounded to float32, a new C-contiguous array: the float32 tiles' rows, rounded
    once for all the tile's column vectors rather than at each of the micro-kernel's broadcasts, where a float64
    x took a conversion and a shuffle on the ports of the 512-bit FMAs (an Intel Xeon VM, one thread, 88 x 100
    tiles of 54 features: 1.22-1.42 against 1.65-2.11 ns a value, still with signed indices; the same bits)."""
    return X[lo:hi].astype(np.float32)


@numba.njit(**NJIT)
def _rbf_values32(dots, x_sq, z_sq, gamma):
    """The float32 dot products of a C-contiguous tile become its float32 rbf values, in place (``_rbf_tile32``,
    and ``_tiles`` on a float32 block's rows)."""
    _rbf_exponents(dots, x_sq, z_sq, gamma)
    _exp32_inplace(dots.ravel())


@numba.njit(**NJIT)
def _dense_dots(X, lo, hi, Zj):
    """The dot products of dense rows lo..hi-1 of X with the columns of the (p, w) tile Zj, a new tile of Zj's
    dtype (``_dense_dots_into``: float64, or float32 from the rows rounded to float32)."""
    out = np.empty((hi - lo, Zj.shape[1]), Zj.dtype)
    _dense_dots_into(X, lo, hi, Zj, out)
    return out


@numba.njit(**NJIT)
def _dense_dots_into(X, lo, hi, Zj, out):
    """out[i - lo, j] = x_i . z_j for the dense rows lo..hi-1 of X and the columns of the (p, w) tile Zj, out a
    C-contiguous (hi - lo, w) array: each the chain of fused multiply-adds over the features in order from 0.0,
    the same bits wherever the row and the column stand in their tiles (the tests write the chains out).  In
    Zj's dtype: float64, or float32 with twice the lanes, each x rounded to float32 as it is taken (the float32
    tiles pass rows already rounded, ``_rows32``).  While eight float64 rows are summed in one pass, the next eight
    are prefetched: 522,910 x 54 rows against 100 columns, ``kernel_times`` took 79.4-85.8 against 87.3-88.1 ms, the
    block 124.6-129.1 against 131.2-135.7 ms (an Intel Xeon VM, two threads, three rounds alternating).  Not for
    longer sums, each of whose passes prefetched whole rows: SpSVM-2's covtype-15k fit, whose Gram blocks
    (``dense_products``) sum 7,500 terms, took 4.66-4.86 against 3.79-4.05 s; nor for float32 rows, in cache.

    A micro-kernel's accumulators stay in registers across the features (``core.simd``): eight rows by two
    vectors of eight columns, sixteen independent chains, as many as the FMA units' latency needs.  On this
    project's AVX-512 machine, 88 x 100 tiles of 54 features on one thread took 1.26 ns a value against 2.07 ns
    for OpenBLAS's GEMM (its Haswell kernels, as the machine's environment sets them;
    ``bench/HISTORY.md``), whose sums had also followed where a row stood in a tile.  Rows left over after
    the blocks of eight go one at a time (two chains: latency-bound, so ``_tile_shape`` makes tiles of whole
    blocks).

    More than ``_DOTS_DEPTH`` features (``dense_products``' long sums) go ``_DOTS_DEPTH`` at a time, each block's
    chains taken up from ``out`` where the block before left them (a store and load of the same bits), so that
    the block of Zj the rows pass over stays in cache."""
    p, w = Zj.shape
    n_features = X.shape[1]
    x = X.reshape(X.size)
    z = Zj.reshape(Zj.size)
    o = out.reshape(out.size)
    width = lanes_width(z)
    for f0 in range(0, max(p, 1), _DOTS_DEPTH):  # one pass when p is 0: the zeros are still stored
        f1 = min(f0 + _DOTS_DEPTH, p)
        i = lo
        while i + 8 <= hi:
            if p <= _DOTS_DEPTH and width == 8:  # float64 rows whole in one pass (the kernel tiles): the next eight
                for at in range((i + 8) * n_features, min(i + 16, hi) * n_features, 8):
                    prefetch(x, at)
            for j in range(0, w, 2 * width):
                _eight_rows(x, i * n_features, n_features, z, w, j, min(width, w - j),
                            min(width, max(0, w - j - width)), f0, f1, o, (i - lo) * w + j)
            i += 8
        while i < hi:
            for j in range(0, w, 2 * width):
                _one_row(x, i * n_features, z, w, j, min(width, w - j), min(width, max(0, w - j - width)), f0, f1,
                         o, (i - lo) * w + j)
            i += 1


_DOTS_DEPTH = 256  # features a pass of ``_dense_dots_into``: a block of 256 x 140 float64 columns is 280 KB


@numba.njit(**NJIT)
def _eight_rows(x, start, n_features, z, w, j, lanes0, lanes1, f0, f1, o, at):
    """o[at + r w + c] = x_(row r) . z_(j + c) for the eight rows from x[start] (``n_features`` apart) and the
    ``lanes0 + lanes1`` columns j.. of the flat (p, w) tile z, in z's dtype (``_dense_dots_into``): the chains'
    steps over the features f0..f1-1, from 0.0 when f0 is 0, else from the sums in o."""
    top = _four_rows_from(o, at, w, lanes0, lanes1, f0, z)
    bottom = _four_rows_from(o, at + 4 * w, w, lanes0, lanes1, f0, z)
    width = lanes_width(z)
    for f in range(f0, f1):
        za, zb = lanes_load(z, f * w + j, lanes0), lanes_load(z, f * w + j + width, lanes1)
        top = _add_four_rows(x, start + f, n_features, za, zb, top)
        bottom = _add_four_rows(x, start + 4 * n_features + f, n_features, za, zb, bottom)
    _store_four_rows(o, at, w, lanes0, lanes1, top)
    _store_four_rows(o, at + 4 * w, w, lanes0, lanes1, bottom)


@numba.njit(**NJIT)
def _four_rows_from(o, at, w, lanes0, lanes1, f0, like):
    """Four rows' chains (row r's two vectors at 2r, 2r + 1) to start ``_eight_rows`` with: zeros at the first
    feature, else the sums ``_store_four_rows`` left in o[at + r w:]."""
    if f0 == 0:
        zero = lanes_zeros(like)
        return zero, zero, zero, zero, zero, zero, zero, zero
    width = lanes_width(like)
    return (lanes_load(o, at, lanes0), lanes_load(o, at + width, lanes1),
            lanes_load(o, at + w, lanes0), lanes_load(o, at + w + width, lanes1),
            lanes_load(o, at + 2 * w, lanes0), lanes_load(o, at + 2 * w + width, lanes1),
            lanes_load(o, at + 3 * w, lanes0), lanes_load(o, at + 3 * w + width, lanes1))


# an index known to be >= 0: numba then reads x[i] without the check for a negative index that each signed one
# costs (a shift, an and and an add before every load), which in ``_add_four_rows`` came to four integer
# instructions beside each of its eight broadcasts and took the FMA ports' turns on Intel's server CPUs (an Intel
# Xeon VM, one thread, 88 x 100 tiles of 54 features: float64 1.86-1.92 ns a value against 2.38-2.47 ns, kernel_times
# of 522,910 x 54 rows against 100 6-7% less time; float32, from rows already rounded (``_rows32``), 0.98-1.09
# against 1.34-1.38 ns and kernel_times 12-17% less; the same bits either way; ``bench/HISTORY.md``)
_index = np.uint64


@numba.njit(**NJIT)
def _add_four_rows(x, at, n_features, za, zb, sums):
    """One feature's step of four rows' chains: ``sums`` (row r's two vectors at 2r, 2r + 1) plus x[at + r
    n_features], rounded to the vectors' dtype, times za and zb."""
    a0, b0, a1, b1, a2, b2, a3, b3 = sums
    i, step = _index(at), _index(n_features)
    v0, v1 = lanes_splat(za, x[i]), lanes_splat(za, x[i + step])
    v2, v3 = lanes_splat(za, x[i + _index(2) * step]), lanes_splat(za, x[i + _index(3) * step])
    return (lanes_fma(v0, za, a0), lanes_fma(v0, zb, b0), lanes_fma(v1, za, a1), lanes_fma(v1, zb, b1),
            lanes_fma(v2, za, a2), lanes_fma(v2, zb, b2), lanes_fma(v3, za, a3), lanes_fma(v3, zb, b3))


@numba.njit(**NJIT)
def _store_four_rows(o, at, w, lanes0, lanes1, sums):
    """Row r's two vectors of ``sums`` into o[at + r w:], their first ``lanes0`` and ``lanes1`` lanes."""
    width = lanes_width(o)
    for r in range(4):
        lanes_store(o, at + r * w, lanes0, sums[2 * r])
        lanes_store(o, at + r * w + width, lanes1, sums[2 * r + 1])


@numba.njit(**NJIT)
def _one_row(x, start, z, w, j, lanes0, lanes1, f0, f1, o, at):
    """``_eight_rows`` for the one row from x[start]."""
    a, b = lanes_zeros(z), lanes_zeros(z)
    width = lanes_width(z)
    if f0 > 0:
        a, b = lanes_load(o, at, lanes0), lanes_load(o, at + width, lanes1)
    for f in range(f0, f1):
        v = lanes_splat(a, x[start + f])
        a = lanes_fma(v, lanes_load(z, f * w + j, lanes0), a)
        b = lanes_fma(v, lanes_load(z, f * w + j + width, lanes1), b)
    lanes_store(o, at, lanes0, a)
    lanes_store(o, at + width, lanes1, b)


@numba.njit(**NJIT)
def _csr_dots(data, indices, indptr, Zj, lo, hi):
    """The dot products of CSR rows lo..hi-1 with the columns of the (p, w) tile Zj, a new (hi - lo, w) tile of
    Zj's dtype (the entries ``data`` of the same: float64, or float32 summed in float32).
    A single column (the slant path's steps) sums in a register: a one-column kernel_block of 261,455 rows of
    12 entries took 5.0-5.1 against 9.1-10.7 ms, with the same sums in the same order.  Wider tiles add four
    entries in one pass over a row, in the same order as one at a time (the same sums to the bit): on 128 x 256
    tiles of 12-entry rows, 1.1 against 1.5 ns per value in float32, 1.5-1.7 against 1.9-2.0 in float64."""
    _wide_vectors()
    w = Zj.shape[1]
    dots = np.zeros((hi - lo, w), Zj.dtype)
    if w == 1:
        column = Zj[:, 0]
        for i in range(hi - lo):
            total = dots[i, 0]  # 0 of the tile's dtype
            for q in range(indptr[lo + i], indptr[lo + i + 1]):
                total += data[q] * column[indices[q]]
            dots[i, 0] = total
        return dots
    for i in range(hi - lo):
        add_entries_times_rows(dots[i], data, indices, indptr[lo + i], indptr[lo + i + 1], Zj)
    return dots


@numba.njit(**NJIT)
def add_entries_times_rows(out, data, indices, start, end, Z):
    """out[j] += data[q] Z[indices[q], j] for the stored entries q = start..end-1 of a CSR row and every j <
    out.shape[0] (Z's rows at least that long): the row's dot products with the columns of Z, added to out.
    Four entries a pass over out, a quarter of its loads and stores, each out[j] summed in the entries' order
    (the same sums to the bit as one entry at a time), in 512-bit vectors where the CPU has them
    (``_wide_vectors``: an element-wise loop).  ``_csr_dots`` runs it on each row of a tile, ``core.ebsvm`` on
    each example it steps on, against its support vectors' columns."""
    _wide_vectors()
    w = out.shape[0]
    q = start
    while q + 4 <= end:
        v0, v1, v2, v3 = data[q], data[q + 1], data[q + 2], data[q + 3]
        z0, z1, z2, z3 = Z[indices[q]], Z[indices[q + 1]], Z[indices[q + 2]], Z[indices[q + 3]]
        for j in range(w):
            out[j] = (((out[j] + v0 * z0[j]) + v1 * z1[j]) + v2 * z2[j]) + v3 * z3[j]
        q += 4
    for rest in range(q, end):
        v = data[rest]
        zk = Z[indices[rest]]
        for j in range(w):
            out[j] += v * zk[j]


@numba.njit(**NJIT_PARALLEL)
def _tiles_times(X, csr, Z_tiles, Z_tiles32, code, x_sq, z_sq, gamma, coef0, degree, rows, cols, coef, workers, out):
    """out[c] += K(X, Z) @ coef[c] for each row c of ``coef`` (k, m) and ``out`` (k, n), a row tile at a time (its
    column tiles in turn, each reduced against every row of ``coef``) on each of ``workers`` threads.
    Either X is dense and ``csr`` holds empty arrays, or ``csr`` = (data, indices, indptr, data32) of a CSR X
    (X then an empty stand-in of the same width); ``Z_tiles`` and ``Z_tiles32`` (None: float64 dot products) from
    ``_column_tiles``."""
    n_tiles = (out.shape[1] + rows - 1) // rows
    next_tile = np.zeros(1, dtype=np.int64)
    for _ in numba.prange(workers):  # each thread takes the next free tile until none is left
        t = fetch_add(next_tile, 1)
        while t < n_tiles:  # a row tile's work compiled once, as ``_tiles``' (``_fill_tile``)
            _add_row_tile_times(t, X, csr, Z_tiles, Z_tiles32, code, x_sq, z_sq, gamma, coef0, degree, rows, cols,
                                coef, out)
            t = fetch_add(next_tile, 1)


@numba.njit(**NJIT)
def _add_row_tile_times(t, X, csr, Z_tiles, Z_tiles32, code, x_sq, z_sq, gamma, coef0, degree, rows, cols, coef, out):
    """Row tile t of ``_tiles_times``' out (its arguments): its column tiles' products in turn."""
    n, m = out.shape[1], coef.shape[1]
    p = X.shape[1]
    lo, hi = t * rows, min(t * rows + rows, n)
    for jlo in range(0, m, cols):
        jhi = min(jlo + cols, m)
        if Z_tiles32 is None:
            _add_tile_times(_tile_values(X, csr, lo, hi, _z_tile(Z_tiles, p, jlo, jhi), code, x_sq[lo:hi],
                                         z_sq[jlo:jhi], gamma, coef0, degree), coef, jlo, out, lo)
        elif code == RBF:  # float32 values, summed in float64 with no widened copy
            _add_tile_times(_rbf_tile32(X, csr, lo, hi, _z_tile(Z_tiles32, p, jlo, jhi), x_sq[lo:hi], z_sq[jlo:jhi],
                                        gamma), coef, jlo, out, lo)
        else:
            _add_tile_times(_tile_values32(X, csr, lo, hi, _z_tile(Z_tiles32, p, jlo, jhi), code, x_sq[lo:hi],
                                           z_sq[jlo:jhi], gamma, coef0, degree), coef, jlo, out, lo)


@numba.njit(**NJIT_SUMS)
def _add_tile_times(dots, coef, jlo, out, lo):
    """out[c, lo + i] += sum_j dots[i, j] coef[c, jlo + j] for every row c of ``coef`` and ``out``, in float64
    (vectorised partial sums; ``dots`` float64 or float32): the tile of values once for all the products."""
    for c in range(coef.shape[0]):
        weights, sums = coef[c, jlo:jlo + dots.shape[1]], out[c, lo:lo + dots.shape[0]]
        for i in range(dots.shape[0]):
            row = dots[i]
            total = 0.0
            for j in range(row.shape[0]):
                total += row[j] * weights[j]
            sums[i] += total


@numba.njit(**NJIT_PARALLEL)
def _pair_tiles(x, z, x32, z32, scratch, scratch32, code, x_sq, z_sq, gamma, coef0, degree, rows, cols, symmetric,
                transposed, out_rows, out_start, workers, K):
    """``_tiles`` for CSR rows X and Z (``_pair_inputs``): the same tiles of K with the same values, each of
    ``workers`` threads taking the next free tile with its own row of the scratch arrays."""
    n, m = x_sq.shape[0], z_sq.shape[0]
    n_col_tiles = (m + cols - 1) // cols
    n_tiles = ((n + rows - 1) // rows) * n_col_tiles
    next_tile = np.zeros(1, dtype=np.int64)
    for worker in numba.prange(workers):
        t = fetch_add(next_tile, 1)
        while t < n_tiles:
            lo, jlo = (t // n_col_tiles) * rows, (t % n_col_tiles) * cols
            hi, jhi = min(lo + rows, n), min(jlo + cols, m)
            if not symmetric or jlo >= lo:  # below the diagonal, a symmetric K is the mirror
                if x32 is None:  # as ``_fill_tile``'s three kinds of tile
                    _put_tile(_pair_values(x, z, scratch[worker], lo, hi, jlo, jhi, code, x_sq, z_sq, gamma, coef0,
                                           degree), K, lo, jlo, symmetric, transposed, out_rows, out_start)
                elif code == RBF:
                    _put_tile(_pair_rbf32(x32, z32, scratch32[worker], lo, hi, jlo, jhi, x_sq, z_sq, gamma), K, lo,
                              jlo, symmetric, transposed, out_rows, out_start)
                else:
                    _put_tile(_pair_values(x32, z32, scratch32[worker], lo, hi, jlo, jhi, code, x_sq, z_sq, gamma,
                                           coef0, degree), K, lo, jlo, symmetric, transposed, out_rows, out_start)
            t = fetch_add(next_tile, 1)


@numba.njit(**NJIT_PARALLEL)
def _pair_tiles_times(x, z, x32, z32, scratch, scratch32, code, x_sq, z_sq, gamma, coef0, degree, rows, cols, coef,
                      workers, out):
    """``_tiles_times`` for CSR rows X and Z (``_pair_inputs``): each row tile's column tiles in turn, reduced
    against every row of ``coef`` as there (``_add_tile_times``): the same sums to the bit."""
    n, m = out.shape[1], coef.shape[1]
    n_tiles = (n + rows - 1) // rows
    next_tile = np.zeros(1, dtype=np.int64)
    for worker in numba.prange(workers):
        t = fetch_add(next_tile, 1)
        while t < n_tiles:
            lo, hi = t * rows, min(t * rows + rows, n)
            for jlo in range(0, m, cols):
                jhi = min(jlo + cols, m)
                if x32 is None:
                    _add_tile_times(_pair_values(x, z, scratch[worker], lo, hi, jlo, jhi, code, x_sq, z_sq, gamma,
                                                 coef0, degree), coef, jlo, out, lo)
                elif code == RBF:
                    _add_tile_times(_pair_rbf32(x32, z32, scratch32[worker], lo, hi, jlo, jhi, x_sq, z_sq, gamma),
                                    coef, jlo, out, lo)
                else:
                    _add_tile_times(_pair_values(x32, z32, scratch32[worker], lo, hi, jlo, jhi, code, x_sq, z_sq,
                                                 gamma, coef0, degree), coef, jlo, out, lo)
            t = fetch_add(next_tile, 1)


@numba.njit(**NJIT)
def _pair_values(x, z, scratch, lo, hi, jlo, jhi, code, x_sq, z_sq, gamma, coef0, degree):
    """The kernel values of CSR rows lo..hi-1 of X with rows jlo..jhi-1 of Z, a new float64 tile finished in
    float64 from their dot products in the entries' dtype: ``_tile_values`` (float64 entries) or
    ``_tile_values32`` (float32)."""
    values = _pair_dots(x, z, lo, hi, jlo, jhi, scratch).astype(np.float64)
    finish_tile(code, values, x_sq[lo:hi], z_sq[jlo:jhi], gamma, coef0, degree)
    return values


@numba.njit(**NJIT)
def _pair_rbf32(x32, z32, scratch32, lo, hi, jlo, jhi, x_sq, z_sq, gamma):
    """``_rbf_tile32`` for CSR rows lo..hi-1 of X and jlo..jhi-1 of Z (float32 entries): a new float32 tile."""
    values = _pair_dots(x32, z32, lo, hi, jlo, jhi, scratch32)
    _rbf_values32(values, x_sq[lo:hi], z_sq[jlo:jhi], gamma)
    return values


@numba.njit(**NJIT)
def _pair_dots(x, z, lo, hi, jlo, jhi, scratch):
    """x_i . z_j for CSR rows lo..hi-1 of X and jlo..jhi-1 of Z (``x``, ``z``: data, indices, indptr), a new
    (hi - lo, jhi - jlo) tile of their entries' dtype, a row at a time (``add_scattered_dots``): x_i put into
    ``scratch`` (zeros, p of them; zeros again after), then summed over z_j's entries.  The products of the
    features x_i and z_j share are added in the features' order, as ``_csr_dots`` adds them (its other products
    x 0.0 leave its sums as they are, as these do here): the same values to the bit, at no cost in the features
    z_j does not store."""
    x_data, x_indices, x_indptr = x
    z_data, z_indices, z_indptr = z
    dots = np.zeros((hi - lo, jhi - jlo), scratch.dtype)  # 0 of the entries' dtype, where the sums start
    for i in range(lo, hi):
        add_scattered_dots(dots[i - lo], x_data, x_indices, x_indptr[i], x_indptr[i + 1], z_data, z_indices,
                            z_indptr[jlo:jhi], z_indptr[jlo + 1:jhi + 1], scratch)
    return dots


@numba.njit(**NJIT)
def add_scattered_dots(out, x_data, x_indices, start, end, z_data, z_indices, z_starts, z_ends, scratch):
    """out[j] += x . z_j for the CSR row x (entries ``x_data[start:end]`` at features ``x_indices[start:end]``)
    and the rows z_j, j < out.shape[0] (entries ``z_data[a:b]`` at features ``z_indices[a:b]``, a = z_starts[j],
    b = z_ends[j]), summed in out's dtype: x put into ``scratch`` (zeros, p of them; zeros again after), then
    each sum taken over z_j's entries, in their order.  ``_pair_dots`` runs it on each row of a tile (z_j's
    bounds from Z's indptr), ``core.ebsvm`` on each example it steps on, against the support vectors it holds by
    their entries (their spans in its pool)."""
    for q in range(start, end):
        scratch[x_indices[q]] = x_data[q]
    for j in range(out.shape[0]):
        total = out[j]
        for e in range(z_starts[j], z_ends[j]):
            total += z_data[e] * scratch[z_indices[e]]
        out[j] = total
    for q in range(start, end):
        scratch[x_indices[q]] = 0.0


def _serial_twin(parallel, name):
    """``parallel``'s loops compiled for the calling thread alone, under a name of their own.

    numba's cache keys a function's machine code by its module, name, line and bytecode, not by its
    options: a twin that shared the parallel function's ``py_func`` shared its cache entries, and
    whichever compiled first served both (the pooled loops then ran on one thread, 2x slower on two
    cores; ``tests/core/test_kernels.py`` checks that the pooled loops use the pool)."""
    source = parallel.py_func
    twin = types.FunctionType(source.__code__, source.__globals__, name, source.__defaults__, source.__closure__)
    twin.__qualname__ = name
    return numba.njit(**NJIT)(twin)


# one tile, or a small block: the same loops on the calling thread.  Waking numba's pool for a single tile
# costs more than the tile when the cores are busy (measured: 19 ms against 59 us for a small block under load)
_tiles_serial = _serial_twin(_tiles, "_tiles_serial")
_tiles_times_serial = _serial_twin(_tiles_times, "_tiles_times_serial")
_pair_tiles_serial = _serial_twin(_pair_tiles, "_pair_tiles_serial")
_pair_tiles_times_serial = _serial_twin(_pair_tiles_times, "_pair_tiles_times_serial")


@numba.njit(**NJIT)
def finish_tile(code, dots, x_sq, z_sq, gamma, coef0, degree):
    """Turn the dot products dots[i, j] = x_i . z_j of a C-contiguous tile into kernel values, in place."""
    if code == RBF:
        _rbf_exponents(dots, x_sq, z_sq, gamma)
        _exp_inplace(dots.ravel())  # the whole tile in one loop
    elif code == POLY:
        for i in range(dots.shape[0]):
            _poly_row(dots[i], gamma, coef0, degree)


@numba.njit(**NJIT_FMA)
def _rbf_exponents(dots, x_sq, z_sq, gamma):
    """dots[i, j] = x_i . z_j becomes -gamma ||x_i - z_j||^2, floored at _EXP_FLOOR.  The inner loop runs
    along each row, or, in a single-column tile (the slant path's steps), down the column, so that it
    vectorises: a row at a time, kernel_block of 20,000 x 54 rows against one column took 0.86 ms, down
    the column 0.31 ms (down the columns of 4 to 16 took up to 1.7x longer than along the rows)."""
    _wide_vectors()
    rows, cols = dots.shape
    if cols == 1:
        for i in range(rows):
            dots[i, 0] = _rbf_exponent(dots[i, 0], x_sq[i], z_sq[0], gamma)
    else:
        for i in range(rows):
            for j in range(cols):
                dots[i, j] = _rbf_exponent(dots[i, j], x_sq[i], z_sq[j], gamma)


@numba.njit(**NJIT_FMA)
def _rbf_exponent(dot, x_sq, z_sq, gamma):
    """-gamma ||x - z||^2 from x . z and the squared norms, floored at _EXP_FLOOR."""
    norms = x_sq + z_sq
    d2 = norms - 2.0 * dot  # ||x - z||^2 = |x|^2 + |z|^2 - 2 x . z
    if d2 <= _SAME * norms:  # cancellation noise, including negative values
        d2 = 0.0
    return max(-gamma * d2, _EXP_FLOOR)


@numba.njit(**NJIT)
def _poly_row(row, gamma, coef0, degree):
    """row[j] = x . z_j becomes (gamma x . z_j + coef0)^degree."""
    for j in range(row.shape[0]):
        row[j] = (gamma * row[j] + coef0) ** degree


@numba.njit(**NJIT_FMA)
def _exp_inplace(a):
    """a[j] = exp(a[j]) for a[j] in [-708, 0], within 1 ulp (``_exp``), in one pass that vectorises (libm's exp
    does not).  One pass instead of three over a scratch array (the polynomial, 2^k from its bits, the product):
    0.96 against 1.36 ns per value of a 128 x 256 tile with the rbf exponents, the same values to the bit."""
    _wide_vectors()
    for j in range(a.shape[0]):
        a[j] = _exp(a[j])


@numba.njit(**NJIT_FMA)
def _exp(x):
    """exp(x) for x in [-708, 0], within 1 ulp: 2^k exp(r), exp(r) from its Taylor polynomial of degree 13.

    k = round(x / ln 2) stays in the low mantissa bits of kd = x / ln 2 + 1.5 * 2^52, and integer
    operations on kd's bits (``_bits``, ``_float``: reinterpretations, no instruction) make the float 2^k:
    no float-to-int conversion, which AVX2 cannot vectorise.
    """
    t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11, t12, t13 = _TAYLOR
    kd = x * _LOG2E + _ROUND
    k = kd - _ROUND
    r = (x - k * _LN2_HI) - k * _LN2_LO
    p = ((((((((((((t13 * r + t12) * r + t11) * r + t10) * r + t9) * r + t8) * r + t7) * r + t6) * r + t5) * r + t4)
              * r + t3) * r + t2) * r + t1) * r + t0
    return p * _float((_bits(kd) - _ROUND_BITS + 1023) << 52)  # p 2^k, k in [-1022, 0]


@numba.njit(**NJIT_FMA)
def _exp32_inplace(a):
    """a[j] = exp(a[j]) for float32 a[j] <= 0 (``_exp32``), in one pass that vectorises."""
    _wide_vectors()
    for j in range(a.shape[0]):
        a[j] = _exp32(a[j])


@numba.njit(**NJIT_FMA)
def _exp32(x):
    """``_exp`` in float32, for float32 x <= 0, within 1 ulp of float32 over [-87, 0] and exp(-87) below it (x
    floored at _EXP_FLOOR32, so that 2^k stays normal): the same reduction with float32 constants, exp(r) to
    degree 7, and 2^k from the low bits of kd = x / ln 2 + 1.5 * 2^23 (``_bits32``, ``_float32``; numba takes
    the integer steps in int64, the bits then cut back to int32)."""
    t0, t1, t2, t3, t4, t5, t6, t7 = _TAYLOR32
    x = max(x, _EXP_FLOOR32)
    kd = x * _LOG2E32 + _ROUND32
    k = kd - _ROUND32
    r = (x - k * _LN2_HI32) - k * _LN2_LO32
    p = ((((((t7 * r + t6) * r + t5) * r + t4) * r + t3) * r + t2) * r + t1) * r + t0
    return p * _float32(np.int32((_bits32(kd) - _ROUND_BITS32 + 127) << 23))  # p 2^k, k in [-126, 0]


def _bitcast(source, target):
    """An njit intrinsic that takes a ``source`` value's bits as a ``target`` (numba types of one size): LLVM's
    bitcast, which costs no instruction and vectorises."""

    @intrinsic
    def bitcast(typingctx, value):
        if value != source:
            return None

        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], context.get_value_type(target))

        return target(source), codegen

    return bitcast


@intrinsic
def _wide_vectors(typingctx):
    """Called first in an njit function: LLVM may vectorise that function with 512-bit vectors where the CPU has
    them (AVX-512), where its tuning for Intel's server CPUs holds numba's code to 256 bits (the function
    attribute "prefer-vector-width", as clang's -mprefer-vector-width sets it).  Only for element-wise loops:
    each value takes the same operations in the same order at any width, so the same bits; a reduction's
    partial sums would follow the width (``core.config.NJIT_SUMS``).  llvmlite checks only the attribute
    names it knows, so the string attribute goes into the function's set as the text LLVM reads.
    Measured on this project's AVX-512 machine (one thread, throw-away timings): the rbf exponents and exp of a
    128 x 256 tile 1.52-1.61 against 2.00-2.02 ns per value, 12-entry CSR rows' dots 2.04-2.08 against
    2.28-2.38; ``kernel_times`` of 200,000 Forest-shaped rows against 1,000 columns, medians of six alternating
    process pairs, 2.32 against 2.89 ns per value as CSR, 1.34 against 1.67 in float32, 2.94 against 3.49
    dense (whose GEMM is BLAS's either way)."""

    def codegen(context, builder, signature, args):
        set.add(builder.function.attributes, '"prefer-vector-width"="512"')
        return context.get_dummy_value()

    return nb_types.none(), codegen


_bits = _bitcast(nb_types.float64, nb_types.int64)  # the bits of a float64, as an int64
_float = _bitcast(nb_types.int64, nb_types.float64)  # the float64 of those bits
_bits32 = _bitcast(nb_types.float32, nb_types.int32)  # the same for float32 and int32
_float32 = _bitcast(nb_types.int32, nb_types.float32)
