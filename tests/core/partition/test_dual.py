"""The dual-decomposition partition function on its own: state, updates, selection, statistics."""

import numpy as np
import pytest
import scipy.sparse as sp

from core.partition.data import PartitionData
from core.kernels import KernelSpec
from core.partition.dual import NEG, POS, dual_round
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
    base = dict(kernel=KERNEL.to_dict(), C=1.0, ridge=0.0, n_select=3, reset=False,
                ws_ids=np.zeros(0, np.int64), ws_rows=None, ws_y=None, ws_alpha_old=None, ws_alpha=None)
    base.update(kw)
    return base


def _dense(rows):
    return rows.toarray() if sp.issparse(rows) else rows


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
    state, answer = dual_round(data, state, _request(ws_ids=data.ids[ws], ws_rows=data.rows[ws], ws_y=data.y[ws],
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
    state = {"alpha": alpha, "grad": rng.standard_normal(60), "upper": np.ones(60)}
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
    state = {"alpha": np.full(len(data), 0.5), "grad": np.zeros(len(data)), "upper": np.ones(len(data))}
    _, answer = dual_round(data, state, _request(ridge=2.0))
    np.testing.assert_allclose(answer["cand_score"], -answer["cand_y"] * 1.0)  # F = G + mu a = 1
