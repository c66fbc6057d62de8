"""Every estimator and a Pipeline under Spark Connect (pyspark's local Connect server): fit gives the
LocalEngine model, save, load and transform work.  These tests run after all others (tests/conftest.py)."""

import logging

import numpy as np
import pytest
from pyspark.ml import Pipeline, PipelineModel
from pyspark.ml.feature import VectorAssembler
from pyspark.ml.functions import vector_to_array

from core.engine import LocalEngine
from core.kernels import KernelSpec
from core.spsvm import fit_spsvm
from core.svc import fit_csvc
from core.synthetic import make_rings
from spark_bsvm import CSVC, BSVMModel, BudgetSVM, ElasticBudgetSVM, L0SVM, SlantSparsifier, SpSVM
from tests.conftest import contiguous_frame

pytestmark = pytest.mark.spark

ESTIMATORS = {
    "csvc": lambda path: CSVC(C=1.0, gamma=0.5, workingSetSize=32),
    "budget_l1": lambda path: BudgetSVM(budget=20, C=1.0, gamma=0.5, workingSetSize=32),
    "spsvm": lambda path: SpSVM(maxBasis=8, regParam=0.1, gamma=0.5, kappa=5, seed=3),
    "ebsvm": lambda path: ElasticBudgetSVM(budget=15, regParam=1e-3, gamma=0.5, batchSize=50, seed=7),
    "l0svm": lambda path: L0SVM(gamma=0.5, initialSize=30, maxOuterIter=3, workingSetSize=32, seed=4),
    "slant": lambda path: SlantSparsifier(referenceModelPath=path, maxSupport=8, candidatesPerClass=8),
}


@pytest.fixture(scope="module")
def rings():
    X, y = make_rings(160, 4, seed=31)
    return X, np.where(y > 0, 1.0, 0.0)


@pytest.fixture(scope="module")
def frame(connect_spark, rings):
    return contiguous_frame(connect_spark, *rings)


@pytest.fixture(scope="module")
def reference_path(frame, tmp_path_factory):
    """A C-SVC saved under Connect: the slant sparsifier's reference."""
    path = str(tmp_path_factory.mktemp("connect") / "reference")
    ESTIMATORS["csvc"](None).setNumPartitions(2).fit(frame).write().save(path)
    return path


def _decisions(model, frame):
    scored = model.transform(frame).select(vector_to_array("rawPrediction")[1].alias("f"), "prediction")
    return [(row.f, row.prediction) for row in scored.collect()]


@pytest.mark.parametrize("method", sorted(ESTIMATORS))
def test_fit_save_load_transform_under_connect(connect_spark, rings, frame, reference_path, method, tmp_path):
    X, labels = rings
    estimator = ESTIMATORS[method](reference_path).setNumPartitions(2)
    model = estimator.fit(frame)
    local = estimator.core.function(LocalEngine(X, labels, n_partitions=2), **estimator.core_arguments(),
                                    **estimator._driver_inputs())
    np.testing.assert_array_equal(model.expansion.support_vectors, local.support_vectors)
    np.testing.assert_allclose(model.expansion.coef, local.coef, rtol=0, atol=1e-9)
    path = str(tmp_path / method)
    model.write().save(path)
    with pytest.raises(FileExistsError, match=r"write\(\)\.overwrite\(\)"):  # says how, as on a classic session
        model.write().save(path)
    model.write().overwrite().save(path)  # overwriting goes through Connect's ML helper, not the JVM
    estimator.write().save(path + "-estimator")
    estimator.copy({estimator.seed: 7}).write().overwrite().save(path + "-estimator")  # the estimator's too
    assert type(estimator).load(path + "-estimator").getSeed() == 7
    loaded = BSVMModel.load(path)
    assert type(loaded) is type(model) and loaded.uid == model.uid
    decisions = _decisions(loaded, frame)
    np.testing.assert_allclose([f for f, _ in decisions], local.decision_function(X), rtol=0, atol=1e-9)
    assert [p for _, p in decisions] == [p for _, p in _decisions(model, frame)]


def test_a_pipeline_fits_saves_loads_and_transforms_under_connect(connect_spark, rings, tmp_path):
    X, labels = rings
    columns = connect_spark.createDataFrame([(*map(float, x), float(label)) for x, label in zip(X, labels)],
                                            ["a", "b", "c", "d", "label"])
    pipeline = Pipeline(stages=[VectorAssembler(inputCols=["a", "b", "c", "d"], outputCol="features"),
                                CSVC(C=1.0, gamma=0.5, numPartitions=2)])
    fitted = pipeline.fit(columns)
    path = str(tmp_path / "pipeline")
    fitted.write().overwrite().save(path)
    loaded = PipelineModel.load(path)
    assert isinstance(loaded.stages[-1], BSVMModel)
    expected = loaded.stages[-1].expansion.decision_function(X)
    got = loaded.transform(columns).select(vector_to_array("rawPrediction")[1].alias("f")).collect()
    np.testing.assert_allclose(sorted(row.f for row in got), sorted(expected), rtol=0, atol=1e-9)
    assert loaded.stages[-1].numSupportVectors == fitted.stages[-1].numSupportVectors


def test_local_rows_fit_in_fewer_tasks_than_their_partitions_under_connect(connect_spark, rings):
    """``createDataFrame`` of local rows (a local relation, read in 2 partitions) fitted in 1 task: the checks'
    job counted every row as partition 0's (Spark's optimizer computes a projection of a local relation on the
    driver), so the rows were not dealt into 1 partition, and the barrier stage of 2 tasks failed its
    coordinator's count of 1 after 15 restarts."""
    from pyspark.ml.linalg import Vectors

    X, labels = rings
    frame = connect_spark.createDataFrame([(Vectors.dense(x), float(label)) for x, label in zip(X, labels)],
                                          ["features", "label"])
    model = CSVC(C=1.0, gamma=0.5, numPartitions=1, maxStageRestarts=0).fit(frame)
    local = fit_csvc(LocalEngine(X, labels, n_partitions=1), C=1.0, kernel=KernelSpec("rbf", gamma=0.5))
    np.testing.assert_allclose(model.expansion.decision_function(X), local.decision_function(X), atol=1e-2)


def test_empty_partitions_after_the_last_row_are_dealt_away_under_connect(connect_spark, rings):
    """[80, 80, 0] for 2 tasks: the checks' job finds partitions 0 and 1 even (no row names partition 2), and
    counts the 3 partitions it read: the rows are dealt into 2.  Read as they were, the barrier stage needed 3
    task slots of local[2]'s 2, and Spark checked its slots every 15 s for 10 minutes before it failed the
    fit (621 s)."""
    X, labels = rings
    frame = contiguous_frame(connect_spark, X, labels, sizes=[80, 80, 0])
    model = CSVC(C=1.0, gamma=0.5, tol=1e-6, numPartitions=2, maxStageRestarts=0).fit(frame)
    local = fit_csvc(LocalEngine(X, labels, n_partitions=2), C=1.0, kernel=KernelSpec("rbf", gamma=0.5), tol=1e-6)
    np.testing.assert_allclose(model.expansion.decision_function(X), local.decision_function(X), atol=1e-3)


def test_bad_vectors_are_named_under_connect(connect_spark):
    """The checks' job names a null vector, a NaN value and mis-sized vectors under Connect as on a classic
    session."""
    from pyspark.ml.linalg import Vectors

    from tests.spark_bsvm.ml.test_bad_input import SIZES, VALUES, VECTOR

    good = [(Vectors.dense([0.0, 1.0]), 0.0), (Vectors.dense([1.0, 0.0]), 1.0)]
    cases = [((None, 1.0), r"features column 'features' has 1 null value\(s\); drop or impute those rows"),
             ((Vectors.dense([float("nan"), 1.0]), 1.0), VALUES),
             ((Vectors.dense([1.0, 2.0, 3.0]), 1.0), SIZES.format(2, 3))]
    for bad, message in cases:
        df = connect_spark.createDataFrame(good + [bad], VECTOR).coalesce(1)
        with pytest.raises(ValueError, match=f"^{message}$"):
            CSVC(C=1.0, gamma=0.5).fit(df)


def test_gamma_scale_leaves_the_validation_rows_out_under_connect(connect_spark, rings, frame):
    """The checks' Spark job groups the rows by validation mark under Connect too: gamma="scale" is that of
    the training rows alone, and the fit is the local one."""
    X, labels = rings
    held = X[:, 0] > 0.5
    marked = frame.withColumn("held", vector_to_array("features")[0] > 0.5)
    model = SpSVM(maxBasis=5, regParam=0.1, kappa=4, seed=2, numPartitions=2,
                  validationIndicatorCol="held").fit(marked)
    local = fit_spsvm(LocalEngine(X, labels, n_partitions=2, validation=held), max_basis=5, lam=0.1,
                      kernel=KernelSpec(gamma="scale"), kappa=4, seed=2)
    assert model.getGamma() == pytest.approx(LocalEngine(X[~held], labels[~held]).scale_gamma, rel=1e-11)
    np.testing.assert_allclose(model.expansion.coef, local.coef, rtol=0, atol=1e-9)


def test_a_coalesced_frame_is_dealt_again_under_connect(connect_spark, rings, frame, caplog):
    """Spark refuses a barrier stage over a coalesce under Connect too (its error reaches the client by
    name); the fit deals the coalesced partitions again and gives the model of them repartitioned by hand
    (checkpointed first: Spark's optimizer would drop a coalesce below a repartition)."""
    estimator = CSVC(C=1.0, gamma=0.5, workingSetSize=32, numPartitions=2)
    coalesced = frame.repartition(4).coalesce(2)
    with caplog.at_level(logging.INFO, logger="spark_bsvm.progress"):
        model = estimator.fit(coalesced)
    assert "Spark refused a barrier stage over merged partitions" in caplog.text
    reference = estimator.fit(coalesced.localCheckpoint().repartition(2))
    np.testing.assert_array_equal(model.expansion.support_vectors, reference.expansion.support_vectors)
    np.testing.assert_allclose(model.expansion.coef, reference.expansion.coef, rtol=0, atol=1e-9)


def test_the_driver_coordinator_is_refused_under_connect_before_any_job(connect_spark, frame):
    """The driver's coordinator follows its stage through the SparkContext, which a Connect client has not: the
    fit says so before its first job (over rows that fail when read), for fit and the tuners' fitMultiple."""
    def unreadable(batches):
        raise RuntimeError("a Spark job read the rows")
        yield  # noqa: unreachable -- a generator, as mapInArrow wants

    rows = frame.mapInArrow(unreadable, frame.schema)
    estimator = CSVC(C=1.0, gamma=0.5, calibrationFraction=0.2, coordinatorMode="driver")
    message = r"^coordinatorMode='driver' runs the solver beside a classic session's SparkContext.*'executor' or 'auto'"
    with pytest.raises(ValueError, match=message):
        estimator.fit(rows)
    with pytest.raises(ValueError, match=message):
        estimator.fitMultiple(rows, [{estimator.C: 2.0}, {estimator.C: 4.0}])
