"""Validation inside the fit: the rules of ``core.selection``, LocalEngine's validation rows, and for SpSVM-2,
the slant sparsifier and EBSVM, a recorded validation path equal to the errors of the models computed
afterwards, with the kept model equal to the one at the chosen size."""

import numpy as np
import pytest

from core.ebsvm import fit_ebsvm
from core.engine import LocalEngine
from core.kernels import KernelSpec
from core.selection import check_selection, chosen_index
from core.slant import fit_slant, slant_model_at
from core.spsvm import fit_spsvm, truncate
from core.svc import fit_csvc
from core.synthetic import make_rings
from tests.core.test_spsvm import _EngineLosingItsTasks

KERNEL = KernelSpec("rbf", gamma=0.5)


@pytest.fixture(scope="module")
def data():
    X, y = make_rings(500, 4, noise=0.1, seed=11)
    held = np.random.default_rng(2).random(len(y)) < 0.3
    return X, y, held


def _error(model, X, y):
    return float(np.mean(model.predict(X) != y))


@pytest.mark.parametrize("select, tolerance, expected", [
    ("end", 0.0, 4), ("best", 0.0, 2), ("withinTolerance", 0.02, 1), ("withinTolerance", 0.0, 2),
    ("withinTolerance", 1.0, 0)])
def test_the_rules_pick_the_end_the_first_best_or_the_first_within_tolerance(select, tolerance, expected):
    assert chosen_index([0.30, 0.21, 0.20, 0.20, 0.25], select, tolerance) == expected


@pytest.mark.parametrize("select, tolerance, n_validation, message", [
    ("largest", 0.0, 10, r"select must be one of \('end', 'best', 'withinTolerance'\), got 'largest'"),
    ("best", -0.1, 10, "tolerance must be a finite number >= 0"),
    ("best", 0.0, 0, "select='best' chooses by the validation error, and the training data has no validation rows"),
])
def test_bad_selections_are_named(select, tolerance, n_validation, message):
    with pytest.raises(ValueError, match=message):
        check_selection(select, tolerance, n_validation)
    check_selection("end", 0.0, 0)  # the default needs no validation rows


def test_local_engine_holds_validation_rows_beside_its_training_rows(data):
    X, y, held = data
    engine = LocalEngine(X, y, n_partitions=2, validation=held)
    assert (engine.n_examples, engine.n_validation) == ((~held).sum(), held.sum())
    for block in engine.partitions:
        assert not np.intersect1d(block.ids, block.validation.ids).size
        np.testing.assert_array_equal(block.validation.rows, X[block.validation.ids])
    with pytest.raises(ValueError, match="validation must be a boolean mask of the 500 rows"):
        LocalEngine(X, y, validation=held.astype(int))
    all_held = np.zeros(len(y), bool)
    all_held[250:] = True
    with pytest.raises(ValueError, match="a partition holds only validation rows"):
        LocalEngine(X, y, n_partitions=2, validation=all_held)


def test_spsvm_records_the_error_of_every_truncated_model_and_keeps_the_chosen_one(data):
    X, y, held = data
    args = dict(max_basis=25, lam=0.1, kernel=KERNEL, kappa=5, seed=1)
    model = fit_spsvm(LocalEngine(X, y, n_partitions=2, validation=held), **args)
    record = model.metadata["validation"]
    assert record["sizes"] == list(range(1, 26)) and record["kept_size"] == 25
    afterwards = [_error(truncate(model, d), X[held], y[held]) for d in record["sizes"]]
    np.testing.assert_allclose(record["error"], afterwards, rtol=0, atol=1e-12)
    margin = np.maximum(0.0, 1.0 - y[held] * truncate(model, 7).decision_function(X[held]))
    assert record["loss"][6] == pytest.approx(0.5 * np.mean(margin ** 2), rel=1e-9)
    for select, tolerance in (("best", 0.0), ("withinTolerance", 0.01)):
        kept = fit_spsvm(LocalEngine(X, y, n_partitions=2, validation=held), select=select, tolerance=tolerance,
                         **args)
        d = kept.metadata["validation"]["kept_size"]
        assert d == 1 + chosen_index(record["error"], select, tolerance) and kept.n_support == d
        np.testing.assert_array_equal(kept.coef, truncate(model, d).coef)
        assert kept.bias == truncate(model, d).bias


class _RecordingEngine(LocalEngine):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.functions = []

    def run(self, function, request, rebuild=None):
        self.functions.append(function.__name__)
        return super().run(function, request, rebuild)


@pytest.mark.parametrize("function", ["spsvm_line", "spsvm_gradient", "spsvm_add_basis"])
def test_spsvm_partitions_that_lose_their_state_rebuild_their_validation_outputs(data, function):
    X, y, held = data
    args = dict(max_basis=10, lam=0.1, kernel=KERNEL, kappa=4)
    recording = _RecordingEngine(X, y, n_partitions=2, validation=held)
    undisturbed = fit_spsvm(recording, **args)
    lost_at = 1 + [k for k, name in enumerate(recording.functions) if name == function][3]  # its fourth round
    engine = _EngineLosingItsTasks(X, y, n_partitions=2, lost_at=lost_at, validation=held)
    disturbed = fit_spsvm(engine, **args)
    assert engine.lost_in == function
    np.testing.assert_allclose(disturbed.metadata["validation"]["error"],
                               undisturbed.metadata["validation"]["error"], rtol=0, atol=1e-12)


@pytest.mark.parametrize("aggressive", [False, True])
def test_slant_records_the_error_at_every_support_size_and_keeps_the_chosen_one(data, aggressive):
    X, y, held = data
    reference = fit_csvc(LocalEngine(X[~held], y[~held]), C=3.0, kernel=KERNEL)
    args = dict(aggressive=aggressive, candidates_per_class=4)
    model = fit_slant(LocalEngine(X, y, n_partitions=2, validation=held), reference, **args)
    record = model.metadata["validation"]
    assert record["sizes"] == list(range(1, model.n_support + 1))
    afterwards = [_error(slant_model_at(model, s), X[held], y[held]) for s in record["sizes"]]
    np.testing.assert_allclose(record["error"], afterwards, rtol=0, atol=1e-12)
    kept = fit_slant(LocalEngine(X, y, n_partitions=2, validation=held), reference, select="best", **args)
    s = kept.metadata["validation"]["kept_size"]
    assert s == 1 + int(np.argmin(record["error"])) and kept.n_support == s
    np.testing.assert_array_equal(kept.coef, slant_model_at(model, s).coef)


def test_a_slant_speculation_lost_with_its_tasks_is_taken_again_from_the_model_of_the_steps_that_stood(data):
    X, y, held = data
    reference = fit_csvc(LocalEngine(X[~held], y[~held]), C=3.0, kernel=KERNEL)
    engine = _EngineLosingItsTasks(X, y, n_partitions=2, lost_at=3, validation=held)
    disturbed = fit_slant(engine, reference, candidates_per_class=4)
    undisturbed = fit_slant(LocalEngine(X, y, n_partitions=2, validation=held), reference, candidates_per_class=4)
    assert disturbed.metadata["steps"] == undisturbed.metadata["steps"]
    assert engine.lost_in == "slant_round"
    record, expected = disturbed.metadata["validation"], undisturbed.metadata["validation"]
    assert record["error"] == expected["error"] and record["kept_size"] == expected["kept_size"]
    # the rebuilt partitions sum the model's terms (``kernel_times``), not its steps one by one: the same losses
    # to rounding
    np.testing.assert_allclose(record["loss"], expected["loss"], rtol=1e-12)


def test_ebsvm_scores_its_checkpoints_and_returns_the_chosen_one(data):
    X, y, held = data
    args = dict(budget=20, lam=1e-3, kernel=KERNEL, epochs=2, batch_size=64, checkpoints=4, seed=3)
    end = fit_ebsvm(LocalEngine(X, y, n_partitions=2, validation=held), **args)
    record = end.metadata["validation"]
    assert len(record["steps"]) == 4 and record["steps"][-1] == 2 * (~held).sum()
    assert record["error"][-1] == pytest.approx(_error(end, X[held], y[held]), abs=1e-12)
    plain = fit_ebsvm(LocalEngine(X, y, n_partitions=2, validation=held), **dict(args, checkpoints=None))
    np.testing.assert_array_equal(plain.coef, end.coef)  # the checkpoints do not change the fit
    best = fit_ebsvm(LocalEngine(X, y, n_partitions=2, validation=held), select="best", **args)
    kept = best.metadata["validation"]["kept_index"]
    assert kept == int(np.argmin(record["error"]))
    assert _error(best, X[held], y[held]) == pytest.approx(record["error"][kept], abs=1e-12)
