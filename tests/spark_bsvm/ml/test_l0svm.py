"""L0SVM on Spark: the same model as LocalEngine for the same seed, the estimator, save/load."""

import numpy as np
import pytest
from chispa import assert_df_equality

from core.engine import LocalEngine
from core.kernels import KernelSpec
from core.l0svm import fit_l0svm
from spark_bsvm import BSVMModel, L0SVM
from spark_bsvm.engine import SparkEngine
from tests.conftest import rings_frame

pytestmark = pytest.mark.spark
KERNEL = KernelSpec("rbf", gamma=0.5)


@pytest.fixture(scope="module")
def data(spark):
    return rings_frame(spark, 150, seed=13)


def _fit(engine):
    return fit_l0svm(engine, C_xi=1.0, C_alpha=0.2, kernel=KERNEL, initial="random", m0=50, seed=4, max_outer=5,
                     working_set_size=32)


@pytest.fixture(scope="module")
def local(data):
    X, labels, _ = data
    return _fit(LocalEngine(X, labels, n_partitions=2))


def test_spark_fit_equals_local_fit(data, local):
    with SparkEngine(data[2], num_partitions=2) as engine:
        on_spark = _fit(engine)
    assert on_spark.metadata["support_sizes"][0] == 50 and on_spark.metadata["support_sizes"][-1] < 50
    assert on_spark.metadata["support_sizes"] == local.metadata["support_sizes"]
    assert on_spark.metadata["rounds"] == local.metadata["rounds"]
    np.testing.assert_array_equal(on_spark.support_vectors, local.support_vectors)
    np.testing.assert_allclose(on_spark.coef, local.coef, rtol=0, atol=1e-9)
    assert on_spark.bias == pytest.approx(local.bias, abs=1e-9)


def test_estimator_fits_and_round_trips(data, local, tmp_path):
    df = data[2]
    estimator = L0SVM(C=1.0, CAlpha=0.2, gamma=0.5, initialSize=50, seed=4, maxOuterIter=5, workingSetSize=32,
                      numPartitions=2)
    model = estimator.fit(df)
    np.testing.assert_allclose(model.expansion.coef, local.coef, rtol=0, atol=1e-9)
    assert model.trainingSummary["method"] == "l0svm" and model.trainingSummary["params"]["tol"] == 1e-6
    path = str(tmp_path / "l0")
    model.write().overwrite().save(path)
    loaded = BSVMModel.load(path)
    assert loaded.trainingSummary["support_sizes"] == model.trainingSummary["support_sizes"]
    assert_df_equality(loaded.transform(df), model.transform(df))
    assert "C_alpha: weight of the reweighted penalty" in estimator.explainParams()


@pytest.mark.parametrize("estimator, message", [
    (L0SVM(CAlpha=-1.0), "CAlpha must be a positive finite number, got -1.0"),
    (L0SVM(maxOuterIter=0), "maxOuterIter must be an integer >= 1, got 0"),
    (L0SVM(margin="l1"), r"margin must be one of \('kernel', 'identity'\), got 'l1'"),
    (L0SVM(initialSet="first"), r"initialSet must be one of \('random', 'all'\), got 'first'"),
])
def test_bad_params_are_named(data, estimator, message):
    with pytest.raises(ValueError, match=message):
        estimator.fit(data[2])
