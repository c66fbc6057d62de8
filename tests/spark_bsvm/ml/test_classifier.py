"""The pyspark.ml classifier face of the estimators and BSVMModel: the ClassificationModel API on one vector,
prediction types, pyspark's evaluators, summaries, thresholds, copies and missing columns."""

import numpy as np
import pytest
from pyspark.errors.exceptions.base import IllegalArgumentException
from pyspark.ml.classification import ProbabilisticClassificationModel, ProbabilisticClassifier
from pyspark.ml.evaluation import BinaryClassificationEvaluator, MulticlassClassificationEvaluator
from pyspark.ml.linalg import Vectors
from sklearn.metrics import roc_auc_score

from core.spsvm import truncate
from spark_bsvm import CSVC, BSVMModel, SpSVM
from tests.conftest import rings_frame

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def estimator():
    return CSVC(C=1.0, gamma=0.5, numPartitions=2, calibrationFraction=0.25, seed=2)


@pytest.fixture(scope="module")
def train(spark):
    """(X, 0/1 labels, DataFrame) of 240 rows to fit on."""
    return rings_frame(spark, 240, seed=31)


@pytest.fixture(scope="module")
def test_set(spark):
    """(X, 0/1 labels, DataFrame) of 160 other rows."""
    return rings_frame(spark, 160, seed=32)


@pytest.fixture(scope="module")
def calibrated(train, estimator):
    """A C-SVC with Platt's sigmoid fitted on a quarter of the training rows."""
    return estimator.fit(train[2])


def test_estimators_and_models_are_pyspark_classifiers(estimator, calibrated):
    assert isinstance(estimator, ProbabilisticClassifier) and isinstance(calibrated, ProbabilisticClassificationModel)
    assert calibrated.uid == estimator.uid  # as MLlib's models and xgboost.spark's
    assert calibrated.numClasses == 2 and calibrated.numFeatures == 4


def test_one_vector_gives_what_transform_gives(train, calibrated):
    X, _, df = train
    rows = calibrated.transform(df).select("features", "rawPrediction", "probability", "prediction").collect()
    for row in rows[:20]:
        for vector in (row.features, Vectors.sparse(4, dict(enumerate(row.features.toArray())))):
            assert calibrated.predict(vector) == row.prediction
            np.testing.assert_allclose(calibrated.predictRaw(vector).toArray(), row.rawPrediction.toArray(),
                                       atol=1e-12)
            np.testing.assert_allclose(calibrated.predictProbability(vector).toArray(),
                                       row.probability.toArray(), atol=1e-12)
    f = calibrated.expansion.decision_function(X[:1])[0]
    assert calibrated.predictRaw(Vectors.dense(X[0])).toArray().tolist() == [-f, f]
    with pytest.raises(ValueError, match="the vector has 3 features, the model 4"):
        calibrated.predict(Vectors.dense([0.0, 1.0, 2.0]))


def test_a_fitted_model_pickles_into_a_udf_without_its_training_summary(train, calibrated):
    """The training summary holds the training DataFrame, which only the driver has: a model fresh from ``fit``
    goes into a UDF's closure, a pickle and a deep copy as a loaded model does, without it."""
    import copy
    import pickle

    from pyspark.sql import functions as F

    df = train[2].limit(20)
    assert calibrated.hasSummary
    positive = F.udf(lambda v: float(calibrated.predictProbability(v)[1]), "double")
    rows = calibrated.transform(df).select(positive("features").alias("udf"), "probability").collect()
    np.testing.assert_allclose([r.udf for r in rows], [r.probability[1] for r in rows], atol=1e-12)
    vector = Vectors.dense(train[0][0])
    for clone in (pickle.loads(pickle.dumps(calibrated)), copy.deepcopy(calibrated)):
        assert not clone.hasSummary and clone.uid == calibrated.uid and clone.platt == calibrated.platt
        assert clone.predictRaw(vector) == calibrated.predictRaw(vector)
    assert calibrated.hasSummary and calibrated.copy().hasSummary


def test_probabilities_need_a_calibrated_model(train):
    model = CSVC(gamma=0.5, numPartitions=2).fit(train[2])
    with pytest.raises(ValueError, match="the model is not calibrated: fit with calibrationFraction > 0"):
        model.predictProbability(Vectors.dense(train[0][0]))


@pytest.mark.parametrize("label_type, labels, predicted", [
    ("int", (0, 1), (0.0, 1.0)),
    ("int", (-1, 1), (-1.0, 1.0)),
    ("string", ("no", "yes"), ("no", "yes")),
    ("boolean", (False, True), (False, True)),
])
def test_the_prediction_column_holds_the_labels_as_doubles_when_numeric(spark, train, label_type, labels, predicted):
    X, binary, df = train
    typed = df.withColumn("label", (df.label == 1.0).cast("int"))
    typed = typed.selectExpr("features", f"CASE WHEN label = 1 THEN {_sql(labels[1])} ELSE {_sql(labels[0])} END "
                             "AS label")
    model = CSVC(gamma=0.5, numPartitions=2).fit(typed)
    out = model.transform(typed)
    expected_type = {"int": "double", "string": "string", "boolean": "boolean"}[label_type]
    assert dict(out.dtypes)["prediction"] == expected_type
    f = model.expansion.decision_function(X)
    assert [r.prediction for r in out.select("prediction").collect()] == [predicted[int(v > 0)] for v in f]
    assert model.predict(Vectors.dense(X[0])) == predicted[int(f[0] > 0)]


def test_decimal_labels_are_calibrated_as_their_doubles(train, calibrated, estimator):
    """Platt's rows compared Decimal('0.20') with the class 0.2 (a double, as MLlib reads labels): never equal,
    so every row counted as negative and the sigmoid gave every row one probability."""
    from pyspark.sql import functions as F

    _, _, df = train
    decimal = df.withColumn("label", F.when(df.label == 1.0, F.lit("0.20")).otherwise(F.lit("0.10"))
                            .cast("decimal(4,2)"))
    model = estimator.fit(decimal)
    assert model.classes == [0.1, 0.2]
    assert model.platt == pytest.approx(calibrated.platt)
    assert model.calibrate(decimal).platt == pytest.approx(calibrated.copy().calibrate(df).platt)


def _sql(value):
    return f"'{value}'" if isinstance(value, str) else str(value).lower()


def test_pyspark_evaluators_read_the_output_of_integer_labels(train, test_set):
    X, labels, df = train
    as_int = df.withColumn("label", df.label.cast("int"))
    model = CSVC(gamma=0.5, numPartitions=2).fit(as_int)
    Xt, yt, dft = test_set
    out = model.transform(dft.withColumn("label", dft.label.cast("int")))
    f = model.expansion.decision_function(Xt)
    accuracy = MulticlassClassificationEvaluator(metricName="accuracy").evaluate(out)
    assert accuracy == pytest.approx(np.mean((f > 0) == (yt > 0)))
    assert BinaryClassificationEvaluator().evaluate(out) == pytest.approx(roc_auc_score(yt, f))


def test_summary_and_evaluate_as_linear_svc_gives_them(train, test_set, calibrated):
    X, labels, _ = train
    summary = calibrated.summary  # on the DataFrame given to fit, the calibration rows included
    f = calibrated.expansion.decision_function(X)
    assert calibrated.hasSummary and summary.accuracy == pytest.approx(np.mean((f > 0) == (labels > 0)))
    assert summary.areaUnderROC == pytest.approx(roc_auc_score(labels, f))
    assert summary.objectiveHistory == [calibrated.expansion.metadata["objective"]]
    assert summary.errorBySupportSize == [] and summary.labels == [0.0, 1.0]  # C-SVC records no path
    Xt, yt, dft = test_set
    held_out = calibrated.evaluate(dft)
    ft = calibrated.expansion.decision_function(Xt)
    assert held_out.accuracy == pytest.approx(np.mean((ft > 0) == (yt > 0)))
    assert held_out.areaUnderROC == pytest.approx(roc_auc_score(yt, ft))
    assert held_out.predictions.count() == len(yt)


def test_the_summary_has_the_error_along_the_recorded_support_path(train, test_set, tmp_path):
    model = SpSVM(maxBasis=12, regParam=0.1, gamma=0.5, numPartitions=2).fit(train[2])
    assert model.summary.objectiveHistory == model.expansion.metadata["path"]["objective"]
    Xt, yt, dft = test_set
    path = model.evaluate(dft).errorBySupportSize
    assert [size for size, _ in path] == list(range(1, 13))
    np.testing.assert_allclose([error for _, error in path],
                               [np.mean(truncate(model.expansion, d).predict(Xt) != yt) for d in range(1, 13)])
    model.write().overwrite().save(str(tmp_path / "spsvm"))
    loaded = BSVMModel.load(str(tmp_path / "spsvm"))
    assert not loaded.hasSummary
    with pytest.raises(RuntimeError, match="no training summary available .* use model.evaluate"):
        loaded.summary


def test_thresholds_choose_by_probability_as_mllib(train, calibrated):
    X, _, df = train
    model = calibrated.copy({calibrated.thresholds: [0.2, 0.8]})
    p = calibrated.transform(df).select("probability").collect()
    p1 = np.array([r.probability[1] for r in p])
    expected = np.where(p1 / 0.8 > (1 - p1) / 0.2, 1.0, 0.0)
    assert [r.prediction for r in model.transform(df).select("prediction").collect()] == expected.tolist()
    assert model.predict(Vectors.dense(X[0])) == expected[0]
    assert expected.sum() < np.sum(p1 > 0.5)  # fewer positives than at p > 1/2


@pytest.mark.parametrize("estimator, message", [
    (CSVC(thresholds=[0.5, 0.5]), "thresholds chooses the class by its probability"),
    (CSVC(thresholds=[0.0, 0.0], calibrationFraction=0.2), r"thresholds must be two finite numbers >= 0, not both 0"),
    (CSVC(thresholds=[0.3, 0.3, 0.4], calibrationFraction=0.2), "thresholds must be two finite numbers"),
])
def test_bad_thresholds_are_refused_before_fitting(train, estimator, message):
    with pytest.raises(ValueError, match=message):
        estimator.fit(train[2])


def test_copy_is_independent_of_the_original(train, calibrated):
    df = train[2]
    uncalibrated = CSVC(gamma=0.5, numPartitions=2).fit(df)
    copy = uncalibrated.copy()
    copy.calibrate(df)
    assert copy.platt and uncalibrated.platt is None
    assert "probability" in copy.transform(df).columns and "probability" not in uncalibrated.transform(df).columns
    assert copy.uid == uncalibrated.uid and copy.expansion is not uncalibrated.expansion
    np.testing.assert_array_equal(copy.expansion.coef, uncalibrated.expansion.coef)
    shifted = uncalibrated.copy({uncalibrated.threshold: 5.0})  # every row negative: the summary scores the copy
    assert shifted.summary.accuracy == pytest.approx(shifted.evaluate(df).accuracy)
    assert shifted.summary.accuracy < uncalibrated.summary.accuracy


def test_a_missing_features_column_is_mllibs_illegal_argument(train, calibrated):
    df = train[2]
    with pytest.raises(IllegalArgumentException, match="the features column 'features' does not exist") as error:
        calibrated.transform(df.drop("features"))
    assert isinstance(error.value, ValueError)
    assert calibrated.transform(df.drop("label")).count() == df.count()  # the label is not an input


def test_an_output_column_the_frame_has_already_is_refused_as_mllib_does(train, calibrated):
    scored = calibrated.transform(train[2])
    for param, column in (("probabilityCol", "probability"), ("rawPredictionCol", "rawPrediction"),
                          ("predictionCol", "prediction")):
        with pytest.raises(ValueError, match=rf"^the DataFrame has a column '{column}' already: set {param} to "):
            calibrated.transform(scored.select("features", column))
    assert calibrated.copy({calibrated.predictionCol: "again"}).transform(scored.drop("probability",
                                                                                      "rawPrediction")).count()


def test_two_output_columns_of_one_name_are_refused_as_mllib_does(train, calibrated, estimator):
    """transform wrote the later column over the earlier: rawPrediction lost under the prediction, the
    probability under the rawPrediction."""
    df = train[2]
    for first, second in (("rawPredictionCol", "predictionCol"), ("probabilityCol", "rawPredictionCol")):
        clash = {calibrated.getParam(first): "out", calibrated.getParam(second): "out"}
        with pytest.raises(ValueError, match=f"^{first} and {second} are both 'out': transform would write one"):
            calibrated.transform(df, clash)
        with pytest.raises(ValueError, match=f"^{first} and {second} are both 'out'"):
            estimator.copy({estimator.getParam(p): "out" for p in (first, second)}).fit(df)  # before its fit
    uncalibrated = calibrated.copy({calibrated.probabilityCol: "rawPrediction"})  # no probability column
    uncalibrated.expansion.metadata.pop("platt")
    assert uncalibrated.transform(df).columns == df.columns + ["rawPrediction", "prediction"]


@pytest.mark.parametrize("udf", ["arrow", "pandas"])
def test_transform_scores_dense_and_sparse_vectors_alike_and_names_a_wrong_size(spark, train, calibrated, udf,
                                                                                 monkeypatch):
    from pyspark.sql import functions as F

    if udf == "pandas":  # pyspark before 4.1 has no Arrow UDFs
        monkeypatch.delattr(F, "arrow_udf")
    X, labels, _ = train
    mixed = spark.createDataFrame([(Vectors.sparse(4, {j: v for j, v in enumerate(x) if j % 2}) if i % 3 else
                                    Vectors.dense(x * [0, 1, 0, 1]), float(y))
                                   for i, (x, y) in enumerate(zip(X, labels))], ["features", "label"])
    raw = np.array([r.rawPrediction[1] for r in calibrated.transform(mixed).collect()])
    np.testing.assert_allclose(raw, calibrated.expansion.decision_function(X * [0, 1, 0, 1]), rtol=1e-12, atol=1e-12)
    short = spark.createDataFrame([(Vectors.dense([1.0, 2.0, 3.0]), 1.0)], ["features", "label"])
    with pytest.raises(Exception, match="feature vectors must all have 4 entries" if udf == "arrow" else "shape"):
        calibrated.transform(short).collect()


@pytest.mark.parametrize("udf", ["arrow", "pandas"])
def test_transform_refuses_nan_infinite_and_too_large_features_naming_the_column_and_the_fix(spark, calibrated, udf,
                                                                                            monkeypatch):
    """The scoring task failed with the core's "rows contain NaN or infinity: impute or drop those values first",
    which named neither the column nor that the rows were being scored (MLlib's models score NaN as NaN)."""
    import re

    from pyspark.sql import functions as F

    if udf == "pandas":
        monkeypatch.delattr(F, "arrow_udf")
    model = calibrated.copy().setFeaturesCol("pixels")
    rule = ("a model scores no row holding NaN, infinity or values above 1e+100 in magnitude, as its fit took none; "
            "impute them (pyspark.ml.feature.Imputer, on the columns before they are assembled) or drop those rows "
            "(a filter, or VectorAssembler's handleInvalid='skip') before transform, or rescale the features "
            "(pyspark.ml.feature.StandardScaler)")
    for value, found in [(float("nan"), "NaN or infinite values"), (float("-inf"), "NaN or infinite values"),
                         (-1e120, "values of magnitude up to 1e+120")]:
        df = spark.createDataFrame([(Vectors.dense([0.5, 1.0, 0.0, 2.0]),), (Vectors.dense([0.5, value, 0.0, 2.0]),)],
                                   ["pixels"])
        with pytest.raises(Exception, match=re.escape(f"features column 'pixels' holds {found}: {rule}")):
            model.transform(df).collect()


def test_float32_prediction_stays_within_1e_6_of_float64_and_is_checked_before_scoring(spark, train, calibrated,
                                                                                         tmp_path):
    X, _, df = train
    single = calibrated.copy().setPredictionPrecision("float32")
    raw = np.array([r.rawPrediction[1] for r in single.transform(df).collect()])
    exact = calibrated.expansion.decision_function(X)
    np.testing.assert_allclose(raw, exact, rtol=0, atol=1e-6)
    np.testing.assert_array_equal(raw, calibrated.expansion.decision_function(X, "float32"))
    assert single.predictRaw(Vectors.dense(X[0])).toArray()[1] == raw[0]
    assert calibrated.getPredictionPrecision() == "float64"
    single.write().overwrite().save(str(tmp_path / "model"))
    assert BSVMModel.load(str(tmp_path / "model")).getPredictionPrecision() == "float32"
    single.setPredictionPrecision("half")
    with pytest.raises(ValueError, match=r"predictionPrecision must be one of \('float64', 'float32'\), got 'half'"):
        single.transform(df)
    with pytest.raises(ValueError, match="predictionPrecision must be one of"):
        single.predict(Vectors.dense(X[0]))


@pytest.mark.parametrize("element", ["double", "float"])
def test_array_features_fit_and_transform_as_vectors(spark, train, element):
    from pyspark.ml.functions import vector_to_array

    X, _, df = train
    # a float column holds float32 values: the vector reference is fitted on those
    rounded = spark.createDataFrame([(Vectors.dense(x.astype(np.float32).astype(np.float64)), float(y))
                                     for x, y in zip(X, train[1])], ["features", "label"]).repartition(2)
    arrays = rounded.withColumn("features", vector_to_array("features").cast(f"array<{element}>"))
    on_vectors = CSVC(gamma=0.5, numPartitions=2).fit(rounded)
    on_arrays = CSVC(gamma=0.5, numPartitions=2).fit(arrays)
    np.testing.assert_array_equal(on_arrays.expansion.coef, on_vectors.expansion.coef)
    raw = [r.rawPrediction for r in on_arrays.transform(arrays).collect()]
    assert raw == [r.rawPrediction for r in on_vectors.transform(rounded).collect()]
    holed = spark.createDataFrame([([1.0, None, 0.0, 2.0],)], f"features array<{element}>")
    with pytest.raises(Exception, match=r"the features column has 1 row\(s\) holding a null entry; drop or impute"):
        on_arrays.transform(holed).collect()


@pytest.mark.parametrize("make", [lambda: CSVC(gamma=0.5, weightCol="weight", numPartitions=2),
                                  lambda: SpSVM(maxBasis=10, regParam=0.1, gamma=0.5, weightCol="weight",
                                                numPartitions=2)], ids=["CSVC", "SpSVM"])
def test_rows_of_weight_zero_contribute_nothing(spark, train, make):
    from tests.conftest import to_df

    X, labels, _ = train
    w = np.random.default_rng(4).uniform(0.5, 2.0, len(labels))
    clean = make().fit(to_df(spark, X, labels, weights=w))
    # ten rows of weight 0 with wrong labels at the end of each half: the same partitions once they are dropped
    half = len(labels) // 2
    noise = np.full((10, X.shape[1]), 0.1)
    X_all = np.vstack([X[:half], noise, X[half:], noise])
    labels_all = np.concatenate([labels[:half], np.ones(10), labels[half:], np.zeros(10)])
    w_all = np.concatenate([w[:half], np.zeros(10), w[half:], np.zeros(10)])
    zeros = make().fit(to_df(spark, X_all, labels_all, weights=w_all))
    np.testing.assert_allclose(zeros.expansion.coef, clean.expansion.coef, atol=1e-12)
    assert zeros.expansion.bias == pytest.approx(clean.expansion.bias)


def test_columns_named_with_dots_spaces_and_backticks_are_read_as_named(train, calibrated, estimator):
    """Spark reads ``F.col("f.a")`` as the field ``a`` of a struct ``f``: every column a fit, a transform and a
    summary read by its name is quoted."""
    from pyspark.sql import functions as F

    _, _, df = train
    odd = df.select(F.col("features").alias("f.a"), F.col("label").alias("lab el"), F.lit(1.0).alias("w`x"))
    model = estimator.copy({estimator.featuresCol: "f.a", estimator.labelCol: "lab el",
                            estimator.weightCol: "w`x"}).fit(odd)
    np.testing.assert_allclose(model.expansion.coef, calibrated.expansion.coef, atol=1e-12)
    assert model.platt == pytest.approx(calibrated.platt)
    scored = model.transform(odd).select("prediction").collect()
    assert scored == calibrated.transform(df).select("prediction").collect()
    assert model.summary.accuracy == pytest.approx(calibrated.summary.accuracy)
    assert model.summary.areaUnderROC == pytest.approx(calibrated.summary.areaUnderROC)


def test_scoring_ships_the_function_not_the_training_record(spark, calibrated, monkeypatch):
    """A recorded path can be megabytes (an SpSVM-2 path of d basis functions holds O(d^2) numbers): the tasks get
    the support vectors, coefficients and kernel only."""
    import cloudpickle

    import spark_bsvm.ml.model as model_module

    model = calibrated
    model.expansion.metadata["ballast"] = list(range(200_000))  # ~2 MB pickled
    shipped = {}

    def capture(df, features_col, n_features, compute, return_type):
        shipped["bytes"] = len(cloudpickle.dumps(compute))
        return original(df, features_col, n_features, compute, return_type)

    original = model_module.rows_column
    monkeypatch.setattr(model_module, "rows_column", capture)
    try:
        rows = model.transform(spark.createDataFrame([(Vectors.dense([0.1, 0.2, 0.3, 0.4]),)], ["features"]))
        assert rows.select("prediction").count() == 1
    finally:
        del model.expansion.metadata["ballast"]
    assert shipped["bytes"] < 200_000 > 20 * model.expansion.support_vectors.nbytes
