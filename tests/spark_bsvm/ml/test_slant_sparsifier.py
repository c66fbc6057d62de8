"""SlantSparsifier: a Spark fit equals the LocalEngine fit, persistence, the path, bad params."""

import numpy as np
import pytest
from chispa import assert_df_equality

from core.engine import LocalEngine
from core.kernels import KernelSpec
from core.slant import fit_slant, slant_model_at
from core.svc import fit_csvc
from spark_bsvm import BSVMModel, SlantSparsifier
from spark_bsvm.engine import SparkEngine
from tests.conftest import rings_frame

pytestmark = pytest.mark.spark
KERNEL = KernelSpec("rbf", gamma=0.5)


@pytest.fixture(scope="module")
def setup(spark, tmp_path_factory):
    X, labels, df = rings_frame(spark, 300, seed=5)
    reference = fit_csvc(LocalEngine(X, labels), C=3.0, kernel=KERNEL)
    path = str(tmp_path_factory.mktemp("slant") / "reference")
    BSVMModel(reference).write().save(path)
    return X, labels, df, reference, path


def _positions(model):
    where = {i: p for p, i in enumerate(model.support_ids.tolist())}
    return [where[i] for i in model.metadata["steps"]]


@pytest.mark.parametrize("aggressive", [False, True])
def test_spark_fit_equals_local_fit(setup, aggressive):
    X, labels, df, reference, path = setup
    params = dict(eta=0.5, epsilon=0.5, aggressive=aggressive)
    on_spark = SlantSparsifier(referenceModelPath=path, numPartitions=2, candidatesPerClass=16, seed=3,
                               **params).fit(df)
    local = fit_slant(LocalEngine(X, labels, n_partitions=2), reference, candidates_per_class=16, **params)
    sparse = on_spark.expansion
    np.testing.assert_array_equal(sparse.support_vectors, local.support_vectors)  # same order: same path
    np.testing.assert_array_equal(sparse.coef, local.coef)
    assert sparse.bias == local.bias == reference.bias
    # Spark ids are (partition << 40) + row: compare the paths as positions in the support set
    assert _positions(sparse) == _positions(local)
    assert sparse.metadata["rounds"] == local.metadata["rounds"]
    assert (on_spark.getKernel(), on_spark.getGamma()) == ("rbf", 0.5)  # the reference's kernel


def test_a_task_lost_mid_fit_resumes_on_the_same_path(setup, tmp_path):
    X, labels, df, reference, _ = setup
    marker = tmp_path / "fault-injected"
    params = dict(eta=0.5, epsilon=0.5, aggressive=True, candidates_per_class=16)
    with SparkEngine(df, num_partitions=2, fault_injection={"round": 5, "marker": str(marker)}) as engine:
        disturbed = fit_slant(engine, reference, **params)
    assert marker.exists()  # the fault really happened
    undisturbed = fit_slant(LocalEngine(X, labels, n_partitions=2), reference, **params)
    # the rebuilt responses differ from the stepped ones by rounding only: the same path
    assert _positions(disturbed) == _positions(undisturbed)
    np.testing.assert_array_equal(disturbed.support_vectors, undisturbed.support_vectors)
    np.testing.assert_array_equal(disturbed.coef, undisturbed.coef)


def test_save_load_round_trip_keeps_the_path(setup, tmp_path):
    X, labels, df, reference, path = setup
    estimator = SlantSparsifier(referenceModelPath=path, aggressive=True, maxSupport=20, numPartitions=2)
    estimator.write().overwrite().save(str(tmp_path / "estimator"))
    loaded_estimator = SlantSparsifier.load(str(tmp_path / "estimator"))
    assert loaded_estimator.getOrDefault("referenceModelPath") == path
    assert loaded_estimator.getOrDefault("maxSupport") == 20
    model = loaded_estimator.fit(df)
    assert model.numSupportVectors == 20 and model.trainingSummary["stopped"] == "max_support"
    model.write().overwrite().save(str(tmp_path / "model"))
    loaded = BSVMModel.load(str(tmp_path / "model"))
    assert_df_equality(loaded.transform(df), model.transform(df))
    np.testing.assert_array_equal(slant_model_at(loaded.expansion, 10).coef, slant_model_at(model.expansion, 10).coef)


@pytest.mark.parametrize("params, message", [
    ({}, "referenceModelPath is not set: save a fitted BSVMModel"),
    ({"referenceModelPath": "/nonexistent/model"}, r"ending in one\) at referenceModelPath=./nonexistent"),
    ({"referenceModelPath": "x", "maxIter": 0}, "maxIter must be an integer >= 1, got 0"),
])
def test_bad_params_are_named(setup, params, message):
    with pytest.raises(ValueError, match=message):
        SlantSparsifier(numPartitions=2, **params).fit(setup[2])


def test_a_reference_for_other_features_is_refused_with_the_data_checks(spark, setup, tmp_path, caplog):
    """Refused where the data's checks are judged (the training tasks check their rows here): before any block
    is built or round run; the stage has ended, and no task failed."""
    import logging
    import threading

    X, labels, df, _, _ = setup
    narrow = fit_csvc(LocalEngine(X[:, :3], labels), C=3.0, kernel=KERNEL)
    path = str(tmp_path / "narrow")
    BSVMModel(narrow).write().save(path)
    caplog.set_level(logging.INFO)
    with pytest.raises(ValueError, match="the reference model has 3 features but the data has 4"):
        SlantSparsifier(referenceModelPath=path, numPartitions=2).fit(df)
    assert "the training tasks check their rows" in caplog.text and "rounds after the first" not in caplog.text
    assert "starting the training stage again" not in caplog.text
    assert not [t for t in threading.enumerate() if t.name == "spark-bsvm-stage"]
