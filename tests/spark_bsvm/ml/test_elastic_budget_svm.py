"""Elastic budget SVM on Spark: same seed, same model as LocalEngine; a lost task; the estimator."""

import numpy as np
import pytest
from chispa import assert_df_equality

from core.ebsvm import fit_ebsvm
from core.engine import LocalEngine
from core.kernels import KernelSpec
from core.synthetic import make_rings
from spark_bsvm import BSVMModel, ElasticBudgetSVM
from spark_bsvm.engine import SparkEngine
from tests.conftest import to_df

pytestmark = pytest.mark.spark
FIT = dict(budget=25, lam=1e-3, kernel=KernelSpec("rbf", gamma=0.5), epochs=2, batch_size=100, seed=7)


@pytest.fixture(scope="module")
def data():
    X, y = make_rings(600, 4, seed=12)
    return X, np.where(y > 0, 1.0, 0.0)


def _same_model(a, b):
    np.testing.assert_array_equal(a.support_vectors, b.support_vectors)
    np.testing.assert_array_equal(a.coef, b.coef)  # the same steps in the same order: bit for bit
    assert a.metadata["removals"] == b.metadata["removals"] and a.metadata["theta"] == b.metadata["theta"]


@pytest.fixture(scope="module")
def df(spark, data):
    return to_df(spark, *data)


@pytest.fixture(scope="module")
def local_model(data):
    return fit_ebsvm(LocalEngine(*data, n_partitions=2), **FIT)


def test_a_task_lost_mid_fit_rebuilds_its_order_and_gives_the_same_model(df, local_model, tmp_path):
    marker = tmp_path / "fault-injected"
    with SparkEngine(df, num_partitions=2,
                     fault_injection={"round": 5, "marker": str(marker)}) as engine:
        disturbed = fit_ebsvm(engine, **FIT)
    assert marker.exists()
    _same_model(disturbed, local_model)


def test_spark_estimator_fit_equals_the_local_fit_and_round_trips(df, local_model, tmp_path):
    estimator = ElasticBudgetSVM(budget=25, regParam=1e-3, gamma=0.5, epochs=2, batchSize=100, seed=7,
                                 numPartitions=2)
    model = estimator.fit(df)
    _same_model(model.expansion, local_model)  # Spark (local[2], 2 partitions) == LocalEngine
    assert local_model.n_support <= 25 and model.classes == [0.0, 1.0]
    assert model.trainingSummary["params"]["budget"] == 25
    path = str(tmp_path / "ebsvm")
    model.write().overwrite().save(path)
    loaded = BSVMModel.load(path)
    assert_df_equality(loaded.transform(df), model.transform(df))
    assert "theta on |a|" in estimator.explainParams()


@pytest.mark.parametrize("estimator, message", [
    (ElasticBudgetSVM(budget=0), "budget must be an integer >= 1, got 0"),
    (ElasticBudgetSVM(regParam=0.0), "regParam must be a positive finite number, got 0.0"),
    (ElasticBudgetSVM(etaTheta=-1.0), "etaTheta must be a positive finite number, got -1.0"),
    (ElasticBudgetSVM(batchSize=0), "batchSize must be an integer >= 1, got 0"),
    (ElasticBudgetSVM(averageFraction=1.5), r"averageFraction must be in \[0, 1\] \(0: the last iterate\), got 1.5"),
])
def test_bad_params_are_named(df, estimator, message):
    with pytest.raises(ValueError, match=message):
        estimator.fit(df)
