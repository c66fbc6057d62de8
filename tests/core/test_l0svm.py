"""The L0-norm SVM (Huang, Zheng, King & Lyu) on LocalEngine against a dense implementation of eqs. 3.6-3.11."""

import logging

import numpy as np
import pytest
import scipy.sparse as sp

from core.benchmark_files import ripley_subsets
from core.engine import LocalEngine
from core.kernels import KernelSpec, kernel_block
from core.l0svm import fit_l0svm
from core.sampling import row_keys
from core.svc import fit_csvc
from core.synthetic import make_rings
from tests.naive import naive_l0svm_step

KERNEL = KernelSpec("rbf", gamma=0.5)


@pytest.fixture(scope="module")
def rings():
    return make_rings(40, 4, seed=1)


def _coefficients(model, n):
    a = np.zeros(n)
    a[model.support_ids] = model.coef
    return a


@pytest.mark.parametrize("margin", ["kernel", "identity"])
def test_reweighting_steps_match_the_dense_equations(rings, margin):
    """Three outer iterations (the second and third start warm, the third prunes A) against three
    dense steps that invert K_AA + C_alpha Lambda (or I + C_alpha Lambda) directly."""
    X, y = rings
    K = kernel_block(X, X, KERNEL)
    a = np.ones(len(y))
    for _ in range(3):
        _, a, b = naive_l0svm_step(K, y, a, C_xi=1.0, C_alpha=0.2, margin=margin)
    model = fit_l0svm(LocalEngine(X, y, n_partitions=2), C_xi=1.0, C_alpha=0.2, kernel=KERNEL, margin=margin,
                      initial="all", max_outer=3, tol=1e-8)
    sizes = model.metadata["support_sizes"]
    assert model.metadata["outer_iterations"] == 3 and sizes[0] == 40 and sizes[-1] < sizes[-2]
    np.testing.assert_allclose(_coefficients(model, len(y)), np.where(np.abs(a) >= 1e-4, a, 0.0), atol=1e-6)
    assert model.bias == pytest.approx(b, abs=1e-6)


def test_converges_to_a_sparse_fixed_point(rings):
    X, y = rings
    model = fit_l0svm(LocalEngine(X, y, n_partitions=2), C_xi=1.0, C_alpha=0.2, kernel=KERNEL, initial="all",
                      eps=1e-3, tol=1e-6)
    sizes = model.metadata["support_sizes"]
    assert model.metadata["converged"] and sizes[0] == 40 and sizes[-1] == model.n_support < 20
    assert all(later <= earlier for earlier, later in zip(sizes, sizes[1:]))  # A only shrinks (step 2)
    # a fixed point of eq. 3.10: one more dense step moves a by about eps at most
    K = kernel_block(X, X, KERNEL)
    a = _coefficients(model, len(y))
    _, a_next, b = naive_l0svm_step(K, y, a, C_xi=1.0, C_alpha=0.2, eps=1e-3)
    assert np.abs(a_next - a).max() < 2e-3 and model.bias == pytest.approx(b, abs=1e-2)


def test_random_initial_set_does_not_depend_on_partitioning_or_storage():
    X, y = make_rings(120, 4, seed=2)
    fits = [fit_l0svm(engine, C_xi=1.0, C_alpha=0.2, kernel=KERNEL, initial="random", m0=30, seed=5, max_outer=1)
            for engine in (LocalEngine(X, y, n_partitions=1), LocalEngine(sp.csr_matrix(X), y, n_partitions=3))]
    for model in fits:
        assert model.metadata["support_sizes"][0] == 30
    np.testing.assert_array_equal(fits[0].support_ids, fits[1].support_ids)
    np.testing.assert_allclose(fits[0].coef, fits[1].coef, atol=1e-6)
    other = fit_l0svm(LocalEngine(X, y), C_xi=1.0, C_alpha=0.2, kernel=KERNEL, m0=30, seed=6, max_outer=1)
    assert set(other.support_ids) != set(fits[0].support_ids)


def test_random_with_m0_at_least_n_is_the_papers_start(rings):
    X, y = rings
    fit = dict(C_xi=1.0, C_alpha=0.2, kernel=KERNEL, max_outer=2)
    every = fit_l0svm(LocalEngine(X, y), initial="all", **fit)
    drawn = fit_l0svm(LocalEngine(X, y), initial="random", m0=1000, **fit)
    np.testing.assert_array_equal(every.support_ids, drawn.support_ids)
    np.testing.assert_array_equal(every.coef, drawn.coef)


def test_row_keys_are_the_same_for_dense_and_sparse_rows():
    X = np.array([[0.0, 1.5, -2.0], [0.0, 0.0, 0.0], [3.0, -0.0, 1e-300]])
    keys = row_keys(X, 7)
    np.testing.assert_array_equal(keys, row_keys(sp.csr_matrix(X), 7))
    np.testing.assert_array_equal(keys[1:], row_keys(X[1:], 7))  # a row's key is its own
    assert len(set(keys.tolist())) == 3 and not np.array_equal(keys, row_keys(X, 8))


def test_initial_set_from_a_reference_model():
    X, y = make_rings(150, 4, seed=3)
    reference = fit_csvc(LocalEngine(X, y), C=1.0, kernel=KERNEL)
    model = fit_l0svm(LocalEngine(X, y, n_partitions=2), C_xi=1.0, C_alpha=0.2, kernel=KERNEL, initial=reference,
                      max_outer=10)
    assert model.metadata["support_sizes"][0] == reference.n_support
    assert set(model.support_ids) <= set(reference.support_ids) and model.n_support < reference.n_support / 2
    assert model.metadata["params"]["initial"] == "model"
    assert np.mean(model.predict(X) == y) > np.mean(reference.predict(X) == y) - 0.05


@pytest.mark.parametrize("kwargs, message", [
    (dict(C_alpha=0.0), "C_alpha must be a positive finite number, got 0.0"),
    (dict(C_xi=np.inf), "C_xi must be a positive finite number, got inf"),
    (dict(eps=-1e-4), "eps must be a positive finite number"),
    (dict(margin="l2"), r"margin must be one of \('kernel', 'identity'\), got 'l2'"),
    (dict(max_outer=0), "max_outer must be an integer >= 1, got 0"),
    (dict(m0=2.5), "m0 must be an integer >= 1, got 2.5"),
    (dict(initial="first"), "initial must be 'random', 'all' or a KernelExpansion, got 'first'"),
    (dict(seed=-1), r"seed must be an integer in \[0, 2\*\*64\), got -1"),
])
def test_bad_arguments_are_named(rings, kwargs, message):
    X, y = rings
    with pytest.raises(ValueError, match=message):
        fit_l0svm(LocalEngine(X, y), **kwargs)


@pytest.mark.data
def test_ripley_table_1(ripley):
    """The paper's Table 1 protocol (gamma = 4, Tipping's width convention): paper 4.15 SVs, 9.36%."""
    X, y, Xt, yt = ripley
    models = [fit_l0svm(LocalEngine(X[idx], y[idx]), C_xi=1.0, C_alpha=0.2, kernel=KernelSpec(gamma=4.0))
              for idx in ripley_subsets(X.shape[0])]
    svs = np.mean([m.n_support for m in models])
    error = np.mean([100.0 * np.mean(m.predict(Xt) != yt) for m in models])
    assert svs <= 6 and error <= 10.5
    assert all(m.metadata["support_sizes"][0] == 100 and m.metadata["converged"] for m in models)


class _ForgetfulEngine(LocalEngine):
    """A LocalEngine whose first partition loses its state before round ``lost_at``, as a retried
    Spark task does: that round runs on the ``rebuild`` request."""

    def __init__(self, *args, lost_at, **kwargs):
        super().__init__(*args, **kwargs)
        self.lost_at, self.calls, self.lost_in = lost_at, 0, None

    def run(self, function, request, rebuild=None):
        self.calls += 1
        if self.calls == self.lost_at:
            self.states[0], self.lost_in = {}, function.__name__
            request = rebuild()
        return super().run(function, request, rebuild)


_THREE_STEPS = dict(C_xi=1.0, C_alpha=0.2, kernel=KERNEL, initial="all", max_outer=3, tol=1e-8)


@pytest.fixture(scope="module")
def undisturbed(rings):
    return fit_l0svm(LocalEngine(*rings, n_partitions=2), **_THREE_STEPS)


@pytest.mark.parametrize("lost_at", [1, 3, 5, 6, 8])  # sample, dual round, remap, warm dual round, 3.10
def test_a_partition_that_loses_its_state_is_rebuilt(rings, undisturbed, lost_at):
    engine = _ForgetfulEngine(*rings, n_partitions=2, lost_at=lost_at)
    model = fit_l0svm(engine, **_THREE_STEPS)
    assert engine.lost_in is not None
    np.testing.assert_array_equal(model.support_ids, undisturbed.support_ids)
    np.testing.assert_allclose(model.coef, undisturbed.coef, atol=1e-7)


def test_a_fit_stopped_by_max_outer_warns_why(rings, caplog):
    X, y = rings
    with caplog.at_level(logging.WARNING, logger="spark_bsvm"):
        model = fit_l0svm(LocalEngine(X, y), **_THREE_STEPS)
    sizes = model.metadata["support_sizes"]
    assert not model.metadata["converged"] and sizes[-1] < sizes[0]
    assert (f"L0-SVM did not converge within max_outer=3 outer iterations (max change of a "
            f"{model.metadata['max_change']:.3g} >= eps=0.0001): the support was still shrinking "
            f"(|A| {sizes[0]} -> {sizes[-1]} over the last 3 iterations") in caplog.text
    assert "raise max_outer, or lower C_xi or gamma" in caplog.text
