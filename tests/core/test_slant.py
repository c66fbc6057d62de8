"""The slant-loss sparsifier: batched == one step at a time, Lemmas 4.1 and 4.2, the path, small support sets,
bad input."""

import copy
import logging
import re

import numpy as np
import pytest
import scipy.sparse as sp

from core.engine import LocalEngine
from core.partition.common import content_key, kernel_times, ranks_before
from core.partition.data import PartitionData
from core.kernels import KernelSpec
from core.partition.slant import _check_states, add_steps, ranked, reference_margins, slant_round
from core.sampling import example_keys
from core.slant import _step_and_rank, fit_slant, slant_model_at, slant_path_coef
from core.svc import fit_csvc
from core.synthetic import make_rings
from tests.naive import naive_kernel, naive_slant_steps

KERNEL = KernelSpec("rbf", gamma=0.5)


@pytest.fixture(scope="module")
def problem():
    X, y = make_rings(240, 4, seed=3)
    return X, y, fit_csvc(LocalEngine(X, y), C=3.0, kernel=KERNEL)


@pytest.mark.parametrize("aggressive", [False, True])
@pytest.mark.parametrize("eta, epsilon, q, parts, max_support, sparse", [
    (0.5, 0.5, 4, 3, None, False),
    (0.25, 0.2, 2, 2, 40, False),
    (1.0, 0.6, 16, 1, None, True),
])
def test_batched_run_takes_the_steps_of_the_one_step_algorithm(problem, aggressive, eta, epsilon, q, parts,
                                                               max_support, sparse):
    X, y, reference = problem
    if sparse:
        X = np.where(np.abs(X) < 0.5, 0.0, X)
        reference = fit_csvc(LocalEngine(sp.csr_matrix(X), y), C=3.0, kernel=KERNEL)
        X = sp.csr_matrix(X)
    model = fit_slant(LocalEngine(X, y, n_partitions=parts), reference, eta=eta, epsilon=epsilon,
                      aggressive=aggressive, max_support=max_support, candidates_per_class=q, max_steps=2000)
    steps, reason = naive_slant_steps(X, y, example_keys(X, y, np.ones(len(y))), reference, eta, epsilon,
                                      aggressive=aggressive, max_support=max_support, max_steps=2000)
    assert model.metadata["steps"] == steps  # LocalEngine ids are row positions
    assert model.metadata["stopped"] == reason
    assert model.metadata["rounds"] <= len(steps) + 1  # at least one step per round, and a last one for f
    if aggressive:
        assert model.metadata["rounds"] < len(steps)  # steps on support vectors need no round
    counts = np.bincount(steps, minlength=X.shape[0])
    np.testing.assert_array_equal(model.support_ids, list(dict.fromkeys(steps)))  # first-appearance order
    np.testing.assert_allclose(model.coef, eta * counts[model.support_ids] * y[model.support_ids], rtol=1e-15)
    assert model.bias == reference.bias


def _slant(z):
    return np.minimum(1.0, np.maximum(0.0, 0.5 - z))


@pytest.mark.parametrize("aggressive", [False, True])
def test_lemma_4_1_slant_loss_of_the_result_is_at_most_the_reference_hinge_loss(problem, aggressive):
    X, y, reference = problem
    model = fit_slant(LocalEngine(X, y, n_partitions=2), reference, eta=0.5, epsilon=0.5, aggressive=aggressive)
    assert model.metadata["stopped"] == "objective" and model.metadata["objective"] <= 0.5
    assert model.n_support < reference.n_support
    slant = _slant(y * model.decision_function(X))
    hinge = np.maximum(0.0, 1.0 - y * reference.decision_function(X))
    assert np.all(slant <= hinge + 1e-12)  # the proof holds example by example
    assert slant.mean() <= hinge.mean()


def test_lemma_4_2_basic_method_reaches_one_half_within_4_w_squared_steps(problem):
    X, y, reference = problem
    sv = reference.support_vectors
    w_sq = reference.coef @ naive_kernel(sv, sv, KERNEL) @ reference.coef
    model = fit_slant(LocalEngine(X, y, n_partitions=2), reference, eta=0.5, epsilon=0.5)
    assert model.metadata["step_limit"] == int(np.ceil(4 * w_sq))  # the bound is the default step limit
    assert model.metadata["reference"]["sq_norm"] == pytest.approx(w_sq, rel=1e-10)
    assert model.metadata["stopped"] == "objective"
    assert model.metadata["objective"] <= 0.5
    assert len(model.metadata["steps"]) <= 4 * w_sq


@pytest.mark.parametrize("aggressive", [False, True])
def test_the_model_at_a_support_size_is_the_fit_stopped_at_that_size(problem, aggressive):
    X, y, reference = problem
    full = fit_slant(LocalEngine(X, y), reference, eta=0.25, epsilon=0.2, aggressive=aggressive)
    full.metadata["platt"] = [-2.0, 0.1]  # a sigmoid fitted on the full path's decision values
    for k in (1, 7, 30):
        stopped = fit_slant(LocalEngine(X, y), reference, eta=0.25, epsilon=0.2, aggressive=aggressive,
                            max_support=k)
        assert stopped.metadata["stopped"] == "max_support"
        prefix = slant_model_at(full, k)
        assert prefix.metadata["steps"] == stopped.metadata["steps"] and "platt" not in prefix.metadata
        np.testing.assert_array_equal(prefix.support_ids, stopped.support_ids)
        np.testing.assert_array_equal(prefix.support_vectors, stopped.support_vectors)
        np.testing.assert_array_equal(prefix.coef, stopped.coef)
    for size in (2.5, -1, "3", None):  # 2.5 gave the model at 2, "3" the model at 3
        with pytest.raises(ValueError, match=f"n_support must be an integer >= 0, got {size!r}"):
            slant_model_at(full, size)
    coef = slant_path_coef(full, [0, 5, full.n_support, 10 * full.n_support])
    assert not coef[0].any() and np.count_nonzero(coef[1]) == 5
    np.testing.assert_array_equal(coef[2], full.coef)
    np.testing.assert_array_equal(coef[3], full.coef)


def test_a_path_cut_long_before_convergence_warns_that_its_model_is_one_sided(caplog):
    # C = 1: ||w||^2 = 215 and b = -0.55 (make_rings' +1 is 54% of the rows).  Cut at 10 support vectors, all
    # ten are +1 (their targets are 2 |b| above the -1 rows'), each bump is at most eta = 1/2 high, and b < -1/2:
    # the model predicts -1 for every row (the constant classifier, in small)
    X, y = make_rings(600, 6, seed=1)
    reference = fit_csvc(LocalEngine(X, y), C=1.0, kernel=KERNEL)
    with caplog.at_level(logging.WARNING, logger="spark_bsvm"):
        cut = fit_slant(LocalEngine(X, y, n_partitions=2), reference, max_support=10)
    assert cut.metadata["stopped"] == "max_support" and not cut.metadata["converged"]
    assert np.all(cut.coef > 0) and reference.bias < -0.5 and np.all(cut.predict(X) == -1)
    # f(w~) follows the reference, which is exact only to the dual's tol: 1.5 or 1.51
    assert re.search(r"stopped by max_support at 10 support vectors with f\(w~\) = 1\.51? > epsilon = 0\.5",
                     caplog.text)
    assert "may take up to 860 steps" in caplog.text
    assert "All 10 support vectors are of class 1.0" in caplog.text and "predicts -1.0 wherever" in caplog.text
    # a reference of smaller norm (C = 0.1: ||w||^2 = 18) converges within 14 support vectors, without a warning,
    # and predicts both classes
    caplog.clear()
    small = fit_csvc(LocalEngine(X, y), C=0.1, kernel=KERNEL)
    with caplog.at_level(logging.WARNING, logger="spark_bsvm"):
        model = fit_slant(LocalEngine(X, y, n_partitions=2), small, max_support=20)
    assert model.metadata["stopped"] == "objective" and model.metadata["converged"] and model.n_support == 14
    assert "slant sparsifier stopped" not in caplog.text
    assert np.mean(model.predict(X) != y) < 0.3 and 0.4 < np.mean(model.predict(X) > 0) < 0.6  # constant: 0.46


def test_ranked_breaks_ties_by_content_key_then_id_and_reports_the_next():
    values = np.array([3.0, 5.0, 5.0, 1.0, 5.0, 4.0, 5.0])
    keys = np.array([1, 2, 9, 1, 7, 1, 2], np.uint64)  # ids 14 and 16: identical examples
    ids = np.array([10, 14, 12, 11, 13, 15, 16])
    chosen, value, key, next_id = ranked(values, keys, ids, np.ones(7, bool), 2)
    assert ids[chosen].tolist() == [14, 16] and (value, key, next_id) == (5.0, 7, 13)
    chosen, value, key, next_id = ranked(values, keys, ids, values < 5, 5)
    assert ids[chosen].tolist() == [15, 10, 11] and (value, key, next_id) == (-np.inf, 0, -1)


def _scan_step_and_rank(c, y, h, keys, ids, K, row, scale, is_sv):
    """``_step_and_rank`` written as the plain scan it stands for: step, then keep the first entry and take
    each later one that ranks before it (v desc, key asc, id asc; a comparison with a NaN is false)."""
    if row >= 0:
        c += (scale * y) * K[row]
    v = h - c

    def before(a, b):
        if v[a] != v[b]:
            return bool(v[a] > v[b])
        return (int(keys[a]), int(ids[a])) < (int(keys[b]), int(ids[b]))

    best, best_sv = -1, -1
    for i in range(len(c)):
        if best < 0 or before(i, best):
            best = i
        if is_sv[i] and (best_sv < 0 or before(i, best_sv)):
            best_sv = i
    return best, best_sv


def test_the_drivers_step_and_rank_finds_what_the_plain_scan_finds():
    rng = np.random.default_rng(5)
    for trial in range(600):
        n, kind = int(rng.integers(0, 30)), trial % 4
        h = rng.choice([0.5, 1.0, 1.5, -np.inf], n) if kind == 0 else rng.random(n)  # kind 0: ties everywhere
        if kind == 3:
            h[rng.random(n) < 0.3] = np.nan  # a NaN first entry stays best, later ones never rank
        c = np.zeros(n) if kind == 0 else 0.1 * rng.random(n)
        y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
        keys = rng.integers(0, 4 if kind < 2 else 2**63, n).astype(np.uint64)
        ids = rng.permutation(n).astype(np.int64)
        K = rng.random((3, n)) * (kind != 0)
        is_sv, row = rng.random(n) < rng.random(), int(rng.integers(-1, 3))
        expected_c, c_now = c.copy(), c.copy()
        expected = _scan_step_and_rank(expected_c, y, h, keys, ids, K, row, 0.25, is_sv)
        assert _step_and_rank(c_now, y, h, keys, ids, K, row, 0.25, is_sv) == expected, trial
        np.testing.assert_array_equal(c_now, expected_c)


def _scan_states(h, c, y, open_, keys, ids, K, rows, scale, applied, first, last, claims):
    """``_check_states`` by a plain scan: each state's responses stepped in numpy, then every open entry of each
    class ranked by (v desc, key asc, id asc); the first state whose claim its best open entry beats."""
    shape = (rows.size + 1, 2)
    best, best_v, best_c = np.full(shape, -1, np.int64), np.full(shape, -np.inf), np.zeros(shape)
    runner_up, runner_up_v = np.full(shape, -1, np.int64), np.full(shape, -np.inf)
    refuted = claims[0].size
    for t in range(first, last + 1):
        if t > applied:
            c[:] = c + (scale[t - 1] * y) * K[rows[t - 1]]
        v = h - c
        for slot, in_class in ((0, y < 0), (1, y > 0)):
            ranked_ = [i for i in np.lexsort((ids, keys, -v)) if open_[i] and in_class[i]][:2]
            for at, (positions, values) in zip(ranked_, ((best, best_v), (runner_up, runner_up_v))):
                positions[t, slot], values[t, slot] = at, v[at]
            if ranked_:
                best_c[t, slot] = c[ranked_[0]]
        if t < claims[0].size and any(best[t, slot] >= 0 and ranks_before(
                best_v[t, slot], keys[best[t, slot]], ids[best[t, slot]], *(claim[t] for claim in claims))
                for slot in (0, 1)):
            refuted = t
            break
    return refuted, (best, best_v, best_c, runner_up, runner_up_v)


def test_a_speculations_states_are_what_a_plain_scan_finds():
    rng = np.random.default_rng(7)
    for trial in range(300):
        n, steps, kind = int(rng.choice([0, 1, 7, 8, 9, 16, 23, 40, 1003])), int(rng.integers(0, 6)), trial % 3
        h = rng.choice([0.0, 0.5, 1.0], n) if kind == 0 else rng.random(n)  # kind 0: ties in v (no steps' sums)
        y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
        open_ = rng.random(n) < (0.95 if kind == 2 else 0.5)
        keys = rng.integers(0, 3 if kind < 2 else 2**63, n).astype(np.uint64)
        ids = rng.permutation(n).astype(np.int64)
        K = rng.random((4, n)) * (kind != 0)
        rows, scale = rng.integers(0, 4, steps).astype(np.int64), 0.25 * np.where(rng.random(steps) < 0.5, -1.0, 1.0)
        applied = int(rng.integers(0, steps + 1))
        first = min(applied + int(rng.integers(0, 2)), steps)
        last = int(rng.integers(first, steps + 1))
        claims = (rng.choice([np.inf, 0.5, 1.0, 2.0], steps + 1), rng.integers(0, 3, steps + 1).astype(np.uint64),
                  rng.integers(-1, n + 1, steps + 1).astype(np.int64))
        start = 0.1 * rng.standard_normal(n) * (kind != 0)
        expected_c, c = start.copy(), start.copy()
        expected, expected_ranks = _scan_states(h, expected_c, y, open_, keys, ids, K, rows, scale, applied, first,
                                                last, claims)
        shape = (steps + 1, 2)
        ranks = (np.full(shape, -1, np.int64), np.full(shape, -np.inf), np.zeros(shape), np.full(shape, -1, np.int64),
                 np.full(shape, -np.inf))
        refuted = _check_states(h, c, y, open_, keys, ids, K, rows, scale, applied, first, last, *claims, *ranks)
        assert refuted == expected, trial
        np.testing.assert_array_equal(c, expected_c)
        for got, want in zip(ranks, expected_ranks):
            np.testing.assert_array_equal(got, want)


def test_steps_added_four_at_a_time_are_the_steps_one_at_a_time_to_the_bit():
    rng = np.random.default_rng(6)
    n = 37
    y, K = np.where(rng.random(n) < 0.5, -1.0, 1.0), rng.standard_normal((9, n))
    for steps in range(12):
        rows, step_y = rng.integers(0, 9, steps), np.where(rng.random(steps) < 0.5, -1.0, 1.0)
        start = rng.standard_normal(n)
        expected = start.copy()
        for row, label in zip(rows, step_y):  # c~ + (eta y_k y) K, a step at a time
            expected = expected + (0.3 * label * y) * K[row]
        np.testing.assert_array_equal(add_steps(start.copy(), y, K, rows, step_y, 0.3), expected)
        first = rng.integers(0, steps + 1, n)  # entry i takes the steps from first[i] on
        expected = start.copy()
        for t, (row, label) in enumerate(zip(rows, step_y)):
            expected = np.where(t >= first, expected + (0.3 * label * y) * K[row], expected)
        np.testing.assert_array_equal(add_steps(start.copy(), y, K, rows, step_y, 0.3, first=first), expected)


def _requests_of(reference):
    """What every ``slant_round`` request of a path of ``reference`` (4 features) carries."""
    return {"kernel": KERNEL.to_dict(), "eta": 0.5, "n_select": 3, "ref_rows": reference.support_vectors,
            "ref_coef": reference.coef, "ref_bias": reference.bias,
            "ref_key": content_key(KERNEL, reference.support_vectors, reference.coef), "ref_screen": False}


NO_SUPPORT = {"sv_ids": np.zeros(0, np.int64), "sv_rows": np.zeros((0, 4)), "sv_coef": np.zeros(0)}  # a reset's
NO_STEPS = dict(step_ids=np.zeros(0, np.int64), step_rows=np.zeros((0, 4)), step_y=np.zeros(0),  # a commit alone
                step_order=np.zeros(0, np.int64), claim_value=np.zeros(0), claim_key=np.zeros(0, np.uint64),
                claim_id=np.zeros(0, np.int64))


def test_a_speculation_reports_the_best_open_examples_along_its_steps_and_commits_what_stood(problem):
    X, y, reference = problem
    data = PartitionData.build(X, y, np.ones(len(y)), np.arange(len(y)))
    base = _requests_of(reference)
    state, full = slant_round(data, {}, dict(base, reset=True, **NO_SUPPORT))
    held = state["held"].copy()
    assert held.sum() == 6 and set(np.flatnonzero(held)) == set(full["cand_ids"])
    ids = np.array([5, 9])
    steps = dict(step_ids=ids, step_rows=X[ids], step_y=y[ids], step_order=np.array([0, 1, 0]))
    unbeatable = dict(claim_value=np.full(3, np.inf), claim_key=np.zeros(3, np.uint64), claim_id=np.zeros(3, np.int64))
    none = np.zeros(0, np.int64)
    state, speculated = slant_round(data, state, dict(base, reset=False, commit=None, release=none, **steps,
                                                      **unbeatable))
    assert not state["responses"].any()  # nothing applied before the commit
    assert speculated["refuted"] == 3
    columns = naive_kernel(X, X[[5, 9, 5]], KERNEL)
    open_ = state["eligible"] & ~held
    for t in range(4):  # state t: the first t steps applied
        c = 0.5 * y * (columns[:, :t] @ y[[5, 9, 5]][:t])
        v = state["h"] - c
        for slot, in_class in ((0, y < 0), (1, y > 0)):
            order = np.lexsort((np.arange(len(y)), data.keys, -v))  # v desc, key, id
            ranked_ = [i for i in order if open_[i] and in_class[i]]
            assert speculated["best_ids"][t, slot] == ranked_[0]
            assert speculated["runner_up_id"][t, slot] == ranked_[1]
            assert speculated["best_c"][t, slot] == pytest.approx(c[ranked_[0]], abs=1e-12)
            assert speculated["runner_up_value"][t, slot] == pytest.approx(v[ranked_[1]], abs=1e-12)
            np.testing.assert_array_equal(speculated["best_rows"][speculated["best_row"][t, slot]], X[ranked_[0]])
    # a claim at state 1 that the best open example there ties in value and beats by its smaller id
    best = speculated["best_ids"][1, 1]
    tie = dict(unbeatable, claim_value=np.array([np.inf, speculated["best_h"][1, 1] - speculated["best_c"][1, 1],
                                                 np.inf]), claim_key=np.array([0, data.keys[best], 0], np.uint64),
               claim_id=np.array([0, best + 1, 0]))
    _, refuted = slant_round(data, dict(state, speculated=None), dict(base, reset=False, commit=None, release=none,
                                                                      **steps, **tie))
    assert refuted["refuted"] == 1 and (refuted["best_ids"][2:] == -1).all()  # later states: not computed
    state, after = slant_round(data, state, dict(base, reset=False, commit=2, release=none, **NO_STEPS))  # 5, 9 stood
    expected = 0.5 * y * (y[5] * naive_kernel(X, X[[5]], KERNEL)[:, 0] + y[9] * naive_kernel(X, X[[9]], KERNEL)[:, 0])
    np.testing.assert_allclose(state["responses"], expected, atol=1e-12)
    assert np.flatnonzero(state["support"]).tolist() == [5, 9]
    newly = {speculated["best_ids"][t, slot] for t in range(3) for slot in (0, 1)}  # best at a state that stood
    assert set(np.flatnonzero(state["held"] & ~held)) == ({5, 9} | newly) - set(np.flatnonzero(held))
    assert not np.isin(after["best_ids"][0], list(newly)).any()  # held now, so no longer open
    released = np.array(sorted(newly - {5, 9}), np.int64)  # the driver gives them back: open again
    state, _ = slant_round(data, state, dict(base, reset=False, commit=0, release=released, **NO_STEPS))
    assert not state["held"][released].any() and state["held"][[5, 9]].all()
    _, rebuilt = slant_round(data, {}, dict(base, reset=True, sv_ids=ids, sv_rows=X[ids],
                                            sv_coef=0.5 * y[ids]))
    assert rebuilt["sv_ids"].tolist() == [5, 9]
    np.testing.assert_allclose(rebuilt["sv_c"], state["responses"][ids], atol=1e-12)


@pytest.mark.parametrize("claimed, stood, taken", [
    ("none", 3, True),  # every step stood: the speculation checked all 3 states
    ("none", 2, False),  # another partition refuted step 3: its responses are a step past
    ("state 1", 1, True),  # this partition refuted step 2 at state 1
])
def test_a_commit_takes_the_speculations_responses_where_its_checks_stopped(problem, claimed, stood, taken):
    X, y, reference = problem
    data = PartitionData.build(X, y, np.ones(len(y)), np.arange(len(y)))
    base = dict(_requests_of(reference), release=np.zeros(0, np.int64))
    state, _ = slant_round(data, {}, dict(base, reset=True, **NO_SUPPORT))
    ids = np.array([5, 9])
    steps = dict(reset=False, commit=None, step_ids=ids, step_rows=X[ids], step_y=y[ids], step_order=np.array([0, 1, 0]))
    claims = dict(claim_value=np.full(4, np.inf), claim_key=np.zeros(4, np.uint64), claim_id=np.zeros(4, np.int64))
    if claimed == "state 1":  # the best open example at state 1 ties the claim's value and has the smaller id
        _, unbeaten = slant_round(data, copy.deepcopy(state), dict(base, **steps, **claims))
        best = unbeaten["best_ids"][1, 1]
        claims["claim_value"][1] = unbeaten["best_h"][1, 1] - unbeaten["best_c"][1, 1]
        claims["claim_key"][1], claims["claim_id"][1] = data.keys[best], best + 1
    state, speculated = slant_round(data, state, dict(base, **steps, **claims))
    assert speculated["refuted"] == (1 if claimed == "state 1" else 4)
    own = state["speculated"]["responses"]
    expected = add_steps(state["responses"].copy(), y, state["columns"].K, state["speculated"]["at"][:stood],
                         y[[5, 9, 5]][:stood], 0.5)
    state, _ = slant_round(data, state, dict(base, reset=False, commit=stood, **NO_STEPS))
    assert (state["responses"] is own) == taken
    np.testing.assert_array_equal(state["responses"], expected)


@pytest.mark.parametrize("kwargs, message", [
    ({"eta": 0.0}, "eta must be a positive finite number, got 0.0"),
    ({"epsilon": -1.0}, "epsilon must be a finite number >= 0"),
    ({"max_support": 0}, "max_support must be an integer >= 1, got 0"),
    ({"eta": 4.0, "epsilon": 0.5}, "2 epsilon <= eta Kmax: the method has no step bound, so give max_steps"),
])
def test_bad_parameters_are_named(problem, kwargs, message):
    X, y, reference = problem
    with pytest.raises(ValueError, match=message):
        fit_slant(LocalEngine(X, y), reference, **kwargs)


def test_a_reference_for_other_data_is_refused(problem):
    X, y, reference = problem
    with pytest.raises(ValueError, match=r"label values \[-1.0, 1.0\] differ from the data's \[0, 1\]"):
        fit_slant(LocalEngine(X, (y > 0).astype(int)), reference)
    as_ints = fit_slant(LocalEngine(X, y.astype(int)), reference, max_support=3)  # -1 and 1 are -1.0 and 1.0
    assert as_ints.classes == [-1, 1] and as_ints.n_support == 3
    with pytest.raises(ValueError, match="the reference model has 4 features but the data has 3"):
        fit_slant(LocalEngine(X[:, :3], y), reference)
    with pytest.raises(ValueError, match="reference must be a KernelExpansion"):
        fit_slant(LocalEngine(X, y), "model.npz")
    with pytest.raises(ValueError, match="this model holds no slant path: use a model returned by fit_slant"):
        slant_model_at(reference, 3)


@pytest.mark.parametrize("kernel", [KernelSpec("linear"), KernelSpec("poly", gamma=0.5, degree=3, coef0=1.0)])
def test_kernels_that_can_be_negative_take_the_one_step_path_too(problem, kernel):
    X, y, _ = problem
    X = X[:120] / 2.0
    y = y[:120]
    reference = fit_csvc(LocalEngine(X, y), C=1.0, kernel=kernel)
    model = fit_slant(LocalEngine(X, y, n_partitions=2), reference, eta=0.05, epsilon=0.3, max_steps=300,
                      candidates_per_class=4)
    steps, reason = naive_slant_steps(X, y, example_keys(X, y, np.ones(len(y))), reference, 0.05, 0.3,
                                      max_steps=300)
    assert model.metadata["steps"] == steps and model.metadata["stopped"] == reason
    assert model.metadata["kmax"] >= np.abs(naive_kernel(X, X, kernel)).max()


def test_a_partition_keeping_few_kernel_columns_takes_the_same_steps(problem, monkeypatch):
    X, y, reference = problem
    monkeypatch.setattr("core.partition.slant.COLUMN_BYTES", 8 * (len(y) // 2) * 2)  # 2 columns of a partition
    model = fit_slant(LocalEngine(X, y, n_partitions=2), reference, eta=0.25, epsilon=0.2, max_support=40,
                      candidates_per_class=2)
    steps, reason = naive_slant_steps(X, y, example_keys(X, y, np.ones(len(y))), reference, 0.25, 0.2,
                                      max_support=40)
    assert model.metadata["steps"] == steps and model.metadata["stopped"] == reason
    assert len(set(steps)) < len(steps)  # support vectors stepped on again: their columns were given up or kept


def test_a_driver_holding_few_examples_gives_the_others_back_and_takes_the_same_steps(problem, monkeypatch):
    X, y, reference = problem
    monkeypatch.setattr("core.slant.HELD_OTHERS", 6)
    model = fit_slant(LocalEngine(X, y, n_partitions=3), reference, eta=0.25, epsilon=0.2, candidates_per_class=2,
                      max_support=40)
    steps, reason = naive_slant_steps(X, y, example_keys(X, y, np.ones(len(y))), reference, 0.25, 0.2,
                                      max_support=40)
    assert model.metadata["steps"] == steps and model.metadata["stopped"] == reason


def test_speculations_are_shorter_where_partitions_are_large():
    from types import SimpleNamespace

    from core.slant import SPECULATED_STEPS, _most_steps

    def most(rows, partitions):
        return _most_steps(SimpleNamespace(n_examples=rows, n_partitions=partitions))

    assert most(50_000, 2) == SPECULATED_STEPS  # 25,000 rows: 167 columns in 32 MiB
    assert most(1_000_000, 2) == 8  # 500,000 rows: 4 MB a column
    assert most(40_000_000, 4) == 4  # at least 4


def test_the_first_round_reports_the_drivers_share_of_examples_unless_told():
    """By default each partition reports, per class, its share of the examples the driver holds besides the
    support vectors (two classes per partition), at least 64; a given ``candidates_per_class`` wins."""
    from types import SimpleNamespace

    from core.slant import HELD_OTHERS, _first_report

    def report(partitions, given=None):
        return _first_report(SimpleNamespace(n_partitions=partitions), given)

    assert report(2) == HELD_OTHERS // 4 == 1024
    assert report(1) == 2048
    assert report(64) == 64 and report(200) == 64  # at least 64
    assert report(2, given=16) == 16


def test_a_speculation_computes_its_kernel_columns_four_uncomputed_ones_at_a_time():
    """``_next_columns`` takes steps until a fifth column not kept would be needed, and every step after that
    needs none: the stepped examples not fetched yet this round, kept or not, come with them."""
    from core.partition.slant import CHUNK, _next_columns

    assert CHUNK == 4
    step_ids = np.array([100, 101, 102, 103, 104, 105, 106])
    kept = {101, 103}  # the store's keys (``KernelColumns`` answers ``in``)
    order = np.array([0, 1, 0, 2, 3, 4, 5, 1, 6])  # positions in step_ids, one per step
    at = np.full(step_ids.size, -1)
    last, needed = _next_columns(order, at, 0, step_ids, kept)
    # 100, 102, 104, 105 computed, 101 and 103 kept; step 7 repeats 101; step 8 (106) would be a fifth
    assert last == 8 and needed.tolist() == [0, 1, 2, 3, 4, 5]
    at[needed] = np.arange(needed.size)
    last, needed = _next_columns(order, at, 8, step_ids, kept)
    assert last == 9 and needed.tolist() == [6]
    assert _next_columns(order, at, 9, step_ids, kept)[0] == 9  # no step left


def test_a_second_path_of_the_same_reference_reuses_its_values_and_takes_the_same_steps(problem, monkeypatch):
    """The partitions keep the reference's expansion over their rows from a path's first round: a later path of
    the same reference on the engine (an etaGrid's) computes it no more and gives the model it gives alone; a
    path of another reference computes its own."""
    import core.partition.slant as partition_slant

    X, y, reference = problem
    calls, kernel_times = [], partition_slant.kernel_times
    monkeypatch.setattr(partition_slant, "kernel_times",
                        lambda data, rows, *args, **kw: calls.append(rows.shape[0]) or kernel_times(data, rows, *args,
                                                                                                     **kw))
    engine = LocalEngine(X, y, n_partitions=2)
    first = fit_slant(engine, reference, eta=0.25, epsilon=0.2, max_support=40)
    assert calls == [reference.n_support] * 2  # one expansion a partition
    second = fit_slant(engine, reference, eta=0.5, epsilon=0.5, max_support=30)
    assert calls == [reference.n_support] * 2
    alone = fit_slant(LocalEngine(X, y, n_partitions=2), reference, eta=0.5, epsilon=0.5, max_support=30)
    assert second.metadata["steps"] == alone.metadata["steps"] and np.array_equal(second.coef, alone.coef)
    assert first.metadata["steps"] != second.metadata["steps"]
    other, before = fit_csvc(LocalEngine(X, y), C=1.0, kernel=KERNEL), len(calls)
    assert other.n_support != reference.n_support
    fit_slant(engine, other, eta=0.5, epsilon=0.5, max_support=30)
    assert calls[before:] == [other.n_support] * 2


def test_screened_margins_are_the_float64_ones_below_one_and_leave_the_state_as_it_was(problem, monkeypatch):
    """The float32 screen of the reference's margins (``reference_margins``) gives the float64 margin's bits
    wherever it is below 1 and a margin of at least 1 elsewhere, so h and eligibility to the bit, also with
    biases that put rows' margins a few ulps either side of 1 (a screen that ignored float32's error took rows
    below 1 for rows above it)."""
    import core.partition.slant as partition_slant

    X, y, reference = problem
    X = np.vstack([X] * 5) + np.random.default_rng(7).normal(scale=0.05, size=(5 * len(X), X.shape[1]))
    data = LocalEngine(X, np.tile(y, 5)).partitions[0]
    g = kernel_times(data, reference.support_vectors, reference.coef, KERNEL)
    near = np.argsort(np.abs(np.abs(g) - 1))[:20]  # rows whose |g| is near 1: biases near 0 put them at the edge
    biases = [reference.bias] + [data.y[i] - g[i] + shift for i in near for shift in (-1e-7, -1e-12, 0.0, 1e-12)]
    sizes, kernel_times_at = [], partition_slant.kernel_times  # the rows of each float64 pass
    monkeypatch.setattr(partition_slant, "kernel_times", lambda data, rows, *args, at=None: sizes.append(
        len(data) if at is None else len(at)) or kernel_times_at(data, rows, *args, at=at))
    for bias in biases:
        exact = data.y * (g + bias)
        screened = reference_margins(data, reference.support_vectors, reference.coef, bias, KERNEL, True)
        below = exact < 1.0
        np.testing.assert_array_equal(screened[below], exact[below])
        assert (screened[~below] >= 1.0).all()
        np.testing.assert_array_equal(np.minimum(1.0, screened) - data.y * bias, np.minimum(1.0, exact) - data.y * bias)
        np.testing.assert_array_equal(screened > 0.0, exact > 0.0)
        np.testing.assert_array_equal(
            reference_margins(data, reference.support_vectors, reference.coef, bias, KERNEL, False), exact)
    assert 0 < sizes[0] < len(data) / 2  # the screen spared most rows the float64 pass
    assert sizes[1::2] == [len(data)] * len(biases)


def test_a_path_takes_the_same_steps_with_its_reference_screened_or_not(problem, monkeypatch):
    import core.partition.slant as partition_slant
    import core.slant

    X, y, reference = problem
    screens, bounded = [], partition_slant.rbf_times_bounded
    monkeypatch.setattr(partition_slant, "rbf_times_bounded", lambda *args, **kw: screens.append(1) or bounded(*args,
                                                                                                               **kw))
    paths = {}
    for share in (0.0, 1.0):  # never screened, always
        monkeypatch.setattr(core.slant, "SCREENED_SUPPORT", share)
        for parts in (1, 3):
            model = fit_slant(LocalEngine(X, y, n_partitions=parts), reference, eta=0.25, epsilon=0.2)
            paths[share, parts] = (model.metadata["steps"], model.coef.tobytes())
        assert len(screens) == (0 if share == 0.0 else 4)  # a screen a partition, in the first round only
    assert paths[0.0, 1] == paths[1.0, 1] and paths[0.0, 3] == paths[1.0, 3]
    assert len(paths[0.0, 1][0]) > 100
