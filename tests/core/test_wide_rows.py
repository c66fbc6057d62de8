"""CSR rows of many features (text, hashed features: a million features, tens stored a row).

Kernel values from CSR Z as it is (``core.kernels._sparse_pair``), the slant driver's column store
(``core.kernel_columns._SparseRows``) and EBSVM's support set by its entries
(``core.ebsvm._SupportBuffer``, ``by_entries``) give the bits of the dense forms they replace; every method fits such
rows without a dense array of their width (before, a C-SVC fit of 400 such rows peaked at 6.3 GB, and the
slant sparsifier asked for 156 GiB)."""

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_array_equal

import core.ebsvm
import core.kernels
from core.ebsvm import fit_ebsvm
from core.engine import LocalEngine
from core.kernel_columns import KernelColumns
from core.kernels import KernelSpec, kernel_block, kernel_times
from core.l0svm import fit_l0svm
from core.partition.slant import COLUMN_BYTES as SLANT_PARTITION_COLUMN_BYTES
from core.rows import as_rows
from core.slant import DRIVER_COLUMN_BYTES as SLANT_DRIVER_COLUMN_BYTES
from core.slant import fit_slant
from core.spsvm import fit_spsvm
from core.svc import fit_budget_svm, fit_csvc
from tests.conftest import wide_rows
from tests.naive import naive_kernel

SPECS = [KernelSpec("rbf", gamma=0.5), KernelSpec("linear"), KernelSpec("poly", gamma=0.3, degree=2, coef0=1.0)]
MILLION = 10**6
PEAK_BYTES = 64 << 20  # numpy's largest use at once in a test below; a dense row block of 400 x 1e6 is 3.2 GB


def _naive_kernel(X, Z, spec):
    """``naive_kernel`` over the features X or Z store (the others add nothing), without dense rows of them all."""
    used = np.union1d(X.indices, Z.indices)
    return naive_kernel(X[:, used], Z[:, used], spec)


def _peak_bytes(call):
    """(call(), the most bytes numpy and Python held at once during it, beyond what they held before)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        out = call()
        return out, tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("pooled", [False, True], ids=["one thread", "pool"])
@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_kernels_of_wide_rows_keep_z_sparse_with_the_same_bits(spec, precision, pooled, monkeypatch):
    # the pool from n m (entries + 16) >= 2^27 (``_worth_a_pool``); Z sparse from m p >= 2^22 values
    n, m, p = (10_000, 300, 1 << 15) if pooled else (300, 40, 1 << 17)
    X, _ = wide_rows(n, p, 30, seed=1)
    X = as_rows(sp.vstack([X, wide_rows(3, p, 2000, seed=2)[0]], format="csr"))  # long rows too
    Z = as_rows(sp.vstack([X[:m], wide_rows(10, p, 5, seed=3)[0]], format="csr"))
    coef = np.linspace(-1.0, 1.0, Z.shape[0])
    assert core.kernels._sparse_pair(X, Z) and core.kernels._sparse_pair(X, X)

    def every_value():
        return (kernel_block(X, Z, spec, precision=precision),
                kernel_block(X, Z, spec, transposed=True, precision=precision),
                kernel_times(X, Z, spec, coef, precision=precision),
                kernel_times(X, Z, spec, np.column_stack([coef, coef**2]), precision=precision),
                kernel_block(X[:400], X[:400], spec, precision=precision))  # a Gram block: its mirrored tiles
    sparse = every_value()
    monkeypatch.setattr(core.kernels, "_PAIR_MIN_VALUES", 1 << 62)  # Z dense over all p features
    for values, dense in zip(sparse, every_value()):
        assert_array_equal(values, dense)
    tolerance = 1e-12 if precision == "float64" else 1e-4
    np.testing.assert_allclose(sparse[0][:50], _naive_kernel(X[:50], Z, spec), rtol=tolerance, atol=tolerance)


def test_a_kernel_block_of_wide_rows_holds_no_dense_rows():
    X, _ = wide_rows(400, MILLION, 20, seed=3)
    spec = KernelSpec("rbf", gamma=0.5)
    K, peak = _peak_bytes(lambda: kernel_block(X, X[:300], spec))
    assert peak < PEAK_BYTES, f"kernel_block held {peak / 2**20:.0f} MB"
    np.testing.assert_allclose(K[:, :30], _naive_kernel(X, X[:30], spec), rtol=1e-12)


def test_kernel_times_of_many_wide_support_vectors_holds_no_dense_rows():
    """A C-SVC keeps about every row of such data: 20,000 support vectors of a million features use 273,638 of
    them, whose dense rows even cut to those alone would take 40.8 GiB."""
    X, _ = wide_rows(300, MILLION, 20, seed=12)
    Z, _ = wide_rows(20_000, MILLION, 20, seed=13)
    coef = np.linspace(-1.0, 1.0, 20_000)
    spec = KernelSpec("rbf", gamma=0.05)
    f, peak = _peak_bytes(lambda: kernel_times(X, Z, spec, coef))
    assert peak < PEAK_BYTES, f"kernel_times held {peak / 2**20:.0f} MB"
    expected = sum(_naive_kernel(X[:3], Z[lo:lo + 100], spec) @ coef[lo:lo + 100] for lo in range(0, 20_000, 100))
    np.testing.assert_allclose(f[:3], expected, rtol=1e-12, atol=1e-15)


def test_a_working_sets_kernel_block_of_wide_rows_holds_no_dense_rows():
    """C-SVC's working set on such rows: 2,808 of them (5,000 rows, 3,526 support vectors) used 44,015 features,
    whose dense rows cut to those took 943 MB of the fit's 2.2 GB."""
    X, _ = wide_rows(3000, MILLION, 20, seed=16)
    spec = KernelSpec("rbf", gamma=0.05)
    K, peak = _peak_bytes(lambda: kernel_block(X[:200], X, spec))
    assert peak < PEAK_BYTES, f"kernel_block held {peak / 2**20:.0f} MB"
    np.testing.assert_allclose(K[:, :30], _naive_kernel(X[:200], X[:30], spec), rtol=1e-12)


def test_a_column_store_of_wide_rows_keeps_their_entries_and_the_kernel():
    X, _ = wide_rows(60, MILLION, 20, seed=4)
    more, _ = wide_rows(15, MILLION, 20, seed=5)
    spec = KernelSpec("rbf", gamma=0.5)

    def use_the_store():
        store = KernelColumns(X, spec, limit_bytes=1 << 20)  # room for ~2,000 columns of 60 rows
        at = store.get([3, 7, 11], lambda fresh: X[[3, 7, 11]][fresh])
        store.add_rows(more)  # completes the kept columns from the rows held for them
        store.keep_rows(np.arange(75) % 3 != 0)
        return store, at
    (store, at), peak = _peak_bytes(use_the_store)
    assert peak < PEAK_BYTES, f"the store held {peak / 2**20:.0f} MB"
    rows = sp.vstack([X, more], format="csr")[np.arange(75) % 3 != 0]
    np.testing.assert_allclose(store.K[at, :store.n], _naive_kernel(rows, X[[3, 7, 11]], spec).T, rtol=1e-12)
    assert (store.Z.take(at) != X[[3, 7, 11]]).nnz == 0


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
@pytest.mark.parametrize("budget", [3, 40])
def test_ebsvm_by_its_support_vectors_entries_gives_the_dense_columns_model(spec, budget, monkeypatch):
    X, y = wide_rows(500, 1 << 16, 40, seed=6)  # rows of 40 entries: the pool of entries fills and is compacted
    fit = dict(budget=budget, lam=1e-3, kernel=spec, epochs=2, batch_size=64)
    rooms = []
    make_room = core.ebsvm._SupportBuffer._make_room
    monkeypatch.setattr(core.ebsvm._SupportBuffer, "_make_room",
                        lambda buffer, *args: rooms.append(args) or make_room(buffer, *args))
    monkeypatch.setattr(core.ebsvm, "_SPARSE_SUPPORT_VALUES", 0)
    by_entries = fit_ebsvm(LocalEngine(X, y, n_partitions=2), **fit)
    monkeypatch.setattr(core.ebsvm, "_SPARSE_SUPPORT_VALUES", 1 << 62)
    dense = fit_ebsvm(LocalEngine(X, y, n_partitions=2), **fit)
    assert rooms and by_entries.metadata["removals"] > 0
    assert_array_equal(by_entries.support_ids, dense.support_ids)
    assert_array_equal(by_entries.coef, dense.coef)
    assert (by_entries.support_vectors != dense.support_vectors).nnz == 0


FITS = {"csvc": lambda engine, spec: fit_csvc(engine, C=1.0, kernel=spec),
        "budget_l1": lambda engine, spec: fit_budget_svm(engine, budget=30, C=1.0, kernel=spec),
        "spsvm": lambda engine, spec: fit_spsvm(engine, max_basis=30, lam=1e-3, kernel=spec),
        "slant": lambda engine, spec: fit_slant(engine, fit_csvc(engine, C=1.0, kernel=spec), max_support=30),
        "ebsvm": lambda engine, spec: fit_ebsvm(engine, budget=30, lam=1e-3, kernel=spec),
        "l0svm": lambda engine, spec: fit_l0svm(engine, kernel=spec, max_outer=5)}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("method", sorted(FITS))
def test_every_method_fits_a_million_features_without_dense_rows(method):
    X, y = wide_rows(400, MILLION, 20, seed=7)
    spec = KernelSpec("rbf", gamma=0.5)
    model, peak = _peak_bytes(lambda: FITS[method](LocalEngine(X, y, n_partitions=2), spec))
    stores = 2 * SLANT_PARTITION_COLUMN_BYTES + SLANT_DRIVER_COLUMN_BYTES if method == "slant" else 0
    assert peak < PEAK_BYTES + stores, f"{method} held {peak / 2**20:.0f} MB"  # kernel columns' stores aside
    assert sp.issparse(model.support_vectors) and model.support_vectors.shape[1] == MILLION
    expected = _naive_kernel(X[:50], model.support_vectors, spec) @ model.coef + model.bias
    np.testing.assert_allclose(model.decision_function(X[:50]), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("method", ["csvc", "budget_l1", "spsvm", "slant"])
def test_fits_on_wide_rows_are_the_fits_over_every_feature(method, monkeypatch):
    X, y = wide_rows(300, 1 << 16, 12, seed=8)
    spec = KernelSpec("rbf", gamma=0.5)
    sparse = FITS[method](LocalEngine(X, y, n_partitions=2), spec)
    monkeypatch.setattr(core.kernels, "_PAIR_MIN_VALUES", 1 << 62)
    dense = FITS[method](LocalEngine(X, y, n_partitions=2), spec)
    assert_array_equal(sparse.coef, dense.coef)
    assert sparse.bias == dense.bias
    assert (sparse.support_vectors != dense.support_vectors).nnz == 0
