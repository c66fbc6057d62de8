"""Budget-L1/L2 SVMs (Dekel & Singer) through the decomposition on LocalEngine."""

import numpy as np
import pytest

from core.benchmark_files import shuttle_problems
from core.engine import LocalEngine
from core.kernels import KernelSpec, kernel_block
from core.svc import fit_budget_svm, fit_csvc
from tests.naive import naive_dual_objective, naive_dual_qp

KERNEL = KernelSpec("rbf", gamma=0.5)


def _data(seed, n, noise=0.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    y = np.where(X[:, 0] + 0.7 * np.sin(2 * X[:, 1]) > 0, 1.0, -1.0)
    flip = rng.random(n) < noise
    y[flip] = -y[flip]
    return X, y


def _alpha(model, n):
    alpha = np.zeros(n)
    alpha[model.support_ids] = np.abs(model.coef)
    return alpha


CASES = [("l1", 10.0, 10), ("l1", 3.0, 25), ("l1", 100.0, 30), ("l2", 10.0, 10), ("l2", 30.0, 30), ("l2", 1.0, 50)]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("norm, C, B", CASES)
def test_budget_svm_constraints_and_objective(seed, norm, C, B):
    n = 150
    X, y = _data(seed, n, noise=0.03 * seed)
    # small working sets over three partitions: the decomposition really iterates
    engine = LocalEngine(X, y, n_partitions=3)
    model = fit_budget_svm(engine, budget=B, C=C, norm=norm, kernel=KERNEL, tol=1e-5, working_set_size=64)
    alpha = _alpha(model, n)
    K = kernel_block(X, X, KERNEL)
    sum_bound = B * C if norm == "l1" else np.sqrt(B) * C
    upper = np.full(n, C if norm == "l1" else np.inf)
    # every constraint to 1e-9
    assert abs(y @ alpha) <= 1e-9
    assert alpha.min() >= 0 and alpha.max() <= C + 1e-9
    assert alpha.sum() <= sum_bound + 1e-9
    if norm == "l2":
        assert alpha @ alpha <= C * C + 1e-9
    # the objective of an independent generic QP solve, to 1e-4 relative
    _, reference = naive_dual_qp(K, y, upper, sum_bound, C * C if norm == "l2" else np.inf)
    assert naive_dual_objective(K, y, alpha) == pytest.approx(reference, rel=1e-4)
    assert model.metadata["objective"] == pytest.approx(naive_dual_objective(K, y, alpha), rel=1e-9)


def test_theorem_2_and_its_corollary():
    """Theorem 2: a_k = 0 whenever mu_k > mu_pi(B) (given mu_pi(B) < 1); corollary: |S| <= B
    whenever mu_pi(B) != mu_pi(B+1)."""
    theorem_cases = corollary_cases = 0
    for seed in range(8):
        X, y = _data(seed, 120, noise=0.02)
        for B in (5, 10, 20):
            for C in (1.0, 10.0):
                model = fit_budget_svm(LocalEngine(X, y), budget=B, C=C, norm="l1", kernel=KERNEL, tol=1e-8)
                margins = y * model.decision_function(X)
                ordered = np.sort(margins)
                if ordered[B - 1] < 1:
                    theorem_cases += 1
                    assert np.all(margins[model.support_ids] <= ordered[B - 1] + 1e-5)
                if ordered[B] - ordered[B - 1] > 1e-5:
                    corollary_cases += 1
                    assert model.n_support <= B, (seed, B, C, model.n_support)
    assert theorem_cases >= 30 and corollary_cases >= 1  # both statements were really exercised


def test_pruning_keeps_the_largest_weights():
    X, y = _data(1, 150, noise=0.05)
    full = fit_budget_svm(LocalEngine(X, y), budget=10, C=1.0, kernel=KERNEL)
    pruned = fit_budget_svm(LocalEngine(X, y), budget=10, C=1.0, kernel=KERNEL, prune=True)
    assert pruned.n_support == min(10, full.n_support)
    kept = np.sort(np.abs(full.coef))[::-1][: pruned.n_support]
    np.testing.assert_allclose(np.sort(np.abs(pruned.coef))[::-1], kept)
    assert pruned.bias == full.bias and pruned.metadata["pruned_to"] == 10


@pytest.mark.data
def test_pruned_budget_svm_keeps_its_accuracy_where_a_pruned_csvc_breaks():
    """Dekel & Singer's Figure 1 on the first draw of bench_budget_pruning (shuttle, 1,000 / 4,000)."""
    X, y, Xt, yt = next(shuttle_problems(1, on_missing=pytest.skip))
    kernel, B, C0 = KernelSpec("rbf", gamma=32.0), 40, 3000.0
    budget = fit_budget_svm(LocalEngine(X, y), budget=B, C=C0 / B, kernel=kernel)
    csvc = fit_csvc(LocalEngine(X, y), C=C0 / y.size, kernel=kernel)
    assert budget.n_support > B and csvc.n_support > B  # pruning really removes weights from both

    def error(model):
        return np.mean(model.predict(Xt) != yt)

    assert error(budget.pruned(B)) <= error(budget) + 0.001 <= 0.01
    assert error(csvc) <= 0.02 and error(csvc.pruned(B)) >= 0.1


def test_a_budget_l1_support_beyond_twice_the_budget_is_reported(caplog):
    X, y = _data(4, 300, noise=0.2)  # 60 flipped labels against B = 10
    with caplog.at_level("WARNING", logger="spark_bsvm"):
        model = fit_budget_svm(LocalEngine(X, y), budget=10, C=1.0, kernel=KERNEL)
    assert model.n_support > 20
    (record,) = [r for r in caplog.records if r.levelname == "WARNING"]  # once per fit, one line
    assert record.getMessage() == (f"budget-L1 SVM kept {model.n_support} support vectors for budget B = 10, more "
                                   "than 2B: B counts the worst-classified examples, not support vectors (a hard "
                                   "cap: SpSVM's maxBasis, ElasticBudgetSVM's budget)")
    caplog.clear()
    X, y = _data(4, 300)  # the same data without flipped labels: 38 support vectors for B = 30, no warning
    with caplog.at_level("WARNING", logger="spark_bsvm"):
        assert fit_budget_svm(LocalEngine(X, y), budget=30, C=1.0, kernel=KERNEL).n_support <= 60
    assert "support vectors for budget" not in caplog.text


def test_budget_l2_pair_bounds_mode_is_feasible():
    X, y = _data(2, 120, noise=0.05)
    model = fit_budget_svm(LocalEngine(X, y, n_partitions=2), budget=10, C=2.0, norm="l2", kernel=KERNEL,
                           ball="pair_bounds", tol=1e-6)
    alpha = _alpha(model, 120)
    assert alpha @ alpha <= 4.0 + 1e-9 and alpha.sum() <= np.sqrt(10) * 2.0 + 1e-9 and abs(y @ alpha) < 1e-9


@pytest.mark.parametrize("kwargs, message", [
    (dict(budget=0), "budget must be a positive"),
    (dict(budget=5, C=-1.0), "C must be a positive"),
    (dict(budget=5, norm="l3"), "norm must be 'l1' or 'l2'"),
    (dict(budget=5, norm="l2", ball="sphere"), "ball must be one of"),
])
def test_budget_svm_rejects_bad_parameters(kwargs, message):
    X, y = _data(0, 20)
    with pytest.raises(ValueError, match=message):
        fit_budget_svm(LocalEngine(X, y), **kwargs)
