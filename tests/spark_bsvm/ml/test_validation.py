"""Validation inside the fit on Spark: the same paths and kept models as LocalEngine, the grid in one stage
equal to separate fits, in a Pipeline and through save/load, the slant sparsifier's eta grid equal to the local
one, and the errors for bad params."""

import numpy as np
import pytest
from pyspark.ml import Pipeline, PipelineModel

from core.ebsvm import fit_ebsvm
from core.engine import LocalEngine
from core.grid import fit_grid
from core.kernels import KernelSpec
from core.slant import fit_slant
from core.spsvm import fit_spsvm, truncate
from core.svc import fit_csvc
from core.synthetic import make_rings
from spark_bsvm import BSVMModel, ElasticBudgetSVM, SlantSparsifier, SpSVM
from spark_bsvm.engine.blocks import ColumnError
from tests.conftest import rows_frame

pytestmark = pytest.mark.spark
KERNEL = KernelSpec("rbf", gamma=0.5)


@pytest.fixture(scope="module")
def data(spark):
    """Rings with a validation indicator, in two contiguous partitions (LocalEngine's blocks)."""
    from pyspark.ml.linalg import Vectors

    X, y = make_rings(400, 4, noise=0.1, seed=21)
    held = np.random.default_rng(3).random(len(y)) < 0.25
    labels = np.where(y > 0, 1.0, 0.0)
    rows = [(Vectors.dense(x), float(l), bool(h), float(h)) for x, l, h in zip(X, labels, held)]
    df = rows_frame(spark, rows, {"features": "vector", "label": "double", "held": "boolean",
                                  "held_number": "double"})
    return X, labels, held, df


@pytest.fixture(scope="module")
def reference(data, tmp_path_factory):
    """A C-SVC on the training rows and the path it is saved at, for the slant sparsifier."""
    X, labels, held, _ = data
    reference = fit_csvc(LocalEngine(X[~held], labels[~held]), C=3.0, kernel=KERNEL)
    path = str(tmp_path_factory.mktemp("validation") / "reference")
    BSVMModel(reference).write().save(path)
    return reference, path


def _local(X, labels, held):
    return LocalEngine(X, labels, n_partitions=2, validation=held)


@pytest.mark.parametrize("mode", ["driver", "executor"])
def test_spsvm_on_spark_records_and_keeps_what_local_does(data, mode):
    X, labels, held, df = data
    model = SpSVM(maxBasis=12, regParam=0.1, gamma=0.5, kappa=4, seed=2, numPartitions=2, coordinatorMode=mode,
                  validationIndicatorCol="held", selectSupportSize="best").fit(df)
    local = fit_spsvm(_local(X, labels, held), max_basis=12, lam=0.1, kernel=KERNEL, kappa=4, seed=2, select="best")
    record = model.trainingSummary["validation"]
    np.testing.assert_allclose(record["error"], local.metadata["validation"]["error"], rtol=0, atol=1e-12)
    assert model.numSupportVectors == record["kept_size"] == local.n_support
    np.testing.assert_allclose(model.expansion.coef, local.coef, rtol=0, atol=1e-10)
    assert model.summary.validationErrorBySupportSize == list(zip(record["sizes"], record["error"]))
    y = np.where(labels > 0, 1.0, -1.0)
    full = fit_spsvm(_local(X, labels, held), max_basis=12, lam=0.1, kernel=KERNEL, kappa=4, seed=2)
    afterwards = [np.mean(np.sign(truncate(full, d).decision_function(X[held])) != y[held]) for d in record["sizes"]]
    np.testing.assert_allclose(record["error"], afterwards, rtol=0, atol=1e-12)


def test_slant_and_ebsvm_on_spark_record_what_local_does(data, reference):
    X, labels, held, df = data
    reference, path = reference
    slant = SlantSparsifier(referenceModelPath=path, candidatesPerClass=4, numPartitions=2,
                            validationIndicatorCol="held", selectSupportSize="withinTolerance",
                            selectTolerance=0.01).fit(df)
    local = fit_slant(_local(X, labels, held), reference, candidates_per_class=4, select="withinTolerance",
                      tolerance=0.01)
    assert slant.trainingSummary["validation"] == local.metadata["validation"]
    np.testing.assert_allclose(slant.expansion.coef, local.coef, rtol=0, atol=1e-12)
    ebsvm = ElasticBudgetSVM(budget=15, regParam=1e-3, gamma=0.5, epochs=2, batchSize=50, checkpoints=3, seed=1,
                             numPartitions=2, validationIndicatorCol="held", selectSupportSize="best").fit(df)
    local = fit_ebsvm(_local(X, labels, held), budget=15, lam=1e-3, kernel=KERNEL, epochs=2, batch_size=50,
                      checkpoints=3, seed=1, select="best")
    np.testing.assert_allclose(ebsvm.trainingSummary["validation"]["error"], local.metadata["validation"]["error"],
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(ebsvm.expansion.coef, local.coef, rtol=1e-10, atol=1e-12)


def test_a_grid_is_one_fit_equal_to_separate_fits_and_works_in_a_pipeline(data, tmp_path):
    X, labels, held, df = data
    estimator = SpSVM(maxBasis=10, kappa=4, seed=2, numPartitions=2, validationIndicatorCol="held",
                      selectSupportSize="best", gammaGrid=[0.1, 2.0], regParamGrid=[0.01, 1.0])
    model = Pipeline(stages=[estimator]).fit(df).stages[-1]
    table = model.summary.validationGrid
    assert [(row["gamma"], row["regParam"]) for row in table] == [(0.1, 0.01), (0.1, 1.0), (2.0, 0.01), (2.0, 1.0)]
    separate = [fit_spsvm(_local(X, labels, held), max_basis=10, lam=r, kernel=KernelSpec("rbf", gamma=g), kappa=4,
                          seed=2, select="best") for g in (0.1, 2.0) for r in (0.01, 1.0)]
    for row, alone in zip(table, separate):
        np.testing.assert_allclose(row["error"], alone.metadata["validation"]["error"], rtol=0, atol=1e-12)
    chosen = int(np.argmin([m.metadata["validation"]["kept_error"] for m in separate]))
    assert [row["chosen"] for row in table] == [k == chosen for k in range(4)]
    np.testing.assert_allclose(model.expansion.coef, separate[chosen].coef, rtol=0, atol=1e-10)
    assert (model.getGamma(), model.getRegParam()) == (table[chosen]["gamma"], table[chosen]["regParam"])
    assert model.trainingSummary["params"]["gamma"] == table[chosen]["gamma"]
    PipelineModel(stages=[model]).write().save(str(tmp_path / "pipeline"))
    loaded = PipelineModel.load(str(tmp_path / "pipeline")).stages[-1]
    assert loaded.trainingSummary["grid"] == model.trainingSummary["grid"]
    assert (loaded.getGamma(), loaded.getRegParam()) == (model.getGamma(), model.getRegParam())


@pytest.mark.parametrize("mode", ["driver", "executor"])
def test_an_eta_grid_on_spark_is_the_local_grid_and_the_model_has_its_eta(data, reference, tmp_path, mode):
    X, labels, held, df = data
    reference, path = reference
    etas = [0.25, 1.0, 2.0]
    model = SlantSparsifier(referenceModelPath=path, candidatesPerClass=4, maxSupport=15, numPartitions=2,
                            coordinatorMode=mode, validationIndicatorCol="held", etaGrid=etas).fit(df)
    local = fit_grid(_local(X, labels, held), function=fit_slant, settings=[{"eta": eta} for eta in etas],
                     reference=reference, candidates_per_class=4, max_support=15, max_steps=100000, select="end")
    table, expected = model.summary.validationGrid, local.metadata["grid"]
    assert [row["eta"] for row in table] == etas and not {"gamma", "regParam"} & set(table[0])
    for row, alone in zip(table, expected["settings"]):
        assert (row["sizes"], row["keptSize"]) == (alone["sizes"], alone["kept_size"])
        np.testing.assert_allclose(row["error"], alone["error"], rtol=0, atol=1e-12)
    assert [row["chosen"] for row in table] == [k == expected["chosen"] for k in range(3)]
    chosen = etas[expected["chosen"]]
    assert len({row["keptError"] for row in table}) > 1  # the step sizes differ: choosing means something
    np.testing.assert_allclose(model.expansion.coef, local.coef, rtol=0, atol=1e-12)
    assert model.getEta() == model.trainingSummary["params"]["eta"] == model.expansion.metadata["eta"] == chosen
    model.write().save(str(tmp_path / "model"))
    loaded = BSVMModel.load(str(tmp_path / "model"))
    assert (loaded.getEta(), loaded.getEtaGrid()) == (chosen, etas)
    assert loaded.trainingSummary["grid"] == model.trainingSummary["grid"]


def test_a_validation_fraction_holds_out_about_that_share(data):
    *_, df = data
    model = SpSVM(maxBasis=5, regParam=0.1, gamma=0.5, numPartitions=2, validationFraction=0.3, seed=4).fit(df)
    assert len(model.summary.validationErrorBySupportSize) == 5
    assert 0.2 * 400 < 400 - model.trainingSummary["n_train"] < 0.4 * 400


@pytest.mark.parametrize("params, error, message", [
    ({"validationFraction": 1.0}, ValueError, r"validationFraction must be in \[0, 1\), got 1.0"),
    ({"validationIndicatorCol": "nope"}, ColumnError, "the validationIndicator column 'nope' does not exist"),
    ({"validationIndicatorCol": "held_number"}, ColumnError, "'held_number' has type double, not boolean"),
    ({"validationIndicatorCol": "held", "validationFraction": 0.2}, ValueError, "both validationIndicatorCol"),
    ({"selectSupportSize": "best"}, ValueError, "no rows are held out for it: set validationFraction"),
    ({"gammaGrid": [0.5, 1.0]}, ValueError, "gammaGrid / regParamGrid choose their setting by the validation"),
    ({"gammaGrid": [0.5, -1.0], "validationFraction": 0.2}, ValueError, "gammaGrid must hold positive finite "
                                                                        "numbers only, got -1.0"),
    ({"selectSupportSize": "smallest"}, ValueError, "selectSupportSize must be one of"),
    ({"kernel": "linear", "gammaGrid": [0.5, 1.0], "validationFraction": 0.2}, ValueError,
     r"gammaGrid=\[0.5, 1.0\] tries kernel gammas, and kernel='linear' has none: every setting would fit the same "
     "model"),
])
def test_bad_validation_params_are_refused_before_any_spark_job(data, params, error, message):
    *_, df = data
    with pytest.raises(error, match=message):
        SpSVM(numPartitions=2, **params).fit(df)


def test_null_validation_flags_are_named(spark, data):
    from pyspark.sql import functions as F

    *_, df = data
    with_nulls = df.withColumn("held", F.when(F.col("held_number") > 0, F.lit(None)).otherwise(F.col("held")))
    with pytest.raises(ValueError, match=r"the validation indicator column has \d+ null value\(s\)"):
        SpSVM(numPartitions=2, validationIndicatorCol="held").fit(with_nulls)


def test_holding_out_every_row_of_a_label_is_named_on_both_engines(spark, data):
    """The training rows would hold one label: a constant model, 'converged', without this check."""
    from pyspark.sql import functions as F

    X, labels, _, df = data
    message = r"every row of label 1.0 is held out for validation, so the training rows hold one label only"
    with pytest.raises(ValueError, match=message):
        LocalEngine(X, labels, validation=labels > 0)
    with pytest.raises(ValueError, match=message):
        SpSVM(numPartitions=2, validationIndicatorCol="held").fit(df.withColumn("held", F.col("label") > 0))
