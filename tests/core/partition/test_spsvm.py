"""SpSVM-2's partition side on its own: the directional sums against their definition, the scored columns."""

import numpy as np
import pytest

from core.kernels import KernelSpec
from core.partition.data import PartitionData
from core.partition.spsvm import _directional_sums, basis_kernel, spsvm_score, spsvm_start
from tests.naive import naive_kernel

KERNEL = KernelSpec("rbf", gamma=0.5)


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
    coef, coef_prev = rng.normal(size=k), rng.normal(size=k)
    loss, slope, curvature, changes = _directional_sums(data, o, columns, coef, coef_prev)
    for c in range(k):  # the loss 1/2 sum w max(0, r)^2 at r = 1 - y (o + b v), and its derivatives in b
        r = 1.0 - data.y * (o + coef[c] * columns[c])
        active = r > 0
        w = np.where(active, data.weight, 0.0)
        assert loss[c] == pytest.approx(0.5 * np.sum(w * r * r), rel=1e-12, abs=1e-12)
        assert slope[c] == pytest.approx(-np.sum(w * data.y * columns[c] * r), rel=1e-12, abs=1e-12)
        assert curvature[c] == pytest.approx(np.sum(w * columns[c] ** 2), rel=1e-12, abs=1e-12)
        before = 1.0 - data.y * (o + coef_prev[c] * columns[c]) > 0
        assert changes[c] == np.count_nonzero(active != before)


def test_scoring_keeps_one_kernel_row_per_candidate():
    data = _partition(50)
    candidates = np.random.default_rng(2).standard_normal((3, 4))
    state, _ = spsvm_start(data, None, {"capacity": 4})
    state, answer = spsvm_score(data, state, {"kernel": KERNEL.to_dict(), "rows": candidates,
                                              "coef": np.zeros(3), "coef_prev": np.zeros(3)})
    expected = 1.0 + naive_kernel(candidates, data.rows, KERNEL)
    np.testing.assert_allclose(state["cand"], expected, rtol=1e-12)
    np.testing.assert_allclose(basis_kernel(data.rows, candidates, KERNEL, transposed=True), expected, rtol=1e-12)
    assert answer["loss"] == pytest.approx(np.full(3, 0.5 * data.weight.sum()))
