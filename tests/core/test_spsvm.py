"""SpSVM-2: the full-basis optimum, Method 2's scores, the retrain schedule, the path, bad input."""

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from core.engine import LocalEngine
from core.kernels import KernelSpec, kernel_block
from core.partition.spsvm import spsvm_add_basis, spsvm_score
from core.sampling import row_keys
from core.spsvm import _Fit, candidate_draw, fit_spsvm, retrain_sizes, truncate
from core.synthetic import make_rings
from tests.naive import naive_l2svm_optimum

KERNEL = KernelSpec("rbf", gamma=0.5)


@pytest.fixture(scope="module")
def data():
    return make_rings(100, 4, seed=3)


def _dense_objective(model, X, y, lam, weights=None):
    """f(beta) of eq. 4 recomputed from a model: K' = 1 + K over its basis rows."""
    weights = np.ones(len(y)) if weights is None else weights
    Kb = kernel_block(model.support_vectors, model.support_vectors, model.kernel) + 1.0
    margin = np.maximum(1.0 - y * model.decision_function(X), 0.0)
    return 0.5 * lam * model.coef @ Kb @ model.coef + 0.5 * weights @ margin**2


@pytest.mark.parametrize("weighted", [False, True])
def test_all_points_as_basis_give_the_l2svm_optimum(weighted):
    X, y = make_rings(60, 4, seed=5)
    weights = np.random.default_rng(1).uniform(0.5, 2.0, len(y)) if weighted else None
    model = fit_spsvm(LocalEngine(X, y, weights), max_basis=len(y), lam=0.1, kernel=KERNEL, retrain="always", tol=0)
    assert model.n_support == len(y) and model.metadata["stop_reason"] == "max_basis"
    K = kernel_block(X, X, KERNEL) + 1.0  # the 1 + K trick: the bias is a regularised coordinate
    optimum = naive_l2svm_optimum(K, y, 0.1, weights)
    assert model.metadata["objective"] == pytest.approx(optimum, rel=1e-6)
    assert _dense_objective(model, X, y, 0.1, weights) == pytest.approx(optimum, rel=1e-6)
    assert model.bias == pytest.approx(model.coef.sum())
    assert model.metadata["rank_one_changes"] > 0  # the active set changed through the factor updates


@pytest.mark.parametrize("base, share, rank_one", [(0, np.inf, False), (np.inf, 1, True)],
                         ids=["every-change-refactorises", "every-change-rank-one"])
def test_the_rank_one_limit_changes_the_cost_not_the_fit(monkeypatch, base, share, rank_one):
    X, y = make_rings(150, 4, seed=7)
    default = fit_spsvm(LocalEngine(X, y), max_basis=40, lam=0.05, kernel=KERNEL, retrain="always", tol=0)
    monkeypatch.setattr("core.spsvm._RANK_ONE_BASE", base)
    monkeypatch.setattr("core.spsvm._RANK_ONE_SHARE", share)
    forced = fit_spsvm(LocalEngine(X, y), max_basis=40, lam=0.05, kernel=KERNEL, retrain="always", tol=0)
    before, after = default.metadata, forced.metadata
    assert before["rank_one_changes"] > 0 and before["refactorisations"] > 0  # the default takes both ways
    if rank_one:
        assert after["rank_one_changes"] > before["rank_one_changes"]
        assert after["refactorisations"] < before["refactorisations"]
    else:
        assert after["rank_one_changes"] == 0 and after["refactorisations"] > before["refactorisations"]
    np.testing.assert_array_equal(forced.support_vectors, default.support_vectors)
    np.testing.assert_allclose(forced.coef, default.coef, rtol=1e-8, atol=1e-10)
    assert after["objective"] == pytest.approx(before["objective"], rel=1e-12)


@pytest.mark.parametrize("selection, max_basis", [("method2", 40), ("method1", 8)])
def test_the_driver_never_reads_p_below_its_diagonal(monkeypatch, selection, max_basis):
    """The driver keeps P's upper triangle alone (``core.blas``): NaN planted below the diagonal before each step
    that reads or changes P leaves every bit of the fit as it was (Method 1's trials save and restore P too)."""
    X, y = make_rings(150, 4, seed=7)
    kwargs = dict(max_basis=max_basis, lam=0.05, kernel=KERNEL, retrain="always", tol=0, selection=selection)
    clean = fit_spsvm(LocalEngine(X, y), **kwargs)
    for name in ("_change_active_set", "_extend_factor", "_line_search"):
        def poisoned(self, *args, _step=getattr(_Fit, name)):
            self.P[np.tril_indices(self.capacity, -1)] = np.nan
            return _step(self, *args)
        monkeypatch.setattr(_Fit, name, poisoned)
    fit = fit_spsvm(LocalEngine(X, y), **kwargs)
    assert fit.metadata["refactorisations"] > 0 and fit.metadata["rank_one_changes"] > 0
    np.testing.assert_array_equal(fit.support_vectors, clean.support_vectors)
    np.testing.assert_array_equal(fit.coef, clean.coef)


def test_method2_scores_are_the_exact_one_dimensional_minima(data):
    X, y = data
    lam = 0.3
    fit = _Fit(LocalEngine(X, y, n_partitions=2), KERNEL, lam, capacity=10, newton_tol=1e-10, max_newton=50)
    for position in (5, 17, 40):
        fit.add(X[[position]], position, 0.0, candidate_draw(None, 0, 0, ()))
    fit.newton()
    candidates = X[[2, 33, 61, 90]]
    decrease, best = fit.score(candidates)
    basis = X[[5, 17, 40]]
    beta = fit.beta[:3]
    o = (kernel_block(X, basis, KERNEL) + 1.0) @ beta
    K_jj = kernel_block(basis, basis, KERNEL) + 1.0
    f0 = 0.5 * lam * beta @ K_jj @ beta + 0.5 * np.sum(np.maximum(1 - y * o, 0) ** 2)
    for c, row in enumerate(candidates):
        col = kernel_block(X, row[None], KERNEL)[:, 0] + 1.0
        k_jJ = kernel_block(row[None], basis, KERNEL)[0] + 1.0

        def h(b):  # eq. 7 with beta_J fixed
            return (0.5 * lam * (beta @ K_jj @ beta + 2 * b * (k_jJ @ beta) + 2.0 * b * b)
                    + 0.5 * np.sum(np.maximum(1 - y * (o + b * col), 0) ** 2))

        brute = minimize_scalar(h, bracket=(-1.0, 1.0), method="brent", options={"xtol": 1e-12})
        assert best[c] == pytest.approx(brute.x, abs=1e-6)
        assert decrease[c] == pytest.approx(f0 - brute.fun, rel=1e-9, abs=1e-9)
        assert decrease[c] > 0


def test_retrain_schedule_follows_section_6_1(data):
    assert retrain_sizes(70) == [1, 2, 3, 4, 5, 6, 8, 9, 11, 13, 16, 19, 22, 26, 32, 38, 45, 53, 64]
    X, y = data
    model = fit_spsvm(LocalEngine(X, y), max_basis=30, lam=0.1, kernel=KERNEL, tol=0)
    path = model.metadata["path"]
    assert path["size"] == list(range(1, 31))
    expected = [d in retrain_sizes(30) or d == 30 for d in range(1, 31)]
    assert path["retrained"] == expected
    assert all(a >= b for a, b in zip(path["objective"], path["objective"][1:]))  # f never rises
    always = fit_spsvm(LocalEngine(X, y), max_basis=30, lam=0.1, kernel=KERNEL, retrain="always", tol=0)
    assert all(always.metadata["path"]["retrained"])
    assert always.metadata["newton_iterations"] > model.metadata["newton_iterations"]


def test_the_path_gives_the_stage_models(data):
    X, y = data
    model = fit_spsvm(LocalEngine(X, y, n_partitions=2), max_basis=20, lam=0.1, kernel=KERNEL, tol=0)
    path = model.metadata["path"]
    model.metadata["platt"] = [-2.0, 0.1]  # a sigmoid fitted on the 20-function model's decision values
    for d in (1, 7, 13, 20):
        stage = truncate(model, d)
        assert stage.n_support == d and "platt" not in stage.metadata
        np.testing.assert_array_equal(stage.support_vectors, model.support_vectors[:d])
        assert _dense_objective(stage, X, y, 0.1) == pytest.approx(path["objective"][d - 1], rel=1e-10)
    np.testing.assert_allclose(truncate(model, 20).coef, model.coef)
    with pytest.raises(ValueError, match="between 1 and the model's 20 basis functions"):
        truncate(model, 21)
    bare = fit_spsvm(LocalEngine(X, y), max_basis=3, lam=0.1, kernel=KERNEL, keep_path_coef=False)
    with pytest.raises(ValueError, match="keep_path_coef=True"):
        truncate(bare, 2)


def test_candidates_depend_on_seed_stage_and_rows_only(data):
    X, y = data
    X = np.vstack([X, X[:5]])  # identical rows: one candidate each
    y = np.concatenate([y, -y[:5]])
    perm = np.random.default_rng(1).permutation(len(y))

    def fetch(engine, draw, taken=()):
        fit = _Fit(engine, KERNEL, 0.1, 5, 1e-10, 50)
        return fit.fetch(candidate_draw(draw, 10, 0, set(taken)))

    keys, ids, rows = fetch(LocalEngine(X, y), 7)
    assert len(set(keys.tolist())) == 10
    np.testing.assert_array_equal(keys, row_keys(rows, 0))
    np.testing.assert_array_equal(rows, X[ids])
    shuffled = fetch(LocalEngine(X[perm], y[perm], n_partitions=3), 7)
    np.testing.assert_array_equal(shuffled[0], keys)
    np.testing.assert_array_equal(shuffled[2], rows)
    # drawn without replacement: the taken rows leave, the next ones of the same draw come in
    np.testing.assert_array_equal(fetch(LocalEngine(X, y, n_partitions=2), 7, keys[:3])[0][:7], keys[3:])
    assert not set(fetch(LocalEngine(X, y), 8)[0].tolist()) == set(keys.tolist())
    everything = sorted(set(row_keys(X, 0).tolist()))
    assert len(fetch(LocalEngine(X, y), 0, everything[:-1])[0]) == 1
    assert len(fetch(LocalEngine(X, y), 0, everything)[0]) == 0


def test_chained_rounds_score_the_candidates_a_fetch_would_give(data):
    X, y = data
    scored, merged = [], []  # the rows of each stage's first score round; whether an add round ran it

    class Recording(LocalEngine):
        def run(self, function, request, rebuild=None):
            rows = request.get("score_rows") if function is spsvm_add_basis else request.get("rows")
            if function in (spsvm_add_basis, spsvm_score) and rows is not None:
                scored.append(np.array(rows))
                merged.append(function is spsvm_add_basis)
            return super().run(function, request, rebuild)

    model = fit_spsvm(Recording(X, y, n_partitions=2), max_basis=20, lam=0.1, kernel=KERNEL, kappa=4)
    assert len(scored) == 20 and 0 < sum(merged) < 20  # some stages chained, the re-optimising ones not
    basis_keys = row_keys(model.support_vectors, 0)  # in the order the rows joined
    for stage, rows in enumerate(scored):  # no draw failed here: stage d scores draw d
        fit = _Fit(LocalEngine(X, y, n_partitions=3), KERNEL, 0.1, 5, 1e-10, 50)
        np.testing.assert_array_equal(rows, fit.fetch(candidate_draw(stage, 4, 0, basis_keys[:stage]))[2])


def test_method1_is_at_least_as_greedy_as_method2(data):
    X, y = data
    common = dict(max_basis=5, lam=0.1, kernel=KERNEL, kappa=4, retrain="always", tol=0)
    one = fit_spsvm(LocalEngine(X, y, n_partitions=2), selection="method1", **common)
    two = fit_spsvm(LocalEngine(X, y, n_partitions=2), **common)
    # the trials leave no trace: the reported objective is the model's
    assert _dense_objective(one, X, y, 0.1) == pytest.approx(one.metadata["objective"], rel=1e-10)
    # same candidates at the first stage, and Method 1 picks by the re-optimised objective
    assert one.metadata["path"]["objective"][1] <= two.metadata["path"]["objective"][1] + 1e-9


def test_tol_stops_early(data):
    X, y = data
    model = fit_spsvm(LocalEngine(X, y), max_basis=100, lam=10.0, kernel=KERNEL, tol=1e-2)
    assert model.metadata["stop_reason"] == "tol" and model.n_support < 100
    assert model.metadata["path"]["retrained"][-1]


def test_a_linear_kernel_stops_at_its_rank_and_a_singular_P_is_explained(monkeypatch):
    import core.spsvm

    monkeypatch.setattr(core.spsvm, "_MAX_FAILED_DRAWS", 3)
    X, y = make_rings(60, 4, seed=0)
    model = fit_spsvm(LocalEngine(X, y), max_basis=10, lam=1e-3, kernel=KernelSpec("linear"))
    # 1 + x.z spans n_features + 1 = 5 functions: every further candidate is in their span
    assert model.n_support == 5 and model.metadata["stop_reason"] == "only candidates in the basis' span"
    monkeypatch.setattr(core.spsvm, "_SPAN_RTOL", 0.0)  # without the span test P's factor would fail
    with pytest.raises(ValueError, match="numerically singular with 6 basis functions.*linear kernel spans"):
        fit_spsvm(LocalEngine(X, y), max_basis=10, lam=1e-3, kernel=KernelSpec("linear"))


def test_near_duplicate_rows_are_skipped_instead_of_making_P_singular():
    # KDD Cup 99 has rows that differ by one min-max-scaled byte count (~1e-5); each such pair
    # would make P = lambda K'_JJ + K'_JI K'_JI^T numerically singular
    rng = np.random.default_rng(3)
    X, y = make_rings(40, 4, seed=9)
    X5 = np.vstack([X] + [X + 1e-5 * rng.standard_normal(X.shape) for _ in range(4)])
    y5 = np.tile(y, 5)
    model = fit_spsvm(LocalEngine(X5, y5, n_partitions=2), max_basis=60, lam=1e-3, kernel=KERNEL, tol=0)
    rows = model.support_vectors
    gaps = np.sqrt(((rows[:, None, :] - rows[None, :, :]) ** 2).sum(-1))[np.triu_indices(model.n_support, 1)]
    assert model.n_support <= 40 and gaps.min() > 1e-3  # never two copies of one ring point
    assert _dense_objective(model, X5, y5, 1e-3) == pytest.approx(model.metadata["objective"], rel=1e-8)


@pytest.mark.parametrize("kwargs, message", [
    (dict(lam=0.0), "lam must be a positive finite number"),
    (dict(max_basis=0), "max_basis must be an integer >= 1"),
    (dict(kappa=0), "kappa must be an integer >= 1"),
    (dict(selection="best"), "selection must be one of"),
    (dict(retrain="never"), "retrain must be one of"),
    (dict(kernel={"name": "rbf"}), "kernel must be a KernelSpec"),
])
def test_bad_arguments_are_explained(data, kwargs, message):
    X, y = data
    args = dict(max_basis=5, lam=1.0, kernel=KERNEL)
    with pytest.raises(ValueError, match=message):
        fit_spsvm(LocalEngine(X, y), **dict(args, **kwargs))


class _EngineLosingItsTasks(LocalEngine):
    """A LocalEngine whose partitions all lose their state at round ``lost_at`` (as a retried Spark stage)."""

    def __init__(self, *args, lost_at, **kwargs):
        super().__init__(*args, **kwargs)
        self.lost_at, self.rounds, self.lost_in = lost_at, 0, None

    def run(self, function, request, rebuild=None):
        self.rounds += 1
        if self.rounds == self.lost_at:
            self.states = [{} for _ in self.partitions]
            self.lost_in = function.__name__
            request = rebuild()
        return super().run(function, request)


@pytest.mark.parametrize("selection, max_basis, lost_at, function", [
    ("method2", 10, 1, "spsvm_start"), ("method2", 10, 10, "spsvm_line"), ("method2", 10, 12, "spsvm_gradient"),
    ("method2", 10, 18, "spsvm_score"), ("method2", 10, 19, "spsvm_add_basis"),
    # with 20 basis functions, some stages retrain no more: a first score round fetches the next draw (round 57),
    # the round that adds the best also runs the next stage's first score round (58, 87), then its second (88)
    ("method2", 20, 57, "spsvm_score"), ("method2", 20, 58, "spsvm_add_basis"), ("method2", 20, 87, "spsvm_add_basis"),
    ("method2", 20, 88, "spsvm_score"),
    ("method1", 4, 12, "spsvm_restore"), ("method1", 4, 23, "spsvm_line")])
def test_partitions_that_lose_their_state_rebuild_it_from_the_driver(data, selection, max_basis, lost_at, function):
    X, y = data
    args = dict(max_basis=max_basis, lam=0.1, kernel=KERNEL, kappa=4, selection=selection)
    engine = _EngineLosingItsTasks(X, y, n_partitions=2, lost_at=lost_at)
    disturbed = fit_spsvm(engine, **args)
    assert engine.lost_in == function
    undisturbed = fit_spsvm(LocalEngine(X, y, n_partitions=2), **args)
    np.testing.assert_array_equal(disturbed.support_vectors, undisturbed.support_vectors)
    np.testing.assert_allclose(disturbed.coef, undisturbed.coef, rtol=0, atol=1e-9)


def test_duplicate_rows_never_join_the_basis_twice():
    X, y = make_rings(20, 4, seed=8)
    X2, y2 = np.vstack([X, X]), np.concatenate([y, y])
    model = fit_spsvm(LocalEngine(X2, y2), max_basis=40, lam=0.1, kernel=KERNEL, tol=0)
    # a row identical to a basis row is never drawn again: the 20 distinct rows are all there is
    assert model.n_support == 20 and model.metadata["stop_reason"] == "no candidates left"
    assert len(np.unique(model.support_vectors, axis=0)) == 20
    assert model.metadata["path"]["retrained"][-1]  # the model returned is re-optimised
    assert _dense_objective(model, X2, y2, 0.1) == pytest.approx(model.metadata["objective"], rel=1e-10)


def test_a_warm_start_offers_the_given_basis_first_and_then_grows(data):
    X, y = data
    earlier = fit_spsvm(LocalEngine(X[:50], y[:50]), max_basis=12, lam=0.1, kernel=KERNEL, retrain="always")
    # on other rows, with a duplicate of the earlier basis appended: the duplicate is skipped
    initial = np.vstack([earlier.support_vectors, earlier.support_vectors[:1]])
    model = fit_spsvm(LocalEngine(X[50:], y[50:], n_partitions=2), max_basis=20, lam=0.1, kernel=KERNEL,
                      initial_basis=initial, retrain="always")
    np.testing.assert_array_equal(model.support_vectors[:12], earlier.support_vectors)
    assert model.n_support == 20 and list(model.support_ids[:12]) == [-1] * 12
    assert set(model.support_ids[12:]) <= set(range(len(y) - 50))  # then ordinary draws of the new rows
    assert _dense_objective(model, X[50:], y[50:], 0.1) == pytest.approx(model.metadata["objective"], rel=1e-9)
    same = fit_spsvm(LocalEngine(X[50:], y[50:]), max_basis=12, lam=0.1, kernel=KERNEL, initial_basis=initial)
    np.testing.assert_array_equal(same.support_vectors, earlier.support_vectors)  # the basis it was given
    with pytest.raises(ValueError, match="rows have 3 features but 4 are expected"):
        fit_spsvm(LocalEngine(X, y), max_basis=5, lam=0.1, kernel=KERNEL, initial_basis=np.zeros((2, 3)))
