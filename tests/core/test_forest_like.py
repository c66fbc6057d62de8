"""The Forest-shaped generator: shape, one-hot blocks, seeding, label noise."""

import numpy as np
import pytest

from core.synthetic import FOREST_AREAS, FOREST_CONTINUOUS, FOREST_SOILS, make_forest_like


def test_forest_like_has_forest_columns():
    X, y = make_forest_like(5000, seed=3)
    assert X.shape == (5000, 54) and y.shape == (5000,)
    cont = X[:, :FOREST_CONTINUOUS]
    assert cont.min() >= 0.0 and cont.max() <= 1.0
    areas = X[:, FOREST_CONTINUOUS:FOREST_CONTINUOUS + FOREST_AREAS]
    soils = X[:, FOREST_CONTINUOUS + FOREST_AREAS:]
    assert soils.shape[1] == FOREST_SOILS
    for block in (areas, soils):  # exactly one 1 per row in each one-hot block
        assert set(np.unique(block)) == {0.0, 1.0}
        assert np.all(block.sum(axis=1) == 1.0)
    assert set(np.unique(y)) == {-1.0, 1.0}
    assert 0.45 < np.mean(y > 0) < 0.55  # balanced like Forest's class 2 vs rest


def test_forest_like_is_seeded():
    X1, y1 = make_forest_like(300, seed=7)
    X2, y2 = make_forest_like(300, seed=7)
    X3, _ = make_forest_like(300, seed=8)
    assert np.array_equal(X1, X2) and np.array_equal(y1, y2)
    assert not np.array_equal(X1, X3)


def test_forest_like_noise_flips_that_share_of_labels():
    # the same seed draws the same rows and rule; only the flips differ
    X, clean = make_forest_like(20000, noise=0.0, seed=1)
    _, noisy = make_forest_like(20000, noise=0.1, seed=1)
    assert 0.09 < np.mean(clean != noisy) < 0.11


@pytest.mark.parametrize("kwargs, message", [({"n": 1}, "n >= 2"), ({"noise": 0.5}, r"noise .* \[0, 0.5\)")])
def test_forest_like_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_forest_like(**{"n": 100, **kwargs})
