"""The error-vs-support plot's curves per method: the training path where the fit recorded one, pruning only
where it means something, the final model always; the record of the validation path and of a grid (in-process
models, no JVM)."""

import numpy as np
import pytest

from core.engine import LocalEngine
from core.grid import fit_grid
from core.kernels import KernelSpec
from core.spsvm import fit_spsvm, truncate
from core.svc import fit_budget_svm
from core.synthetic import make_rings
from spark_bsvm.app.report import CURVES, PRUNABLE_METHODS, error_vs_support, validation_record
from spark_bsvm.ml.model import BSVMModel

KERNEL = KernelSpec("rbf", gamma=0.1)


@pytest.fixture(scope="module")
def rings():
    X, y = make_rings(600, 4, seed=1)
    return X[:400], y[:400], X[400:], y[400:]


def _error(model, X, y):
    return float(np.mean(model.predict(X) != y))


def test_spsvm_plots_its_training_path_and_no_pruning_curve(rings, tmp_path):
    X, y, Xt, yt = rings
    model = fit_spsvm(LocalEngine(X, y, n_partitions=2), max_basis=12, lam=0.1, kernel=KERNEL)
    curve = error_vs_support(model, Xt, yt, str(tmp_path / "spsvm.png"))
    assert "spsvm" not in PRUNABLE_METHODS and curve["pruned"] == []
    # every point of the path is the error of the stage-d model the fit passed through
    assert [s for s, _ in curve["recorded"]] == list(range(1, 13))
    for d, error in curve["recorded"]:
        assert error == pytest.approx(_error(truncate(model, d), Xt, yt), abs=1e-12)
    assert curve["model"] == [(12, pytest.approx(_error(model, Xt, yt), abs=1e-12))]
    assert curve["recorded"][-1][1] == pytest.approx(curve["model"][0][1], abs=1e-12)
    assert curve["note"] is not None or (tmp_path / "spsvm.png").read_bytes()[:4] == b"\x89PNG"


def test_a_budget_svm_plots_its_pruning_curve_and_records_no_path(rings, tmp_path):
    X, y, Xt, yt = rings
    model = fit_budget_svm(LocalEngine(X, y, n_partitions=2), budget=20, C=1.0, norm="l1", kernel=KERNEL)
    curve = error_vs_support(model, Xt, yt, str(tmp_path / "budget.png"))
    assert curve["recorded"] == []
    sizes = [s for s, _ in curve["pruned"]]
    assert sizes == sorted(sizes) and sizes[0] == 1 and sizes[-1] == model.n_support
    for s, error in curve["pruned"]:
        assert error == pytest.approx(_error(model.pruned(s), Xt, yt), abs=1e-12)
    assert curve["pruned"][-1][1] == pytest.approx(curve["model"][0][1], abs=1e-12)
    assert CURVES["pruned"][0].startswith("pruned: ")  # the legend says it is a pruned model, not a trained one


def test_the_report_records_the_validation_path_and_every_setting_of_a_grid():
    X, y = make_rings(300, 4, noise=0.1, seed=2)
    held = np.random.default_rng(0).random(len(y)) < 0.25
    settings = [{"lam": lam, "kernel": KernelSpec("rbf", gamma=0.5)} for lam in (0.01, 1.0)]
    model = fit_grid(LocalEngine(X, y, validation=held), function=fit_spsvm, settings=settings, max_basis=8, kappa=3)
    record = validation_record(BSVMModel(model))
    path = model.metadata["validation"]
    assert record["by_support_size"] == list(zip(path["sizes"], path["error"]))
    assert (record["kept_size"], record["kept_error"], record["select"]) == (path["kept_size"], path["kept_error"],
                                                                             "best")
    assert [row["regParam"] for row in record["grid"]] == [0.01, 1.0]
    assert sum(row["chosen"] for row in record["grid"]) == 1
    assert validation_record(BSVMModel(fit_spsvm(LocalEngine(X, y), max_basis=3, lam=0.1,
                                                 kernel=KernelSpec("rbf", gamma=0.5)))) is None


def test_the_plot_draws_the_validation_path_beside_the_test_path(tmp_path):
    X, y = make_rings(500, 4, noise=0.1, seed=3)
    held = np.random.default_rng(1).random(400) < 0.25
    model = fit_spsvm(LocalEngine(X[:400], y[:400], validation=held), max_basis=10, lam=0.1, kernel=KERNEL)
    curve = error_vs_support(model, X[400:], y[400:], str(tmp_path / "validation.png"))
    path = model.metadata["validation"]
    assert curve["validation"] == list(zip(path["sizes"], path["error"])) and len(curve["validation"]) >= 10
    assert [s for s, _ in curve["recorded"]][:10] == [s for s, _ in curve["validation"]][:10]
    assert "validation error" in CURVES["validation"][0] and "test error" in CURVES["recorded"][0]
    assert error_vs_support(fit_spsvm(LocalEngine(X, y), max_basis=3, lam=0.1, kernel=KERNEL), X, y,
                            str(tmp_path / "none.png"))["validation"] == []
