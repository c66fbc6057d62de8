"""A grid of settings on one engine: each setting's model equals its separate fit; the best is returned."""

import numpy as np
import pytest

from core.ebsvm import fit_ebsvm
from core.engine import LocalEngine
from core.grid import fit_grid
from core.kernels import KernelSpec
from core.spsvm import fit_spsvm
from core.synthetic import make_rings

SETTINGS = [{"lam": lam, "kernel": KernelSpec("rbf", gamma=gamma)} for gamma in (0.1, 2.0) for lam in (0.01, 1.0)]


@pytest.fixture(scope="module")
def data():
    X, y = make_rings(400, 4, noise=0.1, seed=5)
    return X, y, np.random.default_rng(4).random(len(y)) < 0.25


@pytest.mark.parametrize("function, arguments", [(fit_spsvm, dict(max_basis=12, kappa=4, seed=2)),
                                                 (fit_ebsvm, dict(budget=15, epochs=2, checkpoints=3, seed=1))])
def test_a_grid_fit_equals_separate_fits_and_returns_the_best(data, function, arguments):
    X, y, held = data
    grid = fit_grid(LocalEngine(X, y, n_partitions=2, validation=held), function=function, settings=SETTINGS,
                    select="best", **arguments)
    table = grid.metadata["grid"]
    separate = [function(LocalEngine(X, y, n_partitions=2, validation=held), select="best", **arguments, **s)
                for s in SETTINGS]
    for row, model in zip(table["settings"], separate):
        assert row["error"] == model.metadata["validation"]["error"]
        assert row["kept_size"] == model.metadata["validation"]["kept_size"]
    errors = [m.metadata["validation"]["kept_error"] for m in separate]
    assert table["chosen"] == int(np.argmin(errors))
    chosen = separate[table["chosen"]]
    np.testing.assert_array_equal(grid.coef, chosen.coef)
    np.testing.assert_array_equal(grid.support_vectors, chosen.support_vectors)
    assert table["settings"][table["chosen"]]["setting"]["kernel"] == chosen.kernel.to_dict()


def test_a_grid_needs_validation_rows_and_settings(data):
    X, y, held = data
    with pytest.raises(ValueError, match="a grid chooses its setting by the validation error"):
        fit_grid(LocalEngine(X, y), function=fit_spsvm, settings=SETTINGS, select="end", max_basis=3)
    with pytest.raises(ValueError, match="settings is empty"):
        fit_grid(LocalEngine(X, y, validation=held), function=fit_spsvm, settings=[], max_basis=3)
