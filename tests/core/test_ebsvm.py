"""Elastic budget SVM: the steps against a naive implementation, the sampling, the budget, Ripley."""

import numpy as np
import pytest
import scipy.sparse as sp

from core.ebsvm import EBSVMLearner, fit_ebsvm
from core.engine import LocalEngine
from core.kernels import KernelSpec
from core.svc import fit_csvc
from core.synthetic import make_rings
from tests.naive import naive_ebsvm

KERNEL = KernelSpec("rbf", gamma=0.5)


def _order(n, epochs, seed):
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.permutation(n) for _ in range(epochs)])


@pytest.mark.parametrize("average_fraction", [0.5, 0.1, 0.0])
@pytest.mark.parametrize("kernel, eta_theta", [(KERNEL, 0.05), (KERNEL, 0.002), (KernelSpec("poly", gamma=0.5,
                                                                                              coef0=1.0), 0.05)])
def test_steps_match_the_naive_implementation(average_fraction, kernel, eta_theta):
    X, y = make_rings(60, 4, noise=0.1, seed=3)
    weight = np.linspace(0.5, 1.5, 60)
    ids = np.arange(60) * 7 + 3  # ids are not positions
    order = _order(60, 3, seed=1)
    args = dict(budget=5, lam=0.05, eta_theta=eta_theta, average_fraction=average_fraction)
    learner = EBSVMLearner(4, kernel=kernel, total_steps=len(order), **args)
    for lo in range(0, len(order), 7):  # batches of 7: the state carries over between calls
        batch = order[lo:lo + 7]
        learner.steps(X[batch], y[batch], weight[batch], ids[batch])
    model = learner.model([-1.0, 1.0], {})
    expected_ids, expected_coef = naive_ebsvm(X[order], y[order], weight[order], ids[order], spec=kernel,
                                              total_steps=len(order), **args)
    np.testing.assert_array_equal(model.support_ids, expected_ids)
    np.testing.assert_allclose(model.coef, expected_coef, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(model.support_vectors, X[(model.support_ids - 3) // 7])
    assert model.metadata["removals"] > 0 and model.bias == 0.0


def test_the_buffer_grows_past_the_budget_and_the_model_is_projected_back():
    X, y = make_rings(300, 4, noise=0.1, seed=4)
    learner = EBSVMLearner(4, budget=3, lam=0.01, kernel=KERNEL, eta_theta=1e-6, total_steps=300)
    learner.steps(X, y, np.ones(300), np.arange(300))
    assert learner.progress()[1] > 2 * 3 + 2  # theta lagged: |S| outgrew the first buffer (B + 1)
    model = learner.model([-1.0, 1.0], {})
    assert model.n_support == 3


class _RecordingEngine(LocalEngine):
    """A LocalEngine that records the ids it serves and can forget the partitions' state every round."""

    def __init__(self, *args, forget=False, **kwargs):
        super().__init__(*args, **kwargs)
        self.served, self.forget = [], forget

    def run(self, function, request, rebuild=None):
        if self.forget and rebuild is not None:
            self.states = [{} for _ in self.partitions]  # as if every task were lost and retried
            request = rebuild()
        answers = super().run(function, request, rebuild)
        if function.__name__ == "ebsvm_batch":
            self.served.append((request["epoch"], [a["ids"] for a in answers]))
        return answers


def test_every_epoch_visits_every_example_once_in_a_new_order():
    X, y = make_rings(500, 4, seed=5)
    engine = _RecordingEngine(X, y, n_partitions=3)
    fit_ebsvm(engine, budget=20, lam=0.01, kernel=KERNEL, epochs=3, batch_size=64)
    epochs = [np.concatenate([np.concatenate(ids) for e, ids in engine.served if e == epoch]) for epoch in range(3)]
    for ids in epochs:
        np.testing.assert_array_equal(np.sort(ids), np.arange(500))
    assert not np.array_equal(epochs[0], epochs[1])
    assert all(len(part) <= 64 for _, ids in engine.served for part in ids)  # per partition and round


def test_same_seed_same_model_even_when_partitions_lose_their_state():
    X, y = make_rings(400, 4, seed=6)
    fit = dict(budget=15, lam=0.01, kernel=KERNEL, epochs=2, batch_size=50, seed=3)
    first = fit_ebsvm(LocalEngine(X, y, n_partitions=2), **fit)
    again = fit_ebsvm(_RecordingEngine(X, y, n_partitions=2, forget=True), **fit)
    np.testing.assert_array_equal(first.support_ids, again.support_ids)
    np.testing.assert_array_equal(first.coef, again.coef)
    other = fit_ebsvm(LocalEngine(X, y, n_partitions=2), **dict(fit, seed=4))
    assert not np.array_equal(first.support_ids, other.support_ids)


def test_sparse_rows_give_the_dense_model():
    rng = np.random.default_rng(7)
    X = np.where(rng.random((300, 30)) < 0.2, rng.random((300, 30)), 0.0)
    y = np.where(X[:, :5].sum(axis=1) > 0.5, 1.0, -1.0)
    fit = dict(budget=12, lam=0.01, kernel=KERNEL, epochs=2, batch_size=40)
    dense = fit_ebsvm(LocalEngine(X, y, n_partitions=2), **fit)
    sparse = fit_ebsvm(LocalEngine(sp.csr_matrix(X), y, n_partitions=2), **fit)
    assert sp.issparse(sparse.support_vectors)
    np.testing.assert_array_equal(sparse.support_vectors.toarray(), dense.support_vectors)
    np.testing.assert_allclose(sparse.coef, dense.coef, rtol=1e-12)


@pytest.mark.parametrize("budget", [10, 50, 200])
def test_the_model_keeps_to_the_budget(budget):
    X, y = make_rings(3000, 4, noise=0.05, seed=8)
    model = fit_ebsvm(LocalEngine(X, y, n_partitions=2), budget=budget, lam=1e-4, kernel=KERNEL, epochs=2)
    assert budget // 2 <= model.n_support <= budget
    assert model.metadata["removals"] > 0
    assert np.mean(model.predict(X) != y) < 0.3  # it learned something: the classes are 54/46


@pytest.mark.data
def test_ripley_with_ten_support_vectors_is_within_one_and_a_half_points_of_csvc(ripley):
    # parameters chosen by 5-fold cross-validation on synth.tr (bench/bench_ebsvm.py), never on synth.te
    X, y, Xt, yt = ripley
    csvc = fit_csvc(LocalEngine(X, y), C=100.0, kernel=KernelSpec(gamma=1.0))
    model = fit_ebsvm(LocalEngine(X, y, n_partitions=2), budget=10, lam=0.001, kernel=KernelSpec(gamma=5.0),
                      epochs=20)
    assert model.n_support <= 10
    assert np.mean(model.predict(Xt) != yt) <= np.mean(csvc.predict(Xt) != yt) + 0.015


@pytest.mark.parametrize("change, message", [
    ({"budget": 0}, "budget must be an integer >= 1, got 0"),
    ({"budget": 2.5}, "budget must be an integer >= 1, got 2.5"),
    ({"lam": 0.0}, "lam must be a positive finite number, got 0.0"),
    ({"eta_theta": np.inf}, "eta_theta must be a positive finite number, got inf"),
    ({"epochs": 0}, "epochs must be an integer >= 1, got 0"),
    ({"batch_size": True}, "batch_size must be an integer >= 1, got True"),
    ({"seed": -1}, "seed must be an integer >= 0, got -1"),
    ({"average_fraction": np.nan}, r"average_fraction must be in \[0, 1\] \(0: the last iterate\), got nan"),
    ({"kernel": {"name": "rbf"}}, "kernel must be a KernelSpec, got dict"),
])
def test_bad_arguments_are_named(change, message):
    X, y = make_rings(20, 4, seed=9)
    args = dict(dict(budget=5, lam=0.1, kernel=KERNEL), **change)
    with pytest.raises(ValueError, match=message):
        fit_ebsvm(LocalEngine(X, y), **args)
