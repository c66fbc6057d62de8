"""The dual-decomposition partition function on its own: state, updates, selection, statistics."""

import numpy as np
import pytest
import scipy.sparse as sp

from core.partition.data import PartitionData
from core.kernels import KernelSpec
from core.partition.dual import NEG, POS, dual_round
from core.row_store import RowStore
from tests.naive import naive_kernel

KERNEL = KernelSpec("rbf", gamma=0.7)


def _partition(seed=0, n=40, sparse=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    if sparse:
        X[rng.random(X.shape) < 0.5] = 0.0
        X = sp.csr_matrix(X)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    return PartitionData.build(X, y, np.ones(n), np.arange(100, 100 + n))


def _request(**kw):
    base = dict(kernel=KERNEL.to_dict(), C=1.0, ridge=0.0, n_select=3, reset=False, rows_key="store",
                ws_ids=np.zeros(0, np.int64), ws_rows=None, ws_y=None, ws_alpha_old=None, ws_alpha=None,
                shrink_below=-np.inf, shrink_above=np.inf, unshrink=False)
    base.update(kw)
    return base


def _dense(rows):
    return rows.toarray() if sp.issparse(rows) else rows


def _state(alpha, grad, upper):
    """A partition state with every example active."""
    return {"alpha": alpha, "grad": grad, "upper": upper, "shrunk_at": np.full(alpha.size, -1), "log": [],
            "rows_key": "store", "rows_sent": np.zeros(alpha.size, bool), "rows_received": RowStore()}


@pytest.mark.parametrize("sparse", [False, True])
def test_reset_then_update_equals_a_fresh_reset(sparse):
    data = _partition(sparse=sparse)
    X = _dense(data.rows)
    sv = np.array([1, 4, 7])
    sv_alpha = np.array([0.5, 1.0, 0.25])
    state, _ = dual_round(data, {}, _request(reset=True, sv_ids=data.ids[sv], sv_rows=data.rows[sv],
                                             sv_y=data.y[sv], sv_alpha=sv_alpha))
    K = naive_kernel(X, X, KERNEL)
    alpha = np.zeros(len(data))
    alpha[sv] = sv_alpha
    np.testing.assert_allclose(state["grad"], data.y * (K @ (alpha * data.y)) - 1.0, atol=1e-12)
    # move two variables, one of them new
    ws = np.array([4, 9])
    new = np.array([0.75, 0.5])
    state, answer = dual_round(data, state, _request(ws_ids=data.ids[ws], ws_new=np.ones(ws.size, bool), ws_rows=data.rows[ws], ws_y=data.y[ws],
                                                     ws_alpha_old=alpha[ws], ws_alpha=new))
    alpha[ws] = new
    np.testing.assert_allclose(state["alpha"], alpha)
    np.testing.assert_allclose(state["grad"], data.y * (K @ (alpha * data.y)) - 1.0, atol=1e-12)
    assert answer["objective_part"] == pytest.approx(alpha @ (state["grad"] - 1.0))


def test_candidates_are_the_most_violating_of_each_set():
    data = _partition(seed=1, n=60)
    rng = np.random.default_rng(2)
    alpha = np.where(rng.random(60) < 0.5, rng.random(60), 0.0)
    alpha[:5] = 1.0  # at the upper bound
    state = _state(alpha, rng.standard_normal(60), np.ones(60))
    grad = state["grad"].copy()
    _, answer = dual_round(data, state, _request(n_select=3))
    score = -data.y * grad
    pos = data.y > 0
    up = np.where(pos, alpha < 1, alpha > 0)
    low = np.where(pos, alpha > 0, alpha < 1)
    expected = set()
    for in_class in (~pos, pos):
        for mask, sign in ((up & in_class, -1), (low & in_class, 1)):
            idx = np.flatnonzero(mask)
            expected |= set(data.ids[idx[np.argsort(sign * score[idx])[:3]]].tolist())
    assert set(answer["cand_ids"].tolist()) == expected
    for slot, in_class in ((NEG, ~pos), (POS, pos)):
        assert answer["up_max"][slot] == score[up & in_class].max()
        assert answer["low_min"][slot] == score[low & in_class].min()
        free = in_class & (alpha > 0) & (alpha < 1)
        assert answer["free_count"][slot] == free.sum()
        assert answer["free_sum"][slot] == pytest.approx(grad[free].sum())


def test_ridge_enters_the_selection_scores():
    data = _partition(seed=3)
    state = _state(np.full(len(data), 0.5), np.zeros(len(data)), np.ones(len(data)))
    _, answer = dual_round(data, state, _request(ridge=2.0))
    np.testing.assert_allclose(answer["cand_score"], -answer["cand_y"] * 1.0)  # F = G + mu a = 1


@pytest.mark.parametrize("sparse", [False, True])
def test_shrunk_examples_leave_the_selection_and_come_back_with_exact_gradients(sparse):
    data = _partition(seed=4, n=50, sparse=sparse)
    K = naive_kernel(_dense(data.rows), _dense(data.rows), KERNEL)
    rng = np.random.default_rng(5)
    alpha = np.zeros(len(data))
    state, _ = dual_round(data, {}, _request(reset=True, sv_ids=data.ids[:0], sv_rows=data.rows[:0],
                                             sv_y=data.y[:0], sv_alpha=np.zeros(0)))

    def step(ws, new, **kw):
        nonlocal state
        request = _request(ws_ids=data.ids[ws], ws_new=np.ones(ws.size, bool), ws_rows=data.rows[ws], ws_y=data.y[ws], ws_alpha_old=alpha[ws],
                           ws_alpha=new, n_select=len(data), **kw)
        alpha[ws] = new
        state, answer = dual_round(data, state, request)
        return answer

    step(np.arange(0, 20, 2), np.full(10, 0.4))
    # thresholds that shrink every example at a bound (all but the two free ones: each pairs one way only)
    answer = step(np.array([1, 3]), np.array([0.2, 1.0]), shrink_below=np.inf, shrink_above=-np.inf)
    shrunk = np.flatnonzero(state["shrunk_at"] >= 0)
    assert answer["shrunk"] == shrunk.size > 20 and not set(data.ids[shrunk]) & set(answer["cand_ids"].tolist())
    assert np.all((alpha[shrunk] == 0) | (alpha[shrunk] == 1))
    step(np.array([0, 5]), np.array([0.1, 0.3]))  # example 5 was shrunk: it moves and is restored
    assert state["shrunk_at"][5] == -1 and state["log"]
    for round_ in range(3):
        ws = rng.choice(np.flatnonzero(state["shrunk_at"] < 0), 4, replace=False)
        step(ws, rng.random(4))
    expected = data.y * (K @ (alpha * data.y)) - 1.0
    active = state["shrunk_at"] < 0
    np.testing.assert_allclose(state["grad"][active], expected[active], atol=1e-12)
    assert not np.allclose(state["grad"][~active], expected[~active], atol=1e-6)  # stale while shrunk
    answer = dual_round(data, state, _request(unshrink=True))[1]
    np.testing.assert_allclose(state["grad"], expected, atol=1e-12)
    assert answer["shrunk"] == 0 and not state["log"]
