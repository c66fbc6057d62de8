"""The pyspark.ml face: fit, transform, persistence, Pipelines and input validation."""

import numpy as np
import pytest
from chispa import assert_df_equality
from pyspark.ml import Pipeline, PipelineModel
from pyspark.ml.evaluation import BinaryClassificationEvaluator

from core.engine import LocalEngine
from core.kernels import KernelSpec
from core.svc import fit_budget_svm
from core.synthetic import make_rings
from spark_bsvm import BSVMModel, BudgetSVM, CSVC
from tests.conftest import rings_frame, to_df

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def train(spark):
    return rings_frame(spark, 500, seed=21)


@pytest.fixture(scope="module")
def budget_model(train):
    return BudgetSVM(budget=40, C=1.0, gamma=0.5, numPartitions=2).fit(train[2])


def test_budget_svm_estimator_matches_the_core_fit(train, budget_model):
    X, labels, _ = train
    local = fit_budget_svm(LocalEngine(X, labels, n_partitions=2), budget=40, C=1.0, kernel=KernelSpec(gamma=0.5))
    np.testing.assert_allclose(budget_model.expansion.coef, local.coef, atol=1e-9)
    assert budget_model.classes == [0.0, 1.0] and budget_model.numSupportVectors == local.n_support


def test_transform_adds_raw_prediction_and_label_valued_prediction(train, budget_model):
    X, labels, df = train
    rows = budget_model.transform(df).select("rawPrediction", "prediction").collect()
    f = budget_model.expansion.decision_function(X)
    np.testing.assert_allclose([r.rawPrediction[1] for r in rows], f, atol=1e-12)
    np.testing.assert_allclose([r.rawPrediction[0] for r in rows], -f, atol=1e-12)
    assert [r.prediction for r in rows] == np.where(f > 0, 1.0, 0.0).tolist()
    auc = BinaryClassificationEvaluator().evaluate(budget_model.transform(df))
    assert auc > 0.8


def test_model_save_load_round_trip(train, budget_model, tmp_path):
    path = str(tmp_path / "model")
    budget_model.write().overwrite().save(path)
    loaded = BSVMModel.load(path)
    assert loaded.uid == budget_model.uid and loaded.getOrDefault("threshold") == budget_model.getThreshold()
    df = train[2]
    assert_df_equality(loaded.transform(df), budget_model.transform(df))


def test_saving_onto_a_saved_model_without_overwrite_says_how(budget_model, tmp_path):
    """As MLlib's writers: the error names ``write().overwrite()``, not the mode of a DataFrame writer."""
    path = str(tmp_path / "model")
    budget_model.save(path)
    for saved in (budget_model, BudgetSVM(budget=7)):
        with pytest.raises(FileExistsError, match=r"write\(\)\.overwrite\(\)\.save\(path\)"):
            saved.save(path)
    assert BSVMModel.load(path).uid == budget_model.uid  # the model there is whole


def test_inside_a_saved_pipeline(train, tmp_path):
    df = train[2]
    pipeline = Pipeline(stages=[CSVC(C=2.0, gamma=0.5, featuresCol="features", numPartitions=2)])
    fitted = pipeline.fit(df)
    path = str(tmp_path / "pipeline")
    fitted.write().overwrite().save(path)
    assert_df_equality(PipelineModel.load(path).transform(df), fitted.transform(df))


def test_params_are_documented_and_copied():
    estimator = BudgetSVM(budget=7, norm="l2")
    text = estimator.explainParams()
    assert "B: the loss counts only the B worst-classified examples" in text
    copy = estimator.copy({estimator.C: 5.0})
    assert copy.getC() == 5.0 and estimator.getC() == 1.0 and copy.getOrDefault("budget") == 7


@pytest.mark.parametrize("estimator, message", [
    (CSVC(C=-1.0), "C must be a positive finite number, got -1.0"),
    (CSVC(gamma=0.0), "gamma must be a positive finite number, got 0.0"),
    (CSVC(kernel="sigmoid"), "unknown kernel 'sigmoid'"),
    (BudgetSVM(budget=0), "budget must be an integer >= 1, got 0"),
    (BudgetSVM(norm="l2", weightCol="w"), "weightCol is not supported by the budget-L2 SVM"),
    (CSVC(numPartitions=5), "numPartitions=5 exceeds the 2 task slots"),
])
def test_bad_params_are_named(train, estimator, message):
    with pytest.raises(ValueError, match=message):
        estimator.fit(train[2])


def test_one_vs_rest_for_multiclass(spark):
    from pyspark.ml.classification import OneVsRest
    from pyspark.ml.evaluation import MulticlassClassificationEvaluator

    rng = np.random.default_rng(5)
    X = rng.standard_normal((450, 3))
    labels = np.argmax(X, axis=1).astype(float)  # three classes
    df = to_df(spark, X, labels)
    model = OneVsRest(classifier=CSVC(C=1.0, gamma=0.5)).fit(df)
    accuracy = MulticlassClassificationEvaluator(metricName="accuracy").evaluate(model.transform(df))
    assert accuracy > 0.95 and len(model.models) == 3


def test_train_validation_split_picks_a_model(spark, train):
    from pyspark.ml.tuning import ParamGridBuilder, TrainValidationSplit

    estimator = CSVC(gamma=0.5, numPartitions=2)
    grid = ParamGridBuilder().addGrid(estimator.C, [0.01, 10.0]).build()
    tvs = TrainValidationSplit(estimator=estimator, estimatorParamMaps=grid, seed=3,
                               evaluator=BinaryClassificationEvaluator()).fit(train[2])
    assert len(tvs.validationMetrics) == 2 and max(tvs.validationMetrics) > 0.8
    best = grid[int(np.argmax(tvs.validationMetrics))][estimator.C]
    assert tvs.bestModel.trainingSummary["params"]["C"] == best


def test_platt_calibrated_probabilities(train, tmp_path):
    df = train[2]
    model = CSVC(C=1.0, gamma=0.5, numPartitions=2, calibrationFraction=0.25, seed=4).fit(df)
    A, B = model.platt
    assert A < 0
    rows = model.transform(df).select("rawPrediction", "probability").collect()
    f = np.array([r.rawPrediction[1] for r in rows])
    p = np.array([r.probability[1] for r in rows])
    np.testing.assert_allclose(p, 1 / (1 + np.exp(A * f + B)), atol=1e-12)
    np.testing.assert_allclose([r.probability[0] for r in rows], 1 - p, atol=1e-12)
    assert model.trainingSummary["n_train"] < 500  # the held-out quarter was not trained on
    path = str(tmp_path / "calibrated")
    model.write().overwrite().save(path)
    assert BSVMModel.load(path).platt == (A, B)
    assert "probability" not in CSVC(numPartitions=2).fit(df).transform(df).columns


def test_instance_weights_on_spark_match_the_local_fit(spark):
    from core.svc import fit_csvc

    X, y = make_rings(300, 4, seed=8)
    w = np.where(y > 0, 2.0, 0.5)
    model = CSVC(C=1.0, gamma=0.5, weightCol="weight", numPartitions=2).fit(to_df(spark, X, y, weights=w))
    local = fit_csvc(LocalEngine(X, y, weights=w, n_partitions=2), C=1.0, kernel=KernelSpec(gamma=0.5))
    np.testing.assert_allclose(model.expansion.coef, local.coef, atol=1e-9)


def test_a_failing_driver_loop_leaves_no_stage_or_listener(spark, train):
    from spark_bsvm.engine import SparkEngine

    with pytest.raises(ZeroDivisionError):
        with SparkEngine(train[2], num_partitions=2) as engine:
            1 / 0  # the driver's loop fails mid-fit
    assert not engine._thread.is_alive() and engine._coordinator.listener.fileno() == -1


@pytest.mark.data
def test_one_vs_rest_on_letter(spark):
    from pyspark.ml.classification import OneVsRest
    from pyspark.ml.evaluation import MulticlassClassificationEvaluator

    from tests.conftest import load_libsvm

    X, y = load_libsvm("letter", "letter.scale", n_features=16)
    Xt, yt = load_libsvm("letter", "letter.scale.t", n_features=16)
    # OneVsRest numbers classes 0..k-1; letter's are 1..26
    train_df = to_df(spark, X[:3000].toarray(), y[:3000] - 1)
    test_df = to_df(spark, Xt[:2000].toarray(), yt[:2000] - 1)
    model = OneVsRest(classifier=CSVC(C=10.0, gamma=2.0, numPartitions=2)).fit(train_df)
    accuracy = MulticlassClassificationEvaluator(metricName="accuracy").evaluate(model.transform(test_df))
    assert len(model.models) == 26 and accuracy > 0.85


def test_cross_validator_runs_fits_concurrently(train):
    from pyspark.ml.tuning import CrossValidator, ParamGridBuilder

    estimator = CSVC(gamma=0.5, numPartitions=1)  # one slot each: two fits at once on local[2]
    grid = ParamGridBuilder().addGrid(estimator.C, [0.1, 10.0]).build()
    cv = CrossValidator(estimator=estimator, estimatorParamMaps=grid, evaluator=BinaryClassificationEvaluator(),
                        numFolds=2, parallelism=2, seed=1).fit(train[2])
    assert len(cv.avgMetrics) == 2 and min(cv.avgMetrics) > 0.8
