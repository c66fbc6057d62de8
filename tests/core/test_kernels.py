"""kernel_block, kernel_times, kernel_diag and KernelSpec against the naive reference."""

import dataclasses
import json
import os
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal

from core.kernels import (LINEAR, POLY, RBF, KernelSpec, dense_products, kernel_block, kernel_diag, kernel_rows_into,
                          kernel_times, rbf_times_bounded)
from core.rows import squared_norms, transposed_rows
from tests.naive import naive_kernel

SPECS = [KernelSpec("rbf", gamma=0.7), KernelSpec("linear"), KernelSpec("poly", gamma=0.5, degree=3, coef0=1.0),
         KernelSpec("poly", gamma=2.0, degree=1, coef0=-0.5)]
KINDS = ["dense", "csr"]
# (n_x, n_z, p): empty blocks, single rows, several row tiles (n_x > 128), several column tiles (n_z > 256)
SHAPES = [(0, 4, 5), (6, 0, 5), (1, 1, 5), (1, 9, 5), (9, 1, 5), (40, 13, 7), (300, 30, 12), (20, 300, 6), (5, 3, 0)]


def _rows(n, p, seed, kind):
    """n rows of moderate size, about half the entries zero, and a zero row when n > 2."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) / np.sqrt(max(p, 1)) * (rng.random((n, p)) < 0.5)
    if n > 2:
        X[1] = 0.0
    return sp.csr_matrix(X) if kind == "csr" else X


def _pairs(n_x, n_z, p, x_kind, z_kind):
    """X, and Z holding copies of X's first rows (identical rows)."""
    X = _rows(n_x, p, 1, x_kind)
    Z = _rows(n_z, p, 2, z_kind)
    k = min(3, n_x, n_z)
    if k:
        Z = sp.vstack([X[:k], Z[k:]], format="csr") if z_kind == "csr" else np.vstack([_dense(X[:k]), Z[k:]])
    return X, Z


def _dense(X):
    return X.toarray() if sp.issparse(X) else X


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s.name}-d{s.degree}")
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("x_kind", KINDS)
@pytest.mark.parametrize("z_kind", KINDS)
def test_block_and_its_product_match_naive(spec, shape, x_kind, z_kind):
    X, Z = _pairs(*shape, x_kind, z_kind)
    K = kernel_block(X, Z, spec)
    assert K.shape == shape[:2] and K.dtype == np.float64 and K.flags.c_contiguous
    expected = naive_kernel(X, Z, spec)
    assert_allclose(K, expected, rtol=0, atol=1e-12)
    coef = np.random.default_rng(3).normal(size=shape[1])
    assert_allclose(kernel_times(X, Z, spec, coef), expected @ coef, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("spec", SPECS[:3], ids=lambda s: s.name)
def test_a_csr_column_alone_is_that_column_of_a_wider_block_bit_for_bit(spec):
    """One column of CSR rows (a slant step) sums each row in a register, over two row tiles here; its values
    are those the column gets beside another one, summed in memory."""
    X = _rows(40_000, 9, 4, "csr")
    Z = _rows(2, 9, 5, "dense")
    assert_array_equal(kernel_block(X, Z[:1], spec)[:, 0], kernel_block(X, Z, spec)[:, 0])
    assert_allclose(kernel_block(X, Z[:1], spec), naive_kernel(X, Z[:1], spec), rtol=0, atol=1e-12)


@pytest.mark.parametrize("spec", SPECS[:3], ids=lambda s: s.name)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("x_kind", KINDS)
@pytest.mark.parametrize("pooled", [False, True])
def test_a_transposed_block_is_the_blocks_transpose_bit_for_bit(monkeypatch, spec, shape, x_kind, pooled):
    """transposed=True writes each tile transposed: K(Z, X) with K(X, Z)'s values, C-contiguous, on the pool too,
    and X = Z gives the transpose of the full (mirrored) Gram matrix."""
    import core.kernels

    X, Z = _pairs(*shape, x_kind, "dense")
    K = kernel_block(X, Z, spec)
    if pooled:
        monkeypatch.setattr(core.kernels, "_PARALLEL_MIN_OPS", 0)
    Kt = kernel_block(X, Z, spec, transposed=True)
    assert Kt.shape == shape[1::-1] and Kt.flags.c_contiguous
    assert_array_equal(Kt, K.T)
    assert_array_equal(kernel_block(X, X, spec, transposed=True), kernel_block(X, X, spec).T)


@pytest.mark.parametrize("spec", SPECS[:3], ids=lambda s: s.name)
@pytest.mark.parametrize("x_kind", KINDS)
@pytest.mark.parametrize("pooled", [False, True])
def test_kernel_rows_into_writes_the_transposed_blocks_rows_where_asked_and_nothing_else(monkeypatch, spec, x_kind,
                                                                                       pooled):
    """K(z_j, X) lands in K[rows[j], start:start + n] with the transposed block's bits; every other value stays."""
    import core.kernels

    X, Z = _pairs(20_000, 7, 12, x_kind, "dense")  # several row tiles
    if pooled:
        monkeypatch.setattr(core.kernels, "_PARALLEL_MIN_OPS", 0)
    store = np.full((10, 20_010), -5.0)
    rows = np.array([8, 0, 3, 9, 1, 6, 2])
    kernel_rows_into(store, rows, 4, X, Z, spec)
    expected = np.full((10, 20_010), -5.0)
    expected[rows, 4:20_004] = kernel_block(X, Z, spec, transposed=True)
    assert_array_equal(store, expected)


def _fma_chain(x, z):
    """x . z as a chain of fused multiply-adds over the features in order from 0.0, each rounded once (exact
    rationals, then the correctly rounded float): the dense float64 tiles' sums, written out."""
    total = 0.0
    for a, b in zip(x, z):
        total = float(Fraction(a) * Fraction(b) + Fraction(total))
    return total


def _with_bit_features(X, Z):
    """X with every third feature of 0.0 and 1.0 (one of them all zeros), which its transpose keeps as bits, and
    one of 0.0, -0.0 and 1.0, which it keeps as values; Z's values of them 0, 1 and others."""
    X, Z = X.copy(), Z.copy()
    rng = np.random.default_rng(4)
    for f in range(0, X.shape[1], 3):
        X[:, f] = 0.0 if f == 3 else rng.integers(0, 2, X.shape[0])
    if X.shape[1] > 1:
        X[:, 1] = rng.choice([0.0, -0.0, 1.0], X.shape[0])
    Z[:, ::2] = rng.choice([0.0, 1.0, -2.5, 0.3], Z[:, ::2].shape)
    return X, Z


@pytest.mark.parametrize("bits", [False, True], ids=["values", "bits"])
@pytest.mark.parametrize("n_x, n_z, p", [(1, 1, 1), (7, 3, 4), (1_300, 5, 11), (2_100, 2, 22), (2_100, 4, 22),
                                         (1_045, 7, 9)],
                         ids=str)  # 1,300 and 2,100 rows: tiles of 1,024, blocks of 32 and the rows after them
def test_kernel_rows_into_from_the_transpose_gives_the_tiles_bits(n_x, n_z, p, bits):
    """With ``x_transposed`` the linear values are the chains of fused multiply-adds over the features in order,
    to the bit, and the rbf values ``kernel_block``'s (whose tiles sum the same chains); only the rows asked
    change.  Features of 0.0 and 1.0, kept as bits, give the same bits as the multiply-adds."""
    X, Z = _pairs(n_x, n_z, p, "dense", "dense")
    if bits:
        X, Z = _with_bit_features(X, Z)
    X_t = transposed_rows(X, limit_bytes=X.nbytes)
    assert X_t.shape == (p, n_x) and (X_t.bits.shape[0] > 0 or not bits)
    rows = np.arange(n_z)[::-1] * 2 + 1
    for spec in (KernelSpec("linear"), KernelSpec("rbf", gamma=0.7)):
        store = np.full((2 * n_z + 2, n_x + 3), -5.0)
        kernel_rows_into(store, rows, 2, X, Z, spec, x_transposed=X_t)
        expected = np.full_like(store, -5.0)
        if spec.name == "linear":
            expected[rows, 2:2 + n_x] = [[_fma_chain(x, z) for x in X] for z in Z]
        else:
            expected[rows, 2:2 + n_x] = kernel_block(X, Z, spec, transposed=True)
        assert_array_equal(store, expected)
        assert_allclose(store[rows, 2:2 + n_x], naive_kernel(X, Z, spec).T, rtol=0, atol=1e-12)


def test_kernel_rows_into_from_the_transpose_gives_a_value_the_same_bits_wherever_it_stands():
    """A row's values do not follow the columns computed with it (one at a time, in pairs) nor the rows around
    it (a slice of X at another offset, whose transpose keeps more features as bits): the slant path's driver
    and partitions compute the same columns."""
    X, Z = _with_bit_features(*_pairs(1_500, 5, 13, "dense", "dense"))
    X[1_000, 6] = 2.0  # feature 6: values in X and in rows 333-1,032, bits in rows 0-899
    spec = KernelSpec("rbf", gamma=0.3)
    together = np.zeros((5, 1_500))
    kernel_rows_into(together, np.arange(5), 0, X, Z, spec, x_transposed=transposed_rows(X, X.nbytes))
    alone = np.zeros((5, 1_500))
    for j in range(5):
        kernel_rows_into(alone, [j], 0, X, Z[j:j + 1], spec, x_transposed=transposed_rows(X, X.nbytes))
    assert_array_equal(alone, together)
    for lo, hi in ((333, 1_033), (0, 900)):
        part = np.zeros((5, hi - lo))
        kernel_rows_into(part, np.arange(5), 0, X[lo:hi], Z, spec, x_transposed=transposed_rows(X[lo:hi], X.nbytes))
        assert_array_equal(part, together[:, lo:hi])


@pytest.mark.parametrize("x_kind, transpose, message", [
    ("dense", lambda X: np.ascontiguousarray(X.T), "x_transposed must be the transpose of a dense X \\(shape \\(30, "
                                                   "4\\)\\): core.rows.transposed_rows"),  # an array
    ("dense", lambda X: transposed_rows(X[:29], 1 << 20), "x_transposed must be the transpose"),
    ("dense", lambda X: transposed_rows(X[:, :3], 1 << 20), "x_transposed must be the transpose"),
    ("csr", lambda X: transposed_rows(X.toarray(), 1 << 20), "x_transposed must be the transpose of a dense X"),
])
def test_kernel_rows_into_names_a_transpose_it_cannot_use(x_kind, transpose, message):
    X, Z = _pairs(30, 2, 4, x_kind, "dense")
    with pytest.raises(ValueError, match=message):
        kernel_rows_into(np.zeros((2, 30)), [0, 1], 0, X, Z, KernelSpec("rbf", gamma=0.5), x_transposed=transpose(X))


@pytest.mark.parametrize("problem, message", [
    (dict(rows=[0, 1]), "rows .* must name a row of K"),
    (dict(rows=[0, 1, 10]), "rows .* must name a row of K"),
    (dict(start=11), "start \\(11\\) leave 300 values"),
    (dict(K=np.zeros((10, 310), np.float32)), "C-contiguous 2-d float64"),
    (dict(K=np.zeros((310, 10)).T), "C-contiguous 2-d float64"),
])
def test_kernel_rows_into_names_a_store_that_cannot_take_the_rows(problem, message):
    X, Z = _pairs(300, 3, 5, "dense", "dense")
    args = dict(K=np.zeros((10, 310)), rows=[0, 1, 2], start=0)
    args.update(problem)
    with pytest.raises(ValueError, match=message):
        kernel_rows_into(args["K"], args["rows"], args["start"], X, Z, KernelSpec("rbf", gamma=0.5))


@pytest.mark.parametrize("spec", SPECS[:3], ids=lambda s: s.name)
@pytest.mark.parametrize("shape", [(1, 9, 5), (9, 1, 5), (300, 30, 12), (2500, 30, 12), (20, 300, 6), (700, 300, 54)],
                         ids=str)  # (2500, 30, 12): several tiles of whole rows, on the pool below
def test_float32_precision_is_the_naive_kernel_of_the_rounded_rows(monkeypatch, spec, shape):
    """precision="float32": a float32 block, the naive kernel of the rows rounded to float32, with float64 norms
    (to ~1e-6 of it, the float32 sums' rounding and, for rbf, the float32 exp; linear and poly values rounded
    to float32 once more as they are stored), the same bits on the pool, transposed and for one row alone (the
    tiles' chains of fused multiply-adds in float32); CSR rows the same (their entries summed in float32 in their
    own loop).  A Gram matrix: exactly symmetric, and the block of the same rows given twice.  ``kernel_times`` sums the values before that last
    rounding."""
    import core.kernels

    def naive(A, B):  # the naive kernel of the rows rounded to float32, with float64 norms
        dots = A.astype(np.float32).astype(np.float64) @ B.astype(np.float32).astype(np.float64).T
        if spec.name == "rbf":
            return np.exp(-spec.gamma * np.maximum(squared_norms(A)[:, None] + squared_norms(B)[None, :] - 2 * dots,
                                                   0.0))
        return (spec.gamma * dots + spec.coef0) ** spec.degree if spec.name == "poly" else dots

    def rounding(values):  # linear and poly values are rounded to float32 once more as they are stored
        return 0.0 if spec.name == "rbf" else np.spacing(np.float32(np.abs(values).max()))

    X, Z = _pairs(*shape, "dense", "dense")
    coef = np.random.default_rng(6).normal(size=shape[1])
    K = kernel_block(X, Z, spec, precision="float32")
    expected = naive(X, Z)
    stored = rounding(expected)
    assert K.dtype == np.float32
    assert_allclose(K, expected, rtol=0, atol=2e-6 + stored)
    assert not np.array_equal(K, kernel_block(X, Z, spec)) or shape[2] < 6  # float32 sums of 6+ features differ
    sums = np.abs(coef).sum() * stored + 1e-12
    assert_allclose(kernel_times(X, Z, spec, coef, precision="float32"), K @ coef, rtol=1e-12, atol=sums)
    assert_array_equal(kernel_block(X, Z, spec, precision="float32", transposed=True), K.T)
    assert_array_equal(kernel_block(X[:1], Z, spec, precision="float32")[0], K[0])
    S = sp.csr_matrix(X)
    K_csr = kernel_block(S, Z, spec, precision="float32")
    assert K_csr.dtype == np.float32
    assert_allclose(K_csr, expected, rtol=0, atol=2e-6 + stored)
    assert not np.array_equal(K_csr, kernel_block(S, Z, spec)) or shape[2] < 6
    assert_allclose(kernel_times(S, Z, spec, coef, precision="float32"), K_csr @ coef, rtol=1e-12, atol=sums)
    assert_array_equal(kernel_block(S, Z, spec, precision="float32", transposed=True), K_csr.T)
    assert_array_equal(kernel_block(S[:1], Z, spec, precision="float32")[0], K_csr[0])
    gram = kernel_block(X, X, spec, precision="float32")  # a Gram matrix, its upper tiles mirrored
    assert_array_equal(gram, gram.T)
    gram_expected = naive(X, X)
    assert_allclose(gram, gram_expected, rtol=0, atol=2e-6 + rounding(gram_expected))
    assert_array_equal(kernel_block(X, X.copy(), spec, precision="float32"), gram)
    assert_array_equal(kernel_block(S, S, spec, precision="float32"),
                       kernel_block(S, S.copy(), spec, precision="float32"))
    monkeypatch.setattr(core.kernels, "_PARALLEL_MIN_OPS", 0)
    assert_array_equal(kernel_block(X, Z, spec, precision="float32"), K)
    assert_array_equal(kernel_block(S, Z, spec, precision="float32"), K_csr)
    assert_array_equal(kernel_block(X, X, spec, precision="float32"), gram)


def test_an_unknown_precision_is_named():
    X = np.ones((3, 2))
    for f in (lambda: kernel_block(X, X, KernelSpec(), precision="half"),
              lambda: kernel_times(X, X, KernelSpec(), np.ones(3), precision=np.float32),
              lambda: kernel_block(X[:0], X, KernelSpec(), precision="double")):  # an empty block is checked too
        with pytest.raises(ValueError, match=r"precision must be one of \('float64', 'float32'\), got"):
            f()


@pytest.mark.parametrize("spec", SPECS[:3], ids=lambda s: s.name)
@pytest.mark.parametrize("n, p", [(0, 5), (1, 5), (40, 7), (300, 12), (700, 3)])
@pytest.mark.parametrize("x_kind", KINDS)
def test_a_gram_matrix_is_exactly_symmetric_on_the_pool_and_off_it(monkeypatch, spec, n, p, x_kind):
    """kernel_block(X, X) mirrors its upper tiles: K == K.T bit for bit, the same K on both paths."""
    import core.kernels

    X = _rows(n, p, 5, x_kind)
    K = kernel_block(X, X, spec)
    assert_allclose(K, naive_kernel(X, X, spec), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(K, K.T)
    monkeypatch.setattr(core.kernels, "_PARALLEL_MIN_OPS", 0)
    np.testing.assert_array_equal(kernel_block(X, X, spec), K)


@pytest.mark.parametrize("x_kind", KINDS)
def test_kernel_times_gives_the_same_bits_on_the_pool_and_explains_a_wrong_coef(monkeypatch, x_kind):
    import core.kernels

    X, Z = _pairs(700, 300, 12, x_kind, "dense")  # several row and column tiles
    coef = np.random.default_rng(4).normal(size=300)
    serial = kernel_times(X, Z, SPECS[0], coef)
    monkeypatch.setattr(core.kernels, "_PARALLEL_MIN_OPS", 0)
    np.testing.assert_array_equal(kernel_times(X, Z, SPECS[0], coef), serial)
    with pytest.raises(ValueError, match="one coefficient per row of Z"):
        kernel_times(X, Z, SPECS[0], coef[:-1])


@pytest.mark.parametrize("x_kind", KINDS)
@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize("pooled", [False, True])
def test_kernel_times_of_several_coefficient_columns_gives_each_columns_own_bits(monkeypatch, x_kind, precision,
                                                                                 pooled):
    import core.kernels

    if pooled:
        monkeypatch.setattr(core.kernels, "_PARALLEL_MIN_OPS", 0)
    X, Z = _pairs(700, 300, 12, x_kind, "dense")  # several row and column tiles
    coef = np.random.default_rng(5).normal(size=(300, 3))
    for spec in SPECS[:3]:
        together = kernel_times(X, Z, spec, coef, precision=precision)
        assert together.shape == (700, 3)
        for c in range(3):
            assert_array_equal(together[:, c], kernel_times(X, Z, spec, coef[:, c], precision=precision))
    assert together.flags.c_contiguous
    assert kernel_times(X[:0], Z, SPECS[0], coef).shape == (0, 3)
    assert_array_equal(kernel_times(X, Z[:0], SPECS[0], coef[:0]), np.zeros((700, 3)))
    assert kernel_times(X, Z, SPECS[0], coef[:, :0]).shape == (700, 0)
    with pytest.raises(ValueError, match="one coefficient per row of Z"):
        kernel_times(X, Z, SPECS[0], coef.T)


@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_rows_taken_from_a_block_keep_their_bits_when_shaped_as_it(precision):
    """A CSR block's column tiles follow its mean entries per row, so rows taken from it would sum their products
    in other groups: shaped as the block, they keep its call's bits (rows of ~3,000 entries, where the tiles'
    width depends on them)."""
    rng = np.random.default_rng(8)
    X = sp.csr_matrix(rng.standard_normal((200, 5_000)) * (rng.random((200, 5_000)) < np.linspace(0.05, 0.95, 200)
                                                            [:, None]))
    Z, coef = rng.standard_normal((300, 5_000)) / 40, rng.standard_normal(300)
    spec = KernelSpec("rbf", gamma=1e-4)  # values from 0.6 to 1
    whole = kernel_times(X, Z, spec, coef, precision=precision)
    for rows in (np.arange(0, 200, 3), np.arange(150, 200), np.array([7])):
        assert_array_equal(kernel_times(X[rows], Z, spec, coef, precision=precision, shaped_as=X), whole[rows])


def _bounded_cases():
    """(X, Z, gamma, coef) where float32's error is small, large, or beyond the bound's reach."""
    rng = np.random.default_rng(6)
    X = rng.standard_normal((3_000, 22)) * rng.random((3_000, 1)) * 2
    Z = np.vstack([X[:40], rng.standard_normal((360, 22))])  # identical rows: exponents of 0
    coef = rng.standard_normal(400) * 10.0 ** rng.uniform(-3, 3, 400)
    yield "moderate", X, Z, 0.3, coef
    yield "csr", sp.csr_matrix(np.where(rng.random(X.shape) < 0.6, 0.0, X)), Z, 0.3, coef
    yield "long rows", X * 30, Z * 30, 1e-3, coef  # |x|^2 ~ 10^4 against gamma 10^-3: the dot products' error
    yield "narrow", X[:, :3], Z[:, :3], 40.0, np.abs(coef)  # values down to exp's floor
    yield "beyond", X * 10, Z * 10, 50.0, coef  # delta above 1/64 for most rows: no bound
    # columns near the first row, and unit coefficients with the signs of the float32 values' errors on it: errors
    # that add up, the largest share of the bound seen (3.5%; a bound 30 times smaller fails)
    near = X[0] + 0.1 * rng.standard_normal((400, 22))
    error = (kernel_block(X[:1], near, KernelSpec("rbf", gamma=0.3), precision="float32").astype(np.float64)
             - kernel_block(X[:1], near, KernelSpec("rbf", gamma=0.3)))[0]
    yield "adversarial", X[:50], near, 0.3, np.where(error > 0, 1.0, -1.0)
    yield "huge", X[:200] * 1e19, Z * 1e19, 0.2 / (22 * 1e38), coef  # float32 products overflow
    yield "tiny", X[:200] * 1e-21, Z * 1e-21, 0.2 / (22 * 1e-42), coef  # entries below float32's normal range


@pytest.mark.parametrize("case", ["moderate", "csr", "long rows", "narrow", "beyond", "adversarial", "huge", "tiny"])
def test_the_float32_rbf_expansion_is_within_its_bound_of_the_float64_one(case):
    name, X, Z, gamma, coef = next(c for c in _bounded_cases() if c[0] == case)
    spec = KernelSpec("rbf", gamma=gamma)
    g, bound = rbf_times_bounded(X, Z, spec, coef)
    assert_array_equal(g, kernel_times(X, Z, spec, coef, precision="float32"))
    error = np.abs(g - kernel_times(X, Z, spec, coef))
    assert np.all(error <= bound)
    finite = np.isfinite(bound)
    if case in ("beyond", "huge"):  # no bound where it could not hold
        assert finite.mean() < 0.5
    else:
        assert finite.all()
        assert np.max(bound) < 2e-3 * np.abs(coef).sum()  # a bound that can decide something
        assert np.max(error / bound) > (0.03 if case == "adversarial" else 1e-3)  # not far looser than the errors


def test_the_float32_rbf_expansion_names_another_kernel():
    X, Z = _pairs(20, 5, 4, "dense", "dense")
    with pytest.raises(ValueError, match="takes an rbf kernel, got 'linear'"):
        rbf_times_bounded(X, Z, SPECS[1], np.ones(5))


@pytest.mark.parametrize("spec", SPECS[:2], ids=lambda s: s.name)
@pytest.mark.parametrize("shape", [(300, 30, 12), (20, 300, 6), (1, 9, 5)], ids=str)
@pytest.mark.parametrize("x_kind", KINDS)
def test_thread_pool_and_calling_thread_fill_the_same_block(monkeypatch, spec, shape, x_kind):
    """Small blocks stay on the calling thread; forced onto numba's pool they give the same bits."""
    import core.kernels

    X, Z = _pairs(*shape, x_kind, "dense")
    serial = kernel_block(X, Z, spec)
    monkeypatch.setattr(core.kernels, "_PARALLEL_MIN_OPS", 0)
    pooled = kernel_block(X, Z, spec)
    np.testing.assert_array_equal(pooled, serial)
    assert_allclose(pooled, naive_kernel(X, Z, spec), rtol=0, atol=1e-12)


@pytest.mark.parametrize("spec", [KernelSpec("rbf", gamma=0.3), KernelSpec("linear")])
def test_a_rows_values_do_not_depend_on_how_many_rows_share_its_tile(spec):
    # a partition that restores one shrunk row, or ends on a one-row tile, must get the values it gets among
    # other rows (BLAS hands a one-row GEMM to GEMV, with other last bits: the float32 tiles' GEMM guards it)
    rng = np.random.default_rng(5)
    X, Z, coef = rng.normal(size=(9, 4)), rng.normal(size=(249, 4)), rng.normal(size=249)
    block, times = kernel_block(X, Z, spec), kernel_times(X, Z, spec, coef)
    for k in range(9):
        assert_array_equal(kernel_block(X[k:k + 1], Z, spec)[0], block[k])
        assert kernel_times(X[k:k + 1], Z, spec, coef)[0] == times[k]


@pytest.mark.parametrize("n_x, n_z, p", [(1, 1, 1), (3, 7, 5), (8, 16, 9), (21, 19, 13), (17, 3, 30)], ids=str)
def test_dense_dot_products_are_chains_of_fused_multiply_adds_wherever_a_row_stands(n_x, n_z, p):
    """A dense float64 block's dot products (its linear values) are each x . z summed by fused multiply-adds over
    the features in order, to the bit: in blocks of eight rows and in the rows after them, in vectors of eight
    columns and in the part of a vector after them.  So a row's values are the same bits whichever rows share
    its tile."""
    X, Z = _pairs(n_x, n_z, p, "dense", "dense")
    K = kernel_block(X, Z, KernelSpec("linear"))
    assert_array_equal(K, [[_fma_chain(x, z) for z in Z] for x in X])
    for k in range(n_x):
        assert_array_equal(kernel_block(X[k:], Z, KernelSpec("linear"))[0], K[k])


@pytest.mark.parametrize("m, p, w", [(11, 600, 19), (1, 257, 3), (8, 256, 16)], ids=str)
def test_dense_products_are_chains_of_fused_multiply_adds_across_depth_blocks(m, p, w):
    """``dense_products`` sums 256 features a pass and takes each chain up where the pass before left it: every
    value is still the one chain over all p terms in order, to the bit (rows after the blocks of eight, columns
    past a vector, one feature past a block)."""
    rng = np.random.default_rng(p)
    A, B = rng.normal(size=(m, p)), rng.normal(size=(p, w))
    assert_array_equal(dense_products(A, B), [[_fma_chain(a, b) for b in B.T] for a in A])
    assert_array_equal(dense_products(np.asfortranarray(A), B), dense_products(A, B))  # any layout in


def test_dense_products_names_mismatched_shapes():
    with pytest.raises(ValueError, match=r"A \(m, p\) and B \(p, w\), got shapes \(3, 4\) and \(5, 2\)"):
        dense_products(np.ones((3, 4)), np.ones((5, 2)))


@pytest.mark.parametrize("kind", KINDS)
def test_rbf_identical_rows_give_exactly_one(kind):
    X = _rows(200, 30, 3, kind) * 7.0
    assert np.all(np.diag(kernel_block(X, X, KernelSpec("rbf", gamma=0.3))) == 1.0)


def test_zero_vectors():
    Z = np.zeros((2, 4))
    assert np.all(kernel_block(Z, Z, KernelSpec("rbf", gamma=5.0)) == 1.0)
    assert np.all(kernel_block(Z, Z, KernelSpec("linear")) == 0.0)
    assert np.all(kernel_block(Z, Z, KernelSpec("poly", gamma=1.0, degree=3, coef0=2.0)) == 8.0)


def test_rbf_relative_accuracy_over_the_whole_exp_range():
    # x = 0 makes ||x - z||^2 = z^2 exactly, so K must be exp(-gamma z^2) to the last bits
    z = np.linspace(0.0, 27.0, 5001).reshape(-1, 1)  # exponents from 0 down to -729
    K = kernel_block(np.zeros((1, 1)), z, KernelSpec("rbf", gamma=1.0))[0]
    expected = np.exp(-(z[:, 0] ** 2))
    inside = z[:, 0] ** 2 <= 708.0
    assert_allclose(K[inside], expected[inside], rtol=4.5e-16, atol=0)
    assert_allclose(K[~inside], np.exp(-708.0), rtol=4.5e-16, atol=0)  # the documented floor


def test_float32_rbf_is_within_one_float32_ulp_over_its_exp_range():
    # the exponent, rounded to float32, is -float32(z^2) (x = 0, gamma = 1), so K must be its exp within 1 ulp
    z = np.linspace(0.0, 10.0, 5001).reshape(-1, 1)  # exponents from 0 down to -100
    K = kernel_block(np.zeros((1, 1)), z, KernelSpec("rbf", gamma=1.0), precision="float32")[0]
    exponent = -(z[:, 0] ** 2).astype(np.float32).astype(np.float64)
    inside = exponent >= -87.0
    expected = np.exp(exponent[inside])
    assert np.all(np.abs(K[inside] - expected) <= np.spacing(expected.astype(np.float32)))
    assert np.all(K[~inside] == np.float32(np.exp(-87.0)))  # the documented floor


@pytest.mark.parametrize("kind", KINDS)
def test_precomputed_norms_are_used(kind):
    X, Z = _pairs(50, 8, 6, kind, "dense")
    spec = KernelSpec("rbf", gamma=0.9)
    x_sq, z_sq = squared_norms(X), squared_norms(Z)
    assert_array_equal(kernel_block(X, Z, spec, x_sq_norms=x_sq, z_sq_norms=z_sq), kernel_block(X, Z, spec))
    shifted = kernel_block(X, Z, spec, x_sq_norms=x_sq + 1.0, z_sq_norms=z_sq)
    assert_allclose(shifted, np.exp(-0.9) * kernel_block(X, Z, spec), rtol=1e-12, atol=0)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s.name}-d{s.degree}")
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [0, 1, 25])
def test_diag_matches_naive(spec, kind, n):
    X = _rows(n, 6, 4, kind)
    expected = np.diag(naive_kernel(X, X, spec)) if n else np.empty(0)
    assert_allclose(kernel_diag(X, spec), expected, rtol=0, atol=1e-12)
    assert_allclose(kernel_diag(X, spec, x_sq_norms=squared_norms(X)), expected, rtol=0, atol=1e-12)


def test_inputs_are_coerced():
    rng = np.random.default_rng(5)
    X, Z = rng.standard_normal((7, 3)), rng.standard_normal((4, 3))
    spec = KernelSpec("rbf", gamma=0.4)
    expected = naive_kernel(X, Z, spec)
    for x in (X.tolist(), np.asfortranarray(X), sp.coo_matrix(X)):
        assert_allclose(kernel_block(x, sp.csr_array(Z), spec), expected, rtol=0, atol=1e-12)
    X32 = X.astype(np.float32)
    assert_allclose(kernel_block(X32, Z, spec), naive_kernel(X32.astype(np.float64), Z, spec), rtol=0, atol=1e-12)


def test_sparse_block_with_fewer_columns_is_widened():
    rng = np.random.default_rng(6)
    X, Z = rng.standard_normal((5, 3)), rng.standard_normal((4, 6))
    K = kernel_block(sp.csr_matrix(X), Z, KernelSpec("linear"))
    assert_allclose(K, naive_kernel(np.hstack([X, np.zeros((5, 3))]), Z, KernelSpec("linear")), rtol=0, atol=1e-12)


def test_block_validation_errors():
    spec = KernelSpec()
    X = np.ones((3, 2))
    with pytest.raises(ValueError, match="2-D"):
        kernel_block(np.ones(2), X, spec)
    with pytest.raises(ValueError, match="X has 2 features but Z has 3"):
        kernel_block(X, np.ones((1, 3)), spec)
    with pytest.raises(ValueError, match="NaN"):
        kernel_block([[np.nan, 1.0]], X, spec)
    with pytest.raises(TypeError, match="KernelSpec"):
        kernel_block(X, X, {"name": "rbf"})
    with pytest.raises(ValueError, match=r"x_sq_norms has shape \(2,\) but the block has 3 rows"):
        kernel_block(X, X, spec, x_sq_norms=np.ones(2))
    with pytest.raises(ValueError, match="z_sq_norms"):
        kernel_block(X, X, spec, z_sq_norms=np.ones((3, 1)))
    with pytest.raises(ValueError, match="x_sq_norms"):
        kernel_diag(X, KernelSpec("linear"), x_sq_norms=np.ones(4))


def test_spec_codes_and_round_trip():
    assert [KernelSpec(n).code for n in ("rbf", "linear", "poly")] == [RBF, LINEAR, POLY] == [0, 1, 2]
    spec = KernelSpec("poly", gamma=np.float64(0.25), degree=np.int64(4), coef0=1)
    d = spec.to_dict()
    assert d == {"name": "poly", "gamma": 0.25, "degree": 4, "coef0": 1.0}
    assert json.loads(json.dumps(d)) == d
    assert type(d["gamma"]) is float and type(d["degree"]) is int and type(d["coef0"]) is float
    assert KernelSpec.from_dict(d) == spec
    assert KernelSpec() == KernelSpec("rbf", gamma=1.0, degree=3, coef0=0.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.gamma = 2.0


@pytest.mark.parametrize("kwargs, message", [
    (dict(name="sigmoid"), "unknown kernel 'sigmoid'"),
    (dict(gamma=0.0), "gamma must be a positive finite number"),
    (dict(gamma=-1.0), "gamma must be"),
    (dict(gamma=float("nan")), "gamma must be"),
    (dict(gamma="0.5x"), "gamma must be"),
    (dict(gamma=None), "gamma must be"),
    (dict(name=None), "unknown kernel None"),
    (dict(coef0=float("inf")), "coef0 must be a finite number"),
    (dict(degree=0), "degree must be an integer >= 1"),
    (dict(degree=2.5), "degree must be an integer"),
    (dict(degree=True), "degree must be an integer"),
])
def test_spec_validation(kwargs, message):
    with pytest.raises(ValueError, match=message):
        KernelSpec(**kwargs)


def test_from_dict_rejects_unknown_keys():
    with pytest.raises(ValueError, match=r"unknown kernel parameters \['C'\]"):
        KernelSpec.from_dict({"name": "rbf", "C": 1.0})


def _scale_data():
    rng = np.random.default_rng(7)
    X = rng.normal(loc=5.0, scale=[0.5, 1.0, 3.0], size=(60, 3)) * (rng.random((60, 3)) < 0.7)
    return X, np.where(X[:, 0] > 2.0, 1, 0)


def test_gamma_scale_is_scikit_learns():
    sklearn_svm = pytest.importorskip("sklearn.svm")
    from core.engine import LocalEngine
    from core.kernels import feature_variance, scale_gamma

    X, y = _scale_data()
    expected = sklearn_svm.SVC(gamma="scale").fit(X, y)._gamma  # we round to 12 significant digits
    assert scale_gamma(3, feature_variance(X)) == pytest.approx(expected, rel=1e-11)
    assert scale_gamma(3, feature_variance(sp.csr_matrix(X))) == pytest.approx(expected, rel=1e-11)
    assert sklearn_svm.SVC(gamma="scale").fit(sp.csr_matrix(X), y)._gamma == pytest.approx(expected, rel=1e-12)
    assert LocalEngine(X, y, n_partitions=3).scale_gamma == pytest.approx(expected, rel=1e-11)
    assert scale_gamma(3, feature_variance(np.full((4, 3), 2.5))) == 1.0  # constant features, as scikit-learn


def test_gamma_scale_names_a_variance_whose_inverse_overflows():
    """Feature values near 1e-156: the inverse of their variance overflows, so gamma='scale' has no number; the fit
    said "gamma must be a positive finite number, got inf" of a gamma the caller never set.  (Values near 1e155,
    whose variance itself overflows, are refused with the rows: ``core.rows.LARGEST_FEATURE``.)"""
    from core.engine import LocalEngine
    from core.svc import fit_csvc

    X, y = _scale_data()
    with pytest.raises(ValueError, match=r"^gamma='scale' is 1 / \(n_features x the variance of the feature values\), "
                                         r"and on these rows that is no finite number \(gamma inf: "):
        fit_csvc(LocalEngine(X * 1e-156, y), kernel=KernelSpec("rbf", gamma="scale"))
    assert KernelSpec("rbf", gamma=0.5).for_data(LocalEngine(X * 1e-156, y)) == KernelSpec("rbf", gamma=0.5)


def test_a_fit_with_gamma_scale_records_the_number_it_used():
    from core.engine import LocalEngine
    from core.svc import fit_csvc

    X, y = _scale_data()
    engine = LocalEngine(X, y)
    model = fit_csvc(engine, kernel=KernelSpec("rbf", gamma="scale"))
    assert model.kernel == KernelSpec("rbf", gamma=engine.scale_gamma)
    assert model.metadata["params"]["kernel"]["gamma"] == engine.scale_gamma
    same = fit_csvc(engine, kernel=KernelSpec("rbf", gamma=engine.scale_gamma))
    np.testing.assert_array_equal(model.coef, same.coef)
    with pytest.raises(ValueError, match=r"gamma='scale' follows the training data: replace it with "
                                         r"spec.for_data\(engine\) first"):
        kernel_block(X, X, KernelSpec(gamma="scale"))


def test_the_pooled_loops_are_never_served_their_serial_twins_code_from_numbas_cache(tmp_path):
    """The serial twins once shared the pooled loops' cache entries: after a small block had compiled and
    cached the serial twin, the next process ran every large block on one thread."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    shutil.copytree(Path(__file__).resolve().parents[2] / "core", tmp_path / "core",
                    ignore=shutil.ignore_patterns("__pycache__"))  # a cache of its own, empty, beside the copy
    script = """
import json, sys
import numpy as np
from core import kernels
rows = int(sys.argv[1])  # 300: one serial block; 20,000: a block for the pool
X = np.random.default_rng(0).random((rows, 54))
kernels.kernel_times(X, X[:200], kernels.KernelSpec("rbf", gamma=0.5), np.ones(200))
print(json.dumps({name: {"hits": len(f.stats.cache_hits), "misses": len(f.stats.cache_misses)}
                  for name, f in (("pooled", kernels._tiles_times), ("serial", kernels._tiles_times_serial))}))
"""

    def run(rows):
        done = subprocess.run([sys.executable, "-c", script, str(rows)], cwd=tmp_path, capture_output=True,
                              text=True, check=True,
                              env={**{k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"},
                                   "PYTHONPATH": str(tmp_path), "NUMBA_NUM_THREADS": "2"})
        return json.loads(done.stdout.strip().splitlines()[-1])

    assert run(300)["serial"] == {"hits": 0, "misses": 1}  # compiled and cached
    assert run(20_000)["pooled"] == {"hits": 0, "misses": 1}  # compiled for the pool, not loaded from the twin's
    assert run(20_000)["pooled"] == {"hits": 1, "misses": 0}  # and cached under its own name


def test_a_pool_of_one_thread_is_never_launched(monkeypatch):
    """With one thread in numba's pool (a Spark task of one core) a block large enough for the pool takes the
    serial loops, which compute the same tiles in the same order: the same values to the bit as the pool's."""
    import numba

    import core.kernels as kernels

    rng = np.random.default_rng(3)
    X, coef = rng.random((20_000, 54)), rng.standard_normal(200)
    spec = KernelSpec("rbf", gamma=0.5)
    calls = []
    for name in ("_tiles", "_tiles_times"):
        loops = getattr(kernels, name)
        monkeypatch.setattr(kernels, name, lambda *args, _loops=loops, _name=name: (calls.append(_name),
                                                                                     _loops(*args))[1])

    def blocks():
        return kernel_block(X, X[:200], spec), kernel_times(X, X[:200], spec, coef)

    previous = numba.get_num_threads()
    numba.set_num_threads(2)
    try:
        pooled = blocks()
        assert calls == ["_tiles", "_tiles_times"]
        numba.set_num_threads(1)
        serial = blocks()
    finally:
        numba.set_num_threads(previous)
    assert calls == ["_tiles", "_tiles_times"]  # none more on one thread
    for a, b in zip(pooled, serial):
        np.testing.assert_array_equal(a, b)


def _recompiled(function, wide_vectors):
    """A dispatcher of ``function``'s source compiled afresh (no cache, the library's other options), with
    ``wide_vectors`` standing for ``kernels._wide_vectors``, in it and in the functions it calls that take it
    (``_csr_dots``' ``add_entries_times_rows``)."""
    import types

    import numba

    source = function.py_func
    globals_ = dict(source.__globals__, _wide_vectors=wide_vectors)
    for name in source.__code__.co_names:
        callee = globals_.get(name)
        takes_hint = isinstance(callee, numba.core.registry.CPUDispatcher) \
            and "_wide_vectors" in callee.py_func.__code__.co_names
        if takes_hint:
            globals_[name] = _recompiled(callee, wide_vectors)
    twin = types.FunctionType(source.__code__, globals_, source.__name__, source.__defaults__, source.__closure__)
    options = {key: value for key, value in function.targetoptions.items() if key != "nopython"}  # njit's own
    return numba.njit(**dict(options, cache=False))(twin)


def _wide_vectors_cases():
    """Arguments of each element-wise loop that may use 512-bit vectors: odd lengths, so that the vector
    loops' remainders run too, and the exponentials' whole domain."""
    rng = np.random.default_rng(11)
    X = sp.random(203, 54, density=12 / 54, format="csr", random_state=5, dtype=np.float64)
    Zj = np.ascontiguousarray(rng.standard_normal((54, 261)))
    exponents = np.concatenate([[0.0, -708.0, -1e-300], -708.0 * rng.random(1_003)])
    return {
        "_exp_inplace": (exponents,),
        "_exp32_inplace": ((-90.0 * rng.random(1_003)).astype(np.float32),),
        "_rbf_exponents": (rng.standard_normal((37, 261)), 3 * rng.random(37), 3 * rng.random(261), 0.7),
        "_csr_dots": (X.data, X.indices, X.indptr, Zj, 3, 200),
        "_csr_dots32": (X.data.astype(np.float32), X.indices, X.indptr, Zj.astype(np.float32), 0, 203),
        # the 89 entries of rows 3..9 (one left after the passes of four), times the rows of Zj they name
        "add_entries_times_rows": (rng.standard_normal(261), X.data, X.indices, X.indptr[3], X.indptr[10], Zj),
        "add_entries_times_rows32": (rng.standard_normal(261).astype(np.float32), X.data.astype(np.float32),
                                     X.indices, X.indptr[3], X.indptr[10], Zj.astype(np.float32)),
    }


@pytest.mark.parametrize("case", sorted(_wide_vectors_cases()))
def test_wide_vectors_change_no_value_and_reach_the_compiled_code(case):
    """The element-wise loops that may take 512-bit vectors (``kernels._wide_vectors``) give the values of the
    same source held to numba's own width, to the bit, and their compiled code carries the hint (and uses the
    512-bit registers where the CPU has AVX-512)."""
    import llvmlite.binding as llvm
    from numba.core import types as nb_types
    from numba.extending import intrinsic

    import core.kernels as kernels

    @intrinsic
    def no_hint(typingctx):
        return nb_types.none(), lambda context, builder, signature, args: context.get_dummy_value()

    function = getattr(kernels, case.removesuffix("32"))  # _csr_dots32: _csr_dots on float32 entries
    args = _wide_vectors_cases()[case]
    wide, narrow = _recompiled(function, kernels._wide_vectors), _recompiled(function, no_hint)
    in_wide, in_narrow = ([a.copy() if isinstance(a, np.ndarray) else a for a in args] for _ in range(2))
    result_wide, result_narrow = wide(*in_wide), narrow(*in_narrow)
    if result_wide is None:  # the exponentials, exponents and added entries work in place, on their first argument
        result_wide, result_narrow = in_wide[0], in_narrow[0]
    assert result_wide.dtype == result_narrow.dtype
    assert_array_equal(result_wide.view(np.uint8), result_narrow.view(np.uint8))
    signature = wide.signatures[0]
    assert '"prefer-vector-width"="512"' in wide.inspect_llvm(signature)
    assert '"prefer-vector-width"' not in narrow.inspect_llvm(signature)
    if "+avx512f" in llvm.get_host_cpu_features().flatten().split(","):
        assert "zmm" in wide.inspect_asm(signature)
