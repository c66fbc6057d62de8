"""The same rows in another order and partitioning give the same model (issue 18, item 4)."""

import numpy as np
import pytest

from core.ebsvm import fit_ebsvm
from core.engine import LocalEngine
from core.kernels import KernelSpec, feature_variance
from core.l0svm import fit_l0svm
from core.partition.common import top_k
from core.slant import fit_slant
from core.spsvm import fit_spsvm
from core.svc import fit_budget_svm, fit_csvc
from core.synthetic import make_rings
from tests.conftest import assert_same_model_by_rows

KERNEL = KernelSpec("rbf", gamma=0.5)


@pytest.fixture(scope="module")
def rings():
    X, y = make_rings(400, 4, seed=1)
    X = np.vstack([X, X[:10]])  # identical rows (with their labels flipped: not identical examples)
    y = np.concatenate([y, -y[:10]])
    perm = np.random.default_rng(7).permutation(len(y))
    return X, y, perm, make_rings(300, 4, seed=2)[0]


def _assert_order_free(fit, rings):
    """``fit`` gives the same model on 1 and 2 partitions of the rows, and on 1 and 3 of them shuffled."""
    X, y, perm, X_test = rings
    reference = fit(LocalEngine(X, y))
    assert_same_model_by_rows(reference, fit(LocalEngine(X, y, n_partitions=2)), X_test)
    assert_same_model_by_rows(reference, fit(LocalEngine(X[perm], y[perm])), X_test)
    assert_same_model_by_rows(reference, fit(LocalEngine(X[perm], y[perm], n_partitions=3)), X_test)


def test_spsvm_is_the_same_for_shuffled_and_repartitioned_rows(rings):
    _assert_order_free(lambda engine: fit_spsvm(engine, max_basis=30, lam=1e-3, kernel=KERNEL, kappa=8, seed=3),
                       rings)


@pytest.mark.parametrize("fit", [
    # small working sets and a tight tol: many rounds, in which a partition's top violators overlap the last
    # working set differently for each partitioning
    lambda engine: fit_csvc(engine, C=3.0, kernel=KERNEL, tol=1e-6, working_set_size=16),
    lambda engine: fit_budget_svm(engine, budget=10, C=1.0, norm="l1", kernel=KERNEL, tol=1e-6, working_set_size=16),
    lambda engine: fit_budget_svm(engine, budget=10, C=1.0, norm="l2", kernel=KERNEL, working_set_size=64),
], ids=["csvc", "budget_l1", "budget_l2"])
def test_the_dual_methods_are_the_same_for_shuffled_and_repartitioned_rows(fit, rings):
    _assert_order_free(fit, rings)


@pytest.mark.parametrize("aggressive", [False, True])
def test_the_slant_sparsifier_is_the_same_for_shuffled_and_repartitioned_rows(aggressive, rings):
    X, y = rings[:2]
    reference = fit_csvc(LocalEngine(X, y), C=3.0, kernel=KERNEL)  # its margins tie: min(1, y g(x)) caps them
    _assert_order_free(lambda engine: fit_slant(engine, reference, max_support=30, aggressive=aggressive), rings)


def test_the_elastic_budget_svm_is_the_same_for_shuffled_and_repartitioned_rows(rings):
    # batches of 50 rows: rounds whose rows come from every partition in turn
    _assert_order_free(lambda engine: fit_ebsvm(engine, budget=20, lam=1e-3, kernel=KERNEL, epochs=2, batch_size=50,
                                                seed=3), rings)


def test_the_l0_svm_is_the_same_for_shuffled_rows(rings):
    """Shuffled rows only: its inner solves run on the feature map phi(x) = K(x, X_A) P, |A| = 100 values per
    row, whose BLAS dot products differ in the last bits with a row's place in its partition's blocks."""
    X, y, perm, X_test = rings

    def fit(engine):
        return fit_l0svm(engine, C_xi=1.0, C_alpha=0.2, kernel=KERNEL, m0=100, seed=3)

    assert_same_model_by_rows(fit(LocalEngine(X, y)), fit(LocalEngine(X[perm], y[perm])), X_test)


def test_violator_selection_breaks_exact_ties_by_content():
    values = np.array([1.0, 2.0, 2.0, 2.0, 0.5, 2.0])
    keys = np.array([9, 7, 3, 5, 1, 3], np.uint64)  # the last two share a key: the id decides
    ids = np.array([10, 11, 12, 13, 14, 2])
    chosen = top_k(values, np.ones(6, bool), 3, True, ties=(keys, ids))
    assert ids[chosen].tolist() == [2, 12, 13]
    perm = np.array([3, 0, 5, 1, 4, 2])
    chosen = top_k(values[perm], np.ones(6, bool), 3, True, ties=(keys[perm], ids[perm]))
    assert ids[perm][chosen].tolist() == [2, 12, 13]


def test_gamma_scale_is_the_same_for_shuffled_and_repartitioned_rows(rings):
    """The variance's last bits follow the row order; gamma="scale" is rounded so that the model does not."""
    X, y, perm = rings[:3]
    X = X * np.array([1.0, 3.0, 0.1, 7.0])  # features of unequal scales: a variance with all its bits used
    assert feature_variance(X) != feature_variance(X[perm])  # the last bits differ
    assert LocalEngine(X, y).scale_gamma == LocalEngine(X[perm], y[perm], n_partitions=3).scale_gamma
    _assert_order_free(lambda engine: fit_csvc(engine, C=3.0, kernel=KernelSpec("rbf", gamma="scale"), tol=1e-6,
                                               working_set_size=16), (X, y, perm, rings[3] * [1.0, 3.0, 0.1, 7.0]))


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [0, 1, 7, 64, 500])
def test_violator_selection_matches_a_full_sort(largest, k):
    """``top_k``'s one-pass selection against the naive one: sort every masked entry by (value, key, id)."""
    rng = np.random.default_rng(k)
    n = 400
    values = rng.integers(0, 12, n).astype(float)  # many exact ties
    values[rng.random(n) < 0.1] = -np.inf
    keys = rng.integers(0, 40, n).astype(np.uint64)  # ties of the key too: the id decides
    ids = rng.permutation(n * 3)[:n].astype(np.int64)
    mask = rng.random(n) < 0.8
    sign = 1.0 if largest else -1.0
    naive = sorted(np.flatnonzero(mask), key=lambda i: (-sign * values[i], keys[i], ids[i]))[:k]
    assert top_k(values, mask, k, largest, ties=(keys, ids)).tolist() == naive
    ascending = np.argsort(sign * values, kind="stable")  # every entry better than those before it
    assert top_k(values[ascending], mask[ascending], k, largest, ties=(keys[ascending], ids[ascending])).tolist() \
        == [int(np.flatnonzero(ascending == i)[0]) for i in naive]
