"""fitMultiple (pyspark.ml's tuners): the models of separate fits, with the data's checks run once for the
param maps that leave the rows alone, and one training stage for them where their fits take every slot."""

import threading

import numpy as np
import pytest
from pyspark.ml.evaluation import BinaryClassificationEvaluator

from spark_bsvm import CSVC, SpSVM
from spark_bsvm.engine import stage
from tests.conftest import logged, rings_frame, to_df

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def train(spark):
    return rings_frame(spark, 300, seed=23)


@pytest.fixture
def checks(monkeypatch):
    """The runs of the data's checks, in their order: a Spark job of checks (``check_training_data``: the
    DataFrame it ran on) or the judgment of the training tasks' own checks (``TrainingData.judge``: "tasks")."""
    runs = []
    checked, judge = stage.check_training_data, stage.TrainingData.judge

    def counted(prepared, *args, **kwargs):
        runs.append(prepared)
        return checked(prepared, *args, **kwargs)

    def judged(self, groups):
        runs.append("tasks")
        return judge(self, groups)

    monkeypatch.setattr(stage, "check_training_data", counted)
    monkeypatch.setattr(stage.TrainingData, "judge", judged)
    return runs


@pytest.fixture
def stages(monkeypatch):
    """A list that grows by one at each training stage a fit runs."""
    runs = []
    run_stage = stage.TrainingData.run_stage

    def counted(self, *args):
        runs.append(self.n_examples)
        return run_stage(self, *args)

    monkeypatch.setattr(stage.TrainingData, "run_stage", counted)
    return runs


def fitted_one_by_one(estimator, df, param_maps):
    return [estimator.fit(df, param_map) for param_map in param_maps]


def assert_same_models(models, expected):
    assert len(models) == len(expected)
    for model, one in zip(models, expected):
        np.testing.assert_array_equal(model.expansion.coef, one.expansion.coef)
        np.testing.assert_array_equal(model.expansion.support_vectors, one.expansion.support_vectors)
        assert model.expansion.bias == one.expansion.bias
        assert model.trainingSummary["params"] == one.trainingSummary["params"]


def test_param_maps_of_the_model_params_share_the_checks_and_one_training_stage(train, checks, stages):
    estimator = CSVC(gamma=0.5, numPartitions=2)  # every slot of local[2, 3]: its fits run one at a time anyway
    param_maps = [{estimator.C: C} for C in (0.1, 1.0, 10.0)]
    expected = fitted_one_by_one(estimator, train[2], param_maps)
    assert len(checks) == len(stages) == 3
    models = estimator.fit(train[2], param_maps)  # pyspark's list form: fitMultiple
    assert len(checks) == len(stages) == 4
    assert checks == ["tasks"] * 4  # the frame's partitions are the tasks': they check their rows, no job does
    assert_same_models(models, expected)
    assert [m.getC() for m in models] == [0.1, 1.0, 10.0]


def test_param_maps_that_choose_other_rows_get_checks_and_stages_of_their_own(spark, checks, stages):
    X, labels, _ = rings_frame(spark, 300, seed=24)
    df = to_df(spark, X, labels, weights=np.where(labels > 0, 2.0, 0.5))
    estimator = CSVC(gamma=0.5, numPartitions=2, seed=5)
    param_maps = [{estimator.C: 1.0}, {estimator.weightCol: "weight"}, {estimator.C: 10.0},
                  {estimator.weightCol: "weight", estimator.C: 10.0}, {estimator.calibrationFraction: 0.2}]
    expected = fitted_one_by_one(estimator, df, param_maps)
    del checks[:], stages[:]
    assert_same_models(estimator.fit(df, param_maps), expected)
    assert len(stages) == 3  # unweighted, weighted, unweighted less the calibration rows
    assert len(checks) == 4  # the same, and every row once more before the calibration rows are split off


def test_a_param_map_that_fails_leaves_the_others_fitting_alone(train, stages):
    estimator = CSVC(gamma=0.5, numPartitions=2)
    expected = estimator.fit(train[2], {estimator.C: 2.0})
    models = estimator.fitMultiple(train[2], [{estimator.C: 2.0}, {estimator.C: -1.0}])
    del stages[:]
    index, model = next(models)  # the shared stage could not start: this param map fits alone
    assert index == 0 and len(stages) == 1
    assert_same_models([model], [expected])
    with pytest.raises(ValueError, match="C must be"):
        next(models)


def test_bad_data_fails_each_param_map_with_the_checks_error(spark):
    from pyspark.ml.linalg import Vectors, VectorUDT
    from pyspark.sql.types import DoubleType, StructField, StructType

    schema = StructType([StructField("features", VectorUDT()), StructField("label", DoubleType())])
    df = spark.createDataFrame([(Vectors.dense([0.0, 1.0]), 1.0), (Vectors.dense([1.0, 0.0]), None)], schema)
    estimator = CSVC(gamma=0.5, numPartitions=2)
    models = estimator.fitMultiple(df, [{estimator.C: 1.0}, {estimator.C: 2.0}])
    for _ in range(2):
        with pytest.raises(ValueError, match="label column 'label' has 1 null value"):
            next(models)


def test_cross_validator_checks_each_fold_once(train, checks, stages):
    from pyspark.ml.tuning import CrossValidator, ParamGridBuilder

    estimator = CSVC(gamma=0.5, numPartitions=1)  # one slot each: the two param maps fit side by side
    grid = ParamGridBuilder().addGrid(estimator.C, [0.1, 1.0, 10.0]).build()
    cv = CrossValidator(estimator=estimator, estimatorParamMaps=grid, evaluator=BinaryClassificationEvaluator(),
                        numFolds=2, parallelism=2, seed=1).fit(train[2])
    # no job of checks: each fold's rows are dealt into the one task's partition, once for its three fits, and
    # the tasks check them; the fits that start side by side judge their own, the one after takes theirs
    assert set(checks) == {"tasks"} and 2 + 1 <= len(checks) <= 2 * 2 + 1
    assert len(stages) == 2 * 3 + 1  # one slot each: the stages run side by side, not in one
    assert len(cv.avgMetrics) == 3 and min(cv.avgMetrics) > 0.8



def test_cancelling_the_shared_training_stage_ends_every_param_map_without_fitting_them_alone(spark, stages):
    """A tuner's fit cancelled by its job group (a notebook's cancel) while its param maps train in their shared
    stage: the param maps then fitted alone, one by one, starting the cancelled work over and running to their
    ends; the cancel's error now ends each of them."""
    context, estimator = spark.sparkContext, SpSVM(gamma=0.5, maxBasis=2500, tol=0.0)
    X, labels, _ = rings_frame(spark, 3000, seed=5)
    df = to_df(spark, X, labels).cache()
    df.count()
    outcome = []

    def tuner():
        context.setJobGroup("tuning", "a notebook cell", interruptOnCancel=True)
        try:
            outcome.extend(estimator.fitMultiple(df, [{estimator.regParam: 1e-3}, {estimator.regParam: 1e-2}]))
        except Exception as exc:  # the cancelled stage's error
            outcome.append(exc)
        finally:
            context.setLocalProperty("spark.jobGroup.id", None)

    fitting = threading.Thread(target=tuner)
    try:
        # once the shared stage's coordinator has judged its tasks' checks, they train (the status tracker, which
        # can lag seconds behind, is not waited on)
        with logged("training tasks connected") as training:
            fitting.start()
            assert training.wait(120)
        started = len(stages)  # the shared stage's starts (a first one may check the rows and deal them again)
        context.cancelJobGroup("tuning")
        fitting.join(300)
    finally:
        df.unpersist()
    (error,) = outcome
    assert isinstance(error, stage.StageCancelled) and "cancelled" in str(error)
    assert len(stages) == started  # no fit of a param map alone after the cancel
