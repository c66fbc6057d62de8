"""The report's record of the validation path and of the grid (from the model's training metadata)."""

import numpy as np

from core.engine import LocalEngine
from core.grid import fit_grid
from core.kernels import KernelSpec
from core.spsvm import fit_spsvm
from core.synthetic import make_rings
from spark_bsvm.app.report import validation_record
from spark_bsvm.ml.model import BSVMModel


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
