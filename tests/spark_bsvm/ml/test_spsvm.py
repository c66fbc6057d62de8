"""SpSVM-2 on Spark: the same model as LocalEngine, the estimator's params, persistence."""

import numpy as np
import pytest
from chispa import assert_df_equality

from core.engine import LocalEngine
from core.kernels import KernelSpec
from core.spsvm import fit_spsvm
from spark_bsvm import BSVMModel, SpSVM
from spark_bsvm.engine import SparkEngine
from tests.conftest import rings_frame

pytestmark = pytest.mark.spark
KERNEL = KernelSpec("rbf", gamma=0.5)


@pytest.fixture(scope="module")
def data(spark):
    return rings_frame(spark, 400, seed=17)


def _same_model(a, b):
    np.testing.assert_array_equal(a.support_vectors, b.support_vectors)  # same basis, same order
    np.testing.assert_allclose(a.coef, b.coef, rtol=0, atol=1e-10)
    assert a.bias == pytest.approx(b.bias, abs=1e-10)
    np.testing.assert_allclose(a.metadata["path"]["objective"], b.metadata["path"]["objective"], rtol=1e-12)


@pytest.mark.parametrize("selection", ["method2", "method1"])
def test_spark_fit_equals_local_fit(data, selection):
    X, labels, df = data
    args = dict(max_basis=12 if selection == "method2" else 4, lam=0.1, kernel=KERNEL, kappa=5, seed=3,
                selection=selection)
    with SparkEngine(df, num_partitions=2) as engine:
        on_spark = fit_spsvm(engine, **args)
    local = fit_spsvm(LocalEngine(X, labels, n_partitions=2), **args)
    _same_model(on_spark, local)


def test_estimator_fits_the_core_model_and_round_trips(data, tmp_path):
    X, labels, df = data
    estimator = SpSVM(maxBasis=15, regParam=0.1, gamma=0.5, kappa=5, seed=3, numPartitions=2)
    model = estimator.fit(df)
    local = fit_spsvm(LocalEngine(X, labels, n_partitions=2), max_basis=15, lam=0.1, kernel=KERNEL, kappa=5,
                      seed=3, tol=1e-6)
    _same_model(model.expansion, local)
    assert model.numSupportVectors == 15 and model.trainingSummary["method"] == "spsvm"
    assert np.mean(model.expansion.predict(X) == labels) > 0.75
    path = str(tmp_path / "model")
    model.write().overwrite().save(path)
    loaded = BSVMModel.load(path)
    assert_df_equality(loaded.transform(df), model.transform(df))
    assert loaded.trainingSummary["path"] == model.trainingSummary["path"]
    estimator.write().overwrite().save(str(tmp_path / "estimator"))
    again = SpSVM.load(str(tmp_path / "estimator"))
    assert (again.getMaxBasis(), again.getRegParam(), again.getOrDefault("kappa")) == (15, 0.1, 5)


def test_initial_model_path_warm_starts_from_a_saved_model_or_pipeline(data, tmp_path):
    from pyspark.ml import PipelineModel

    X, labels, df = data
    earlier = SpSVM(maxBasis=6, regParam=0.1, gamma=0.5, kappa=5, seed=1, numPartitions=2).fit(df)
    earlier.write().save(str(tmp_path / "alone"))
    PipelineModel(stages=[earlier]).write().save(str(tmp_path / "pipeline"))
    local = fit_spsvm(LocalEngine(X, labels, n_partitions=2), max_basis=10, lam=0.1, kernel=KERNEL, kappa=5,
                      seed=3, initial_basis=earlier.expansion.support_vectors)
    for path in ("alone", "pipeline"):
        model = SpSVM(maxBasis=10, regParam=0.1, gamma=0.5, kappa=5, seed=3, numPartitions=2,
                      initialModelPath=str(tmp_path / path)).fit(df)
        _same_model(model.expansion, local)
        np.testing.assert_array_equal(model.expansion.support_vectors[:6], earlier.expansion.support_vectors)
    with pytest.raises(ValueError, match=r"ending in one\) at initialModelPath='/nonexistent'"):
        SpSVM(initialModelPath="/nonexistent").fit(df)
    narrow = BSVMModel(fit_spsvm(LocalEngine(X[:, :1], labels), max_basis=3, lam=0.1, kernel=KERNEL))
    narrow.write().save(str(tmp_path / "narrow"))
    with pytest.raises(ValueError, match="the model at initialModelPath has 1 features but the data has 4"):
        SpSVM(initialModelPath=str(tmp_path / "narrow"), numPartitions=2).fit(df)


def test_bad_params_are_explained(data):
    with pytest.raises(ValueError, match="regParam must be a positive finite number"):
        SpSVM(regParam=0.0, numPartitions=2).fit(data[2])


def test_a_task_lost_mid_fit_rebuilds_and_ends_with_the_same_model(data, tmp_path):
    # the core tests lose the state in each kind of round; this one loses a real Spark task
    X, labels, df = data
    marker = tmp_path / "fault-injected"
    args = dict(max_basis=12, lam=0.1, kernel=KERNEL, kappa=5, seed=3)
    with SparkEngine(df, num_partitions=2, fault_injection={"round": 40, "marker": str(marker)}) as engine:
        disturbed = fit_spsvm(engine, **args)
    assert marker.exists()  # the fault really happened
    undisturbed = fit_spsvm(LocalEngine(X, labels, n_partitions=2), **args)
    # rebuilt outputs C beta differ from the incremental ones by rounding only
    np.testing.assert_array_equal(disturbed.support_vectors, undisturbed.support_vectors)
    np.testing.assert_allclose(disturbed.coef, undisturbed.coef, rtol=0, atol=1e-8)
