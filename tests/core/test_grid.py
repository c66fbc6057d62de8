"""A grid of settings on one engine: each setting's model equals its separate fit; the best is returned."""

import numpy as np
import pytest

from core.ebsvm import fit_ebsvm
from core.engine import LocalEngine
from core.grid import fit_grid
from core.kernels import KernelSpec
from core.slant import fit_slant
from core.spsvm import fit_spsvm
from core.svc import fit_csvc
from core.synthetic import make_rings

SETTINGS = [{"lam": lam, "kernel": KernelSpec("rbf", gamma=gamma)} for gamma in (0.1, 2.0) for lam in (0.01, 1.0)]
ETAS = [{"eta": eta} for eta in (0.25, 1.0, 2.0)]  # the slant sparsifier's step sizes


@pytest.fixture(scope="module")
def data():
    X, y = make_rings(400, 4, noise=0.1, seed=5)
    return X, y, np.random.default_rng(4).random(len(y)) < 0.25


@pytest.fixture(scope="module")
def reference(data):
    """A C-SVC on the training rows, for the slant sparsifier to sparsify."""
    X, y, held = data
    return fit_csvc(LocalEngine(X[~held], y[~held]), C=3.0, kernel=KernelSpec("rbf", gamma=0.5))


@pytest.mark.parametrize("function, arguments, settings", [
    (fit_spsvm, dict(max_basis=12, kappa=4, seed=2), SETTINGS),
    (fit_ebsvm, dict(budget=15, epochs=2, checkpoints=3, seed=1), SETTINGS),
    (fit_slant, dict(max_support=15, max_steps=5000, candidates_per_class=4), ETAS),  # eta = 2: no step bound
], ids=["spsvm", "ebsvm", "slant"])
def test_a_grid_fit_equals_separate_fits_and_returns_the_best(data, reference, function, arguments, settings):
    X, y, held = data
    if function is fit_slant:
        arguments = dict(arguments, reference=reference)
    grid = fit_grid(LocalEngine(X, y, n_partitions=2, validation=held), function=function, settings=settings,
                    select="best", **arguments)
    table = grid.metadata["grid"]
    separate = [function(LocalEngine(X, y, n_partitions=2, validation=held), select="best", **arguments, **s)
                for s in settings]
    for row, model in zip(table["settings"], separate):
        assert row["error"] == model.metadata["validation"]["error"]
        assert row["kept_size"] == model.metadata["validation"]["kept_size"]
    errors = [m.metadata["validation"]["kept_error"] for m in separate]
    assert len(set(errors)) > 1  # the settings differ: choosing means something
    assert table["chosen"] == int(np.argmin(errors))
    chosen = separate[table["chosen"]]
    np.testing.assert_array_equal(grid.coef, chosen.coef)
    np.testing.assert_array_equal(grid.support_vectors, chosen.support_vectors)
    assert table["settings"][table["chosen"]]["setting"] == {
        name: value.to_dict() if name == "kernel" else value for name, value in settings[table["chosen"]].items()}


def test_a_grid_needs_validation_rows_and_settings(data):
    X, y, held = data
    with pytest.raises(ValueError, match="a grid chooses its setting by the validation error"):
        fit_grid(LocalEngine(X, y), function=fit_spsvm, settings=SETTINGS, select="end", max_basis=3)
    with pytest.raises(ValueError, match="settings is empty"):
        fit_grid(LocalEngine(X, y, validation=held), function=fit_spsvm, settings=[], max_basis=3)


def test_slant_paths_that_take_no_step_are_scored_as_the_references_bias(data, reference):
    """An epsilon above every violation stops the sparsifier before its first step: such a path records its
    validation error too (the model is the reference's bias alone), so an eta grid over it chooses instead of
    failing on a path without a validation record after fitting."""
    X, y, held = data
    grid = fit_grid(LocalEngine(X, y, n_partitions=2, validation=held), function=fit_slant, settings=ETAS,
                    reference=reference, epsilon=10.0, select="best")
    constant = np.mean((reference.bias > 0) != (y[held] > 0))
    assert grid.n_support == 0 and grid.metadata["grid"]["chosen"] == 0
    assert [(row["kept_size"], row["kept_error"]) for row in grid.metadata["grid"]["settings"]] == \
        [(0, pytest.approx(constant, rel=1e-15))] * len(ETAS)
