"""SpSVM-2's partition side on its own: the directional sums and a step's loss and active set against their
definitions, the scored columns, the gradient round's derived residual sum."""

import copy

import numpy as np
import pytest
import scipy.sparse as sp

from core.kernels import KernelSpec
from core.partition.data import PartitionData
from core.partition.spsvm import (SCORE_SUMS, _directional_sums, _step, basis_kernel, spsvm_add_basis,
                                  spsvm_gradient, spsvm_line, spsvm_score, spsvm_start)
from core.rows import to_dense
from tests.naive import naive_kernel

KERNEL = KernelSpec("rbf", gamma=0.5)
NO_DRAW = {"draw": -1, "seed": 0, "kappa": 0, "taken": np.zeros(0, np.uint64)}  # fetch no candidates


def _partition(n, seed=0, zero_weights=False):
    rng = np.random.default_rng(seed)
    weight = rng.uniform(0.5, 2.0, n)
    if zero_weights:
        weight[::3] = 0.0
    return PartitionData.build(rng.standard_normal((n, 4)), np.where(rng.random(n) < 0.5, 1.0, -1.0), weight,
                               np.arange(n))


@pytest.mark.parametrize("n, k, zero_weights", [(1, 1, False), (37, 3, False), (1000, 10, True)])
def test_directional_sums_match_their_definition(n, k, zero_weights):
    data = _partition(n, zero_weights=zero_weights)
    rng = np.random.default_rng(1)
    o, columns = rng.normal(size=n), rng.normal(size=(k, n))
    coef = rng.normal(size=k)
    columns[:, ::5] = 0.0  # rows a direction does not move: no kink
    if n > 1:  # the last direction at b = 0 with row 1 at its kink (r = 0): the piece closes on both sides
        coef[-1], o[1] = 0.0, data.y[1]
    loss, slope, curvature, lower, upper = _directional_sums(data, o, columns, coef)
    for c in range(k):  # the loss 1/2 sum w max(0, r)^2 at r = 1 - y (o + b v), and its derivatives in b
        r = 1.0 - data.y * (o + coef[c] * columns[c])
        active = r > 0
        w = np.where(active, data.weight, 0.0)
        assert loss[c] == pytest.approx(0.5 * np.sum(w * r * r), rel=1e-12, abs=1e-12)
        assert slope[c] == pytest.approx(-np.sum(w * data.y * columns[c] * r), rel=1e-12, abs=1e-12)
        assert curvature[c] == pytest.approx(np.sum(w * columns[c] ** 2), rel=1e-12, abs=1e-12)
        moving = columns[c] != 0  # the kinks: where r_i = 0 along b, for the rows the direction moves
        kinks = coef[c] + r[moving] / (data.y * columns[c])[moving]
        below, above = kinks[kinks <= coef[c]], kinks[kinks >= coef[c]]
        assert lower[c] == pytest.approx(below.max() if below.size else -np.finfo(float).max, rel=1e-12)
        assert upper[c] == pytest.approx(above.min() if above.size else np.finfo(float).max, rel=1e-12)
    if n > 1:
        assert lower[-1] == upper[-1] == 0.0


def test_the_loss_is_one_quadratic_on_the_piece():
    data = _partition(200, seed=4)
    rng = np.random.default_rng(5)
    o, column, b = rng.normal(size=200), rng.normal(size=(1, 200)), 0.3
    loss, slope, curvature, lower, upper = _directional_sums(data, o, column, [b])
    for t in np.linspace(lower[0], upper[0], 7):  # the ends included: the loss is C^1
        quadratic = loss[0] + slope[0] * (t - b) + 0.5 * curvature[0] * (t - b) ** 2
        assert _directional_sums(data, o, column, [t])[0][0] == pytest.approx(quadratic, rel=1e-12, abs=1e-12)
    beyond = upper[0] + 0.5 * (upper[0] - lower[0])  # past a kink: another quadratic
    quadratic = loss[0] + slope[0] * (beyond - b) + 0.5 * curvature[0] * (beyond - b) ** 2
    assert _directional_sums(data, o, column, [beyond])[0][0] != pytest.approx(quadratic, rel=1e-9)


def test_kinks_within_rounding_of_b_close_the_piece_and_those_at_0_stay_within_the_line_search_s_margin():
    eps = np.finfo(float).eps
    data = PartitionData.build(np.zeros((1, 4)), np.array([1.0]), np.ones(1), np.arange(1))
    rng = np.random.default_rng(8)
    for _ in range(200):
        b, v = rng.uniform(0.1, 10.0), rng.uniform(-5.0, 5.0)
        o = np.array([1.0 - b * v])  # r = 1 - (o + b v) = 0 but for rounding: the row sits at its kink
        _, _, _, lower, upper = _directional_sums(data, o, np.array([[v]]), [b])
        assert lower[0] <= b <= upper[0] and upper[0] - lower[0] <= 16 * eps * b
        # a row at its kink at 0 (margin exactly 0) seen from t: its kink comes back as t - |r / v|, off by t's
        # rounding, within the share of t that core.spsvm's line search takes for 0
        _, _, _, lower, _ = _directional_sums(data, np.array([1.0]), np.array([[v]]), [b])
        assert abs(lower[0]) <= 16 * eps * b


@pytest.mark.parametrize("step", [0.0, 0.8])
def test_a_step_moves_the_outputs_and_reports_the_loss_and_the_active_set_s_changes(step):
    data = _partition(500, seed=11, zero_weights=True)
    rng = np.random.default_rng(12)
    o, z = rng.normal(size=500), rng.normal(size=500)
    was_active = rng.random(500) < 0.5
    moved = o + step * z
    r = 1.0 - data.y * moved
    expected_loss = 0.5 * np.sum(np.where(r > 0, data.weight * r * r, 0.0))
    outputs = o.copy()
    loss, active, entering, leaving = _step(data, outputs, z, step, was_active)
    np.testing.assert_allclose(outputs, moved, rtol=1e-15, atol=1e-15)
    assert loss == pytest.approx(expected_loss, rel=1e-12)
    np.testing.assert_array_equal(active, r > 0)
    np.testing.assert_array_equal(entering, np.flatnonzero((r > 0) & ~was_active))  # ascending, as numpy's
    np.testing.assert_array_equal(leaving, np.flatnonzero(was_active & ~(r > 0)))
    assert entering.size and leaving.size
    outputs = o.copy()
    assert _step(data, outputs, z, step) == pytest.approx(expected_loss, rel=1e-12)  # the loss alone


@pytest.mark.parametrize("sparse", [False, True])
def test_scoring_keeps_one_kernel_row_per_candidate(sparse):
    data = _partition(50)
    if sparse:  # CSR rows: no transpose kept, the candidates' rows through the kernel block's tiles
        data = PartitionData.build(sp.csr_matrix(data.rows), data.y, data.weight, data.ids)
    assert (data.rows_t is None) == sparse
    candidates = np.random.default_rng(2).standard_normal((3, 4))
    state, _ = spsvm_start(data, None, {"capacity": 4})
    state, answer = spsvm_score(data, state, {"kernel": KERNEL.to_dict(), "rows": candidates,
                                              "coef": np.zeros(3), **NO_DRAW})
    expected = 1.0 + naive_kernel(candidates, to_dense(data.rows), KERNEL)
    np.testing.assert_allclose(state["cand"], expected, rtol=1e-12)
    np.testing.assert_allclose(basis_kernel(data.rows, candidates, KERNEL, transposed=True), expected, rtol=1e-12)
    assert answer["loss"] == pytest.approx(np.full(3, 0.5 * data.weight.sum()))
    assert answer["fetched_ids"].size == 0


def test_adding_a_basis_function_runs_the_next_first_score_round_as_a_score_round_would():
    data = _partition(60, seed=6)
    rng = np.random.default_rng(7)
    scored, following = rng.standard_normal((2, 4)), rng.standard_normal((3, 4))
    draw = {"draw": 4, "seed": 1, "kappa": 3, "taken": np.zeros(0, np.uint64)}
    results = []
    for merged in (False, True):
        state, _ = spsvm_start(data, None, {"capacity": 4})
        state, _ = spsvm_score(data, state, {"kernel": KERNEL.to_dict(), "rows": scored, "coef": np.zeros(2),
                                             **NO_DRAW})
        add = {"kernel": KERNEL.to_dict(), "row": scored[1:], "scored": 1, "coef": 0.7, "checkpoint": False}
        state, added = spsvm_add_basis(data, state, dict(add, score_rows=following if merged else None, **draw))
        if merged:
            answer = {name: added["score_" + name] for name in SCORE_SUMS}
        else:
            state, answer = spsvm_score(data, state, {"kernel": KERNEL.to_dict(), "rows": following,
                                                      "coef": np.zeros(3), **NO_DRAW})
        assert added["fetched_ids"].size == 3  # the draw's candidates either way
        results.append((answer, state["cand"]))
    (separate, cand), (merged, merged_cand) = results
    np.testing.assert_array_equal(merged_cand, cand)
    for name in SCORE_SUMS:
        np.testing.assert_array_equal(merged[name], separate[name])


@pytest.mark.parametrize("step", [0.4, 1.0, 3.0])
def test_a_derived_residual_sum_is_the_one_a_pass_over_the_columns_gives(step):
    data = _partition(300, seed=9, zero_weights=True)
    rng = np.random.default_rng(10)
    basis = rng.standard_normal((5, 4))
    state, _ = spsvm_start(data, None, {"capacity": 5})
    for row, coef in zip(basis, rng.normal(size=5)):
        state, _ = spsvm_add_basis(data, state, {"kernel": KERNEL.to_dict(), "row": row[None], "scored": -1,
                                                 "coef": float(coef), "checkpoint": False, "score_rows": None,
                                                 **NO_DRAW})
    state, before = spsvm_gradient(data, state, {"step": 0.0, "gram_from": 0, "derive": False})
    active = state["factor"].copy()
    direction = 3.0 * rng.normal(size=5)
    state, _ = spsvm_line(data, state, {"direction": direction, "step": step})
    answers = {derive: spsvm_gradient(data, copy.deepcopy(state), {"step": step, "gram_from": 5, "derive": derive})
               for derive in (False, True)}
    (_, full), (moved_state, derived) = answers[False], answers[True]
    C = 1.0 + naive_kernel(to_dense(data.rows), basis, KERNEL)
    w = np.where(active, data.weight, 0.0)  # over the active set before the step, as the driver's P
    expected = before["residual_sum"] - step * (C.T @ (w * (C @ direction))) + derived["residual_change"]
    np.testing.assert_allclose(expected, full["residual_sum"], rtol=1e-10, atol=1e-10)
    changed = moved_state["factor"] != active
    assert 0 < changed.sum() < 300  # the step moved some examples in or out of the active set, not all
    assert "residual_sum" not in derived and derived["loss"] == full["loss"]
