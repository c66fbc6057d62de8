"""OneVsRest over the spark-bsvm estimators: accuracy and log loss with pyspark's multiclass evaluator."""

import numpy as np
import pytest
from pyspark.ml.classification import OneVsRest
from pyspark.ml.evaluation import MulticlassClassificationEvaluator

from spark_bsvm import CSVC, SpSVM
from spark_bsvm.ml import with_one_vs_rest_probability
from tests.conftest import to_df

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def three_classes(spark):
    """Three overlapping Gaussian blobs in the plane, 300 rows to train on and 150 to test on."""
    rng = np.random.default_rng(9)
    centres = np.array([[0.0, 0.0], [2.0, 0.0], [1.0, 1.8]])
    labels = rng.integers(0, 3, 450)
    X = centres[labels] + 0.6 * rng.standard_normal((450, 2))
    return to_df(spark, X[:300], labels[:300]), X[300:], labels[300:], to_df(spark, X[300:], labels[300:])


@pytest.fixture(scope="module")
def calibrated_ovr(three_classes):
    classifier = CSVC(C=1.0, gamma=0.5, numPartitions=2, calibrationFraction=0.25, seed=1)
    return OneVsRest(classifier=classifier).fit(three_classes[0])


@pytest.mark.parametrize("udf", ["arrow", "pandas"])
def test_accuracy_and_log_loss_with_calibrated_binary_models(three_classes, calibrated_ovr, udf, monkeypatch):
    from pyspark.sql import functions as F

    if udf == "pandas":  # pyspark before 4.1 has no Arrow UDFs
        monkeypatch.delattr(F, "arrow_udf")
    _, X, labels, test = three_classes
    scored = with_one_vs_rest_probability(calibrated_ovr, calibrated_ovr.transform(test))
    accuracy = MulticlassClassificationEvaluator(metricName="accuracy").evaluate(scored)
    log_loss = MulticlassClassificationEvaluator(metricName="logLoss").evaluate(scored)
    rows = scored.select("label", "prediction", "probability").collect()
    p = np.array([r.probability.toArray() for r in rows])
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    assert accuracy == pytest.approx(np.mean([r.prediction == r.label for r in rows])) and accuracy > 0.8
    assert log_loss == pytest.approx(-np.mean(np.log(p[np.arange(len(rows)), labels])), rel=1e-9)
    assert log_loss < 0.6 < np.log(3)  # far better than the uniform guess
    # each class's share is its binary model's calibrated P(class k | x), normalised
    from pyspark.ml.linalg import Vectors

    one = [m.predictProbability(Vectors.dense(X[0]))[1] for m in calibrated_ovr.models]
    np.testing.assert_allclose(p[0], np.array(one) / np.sum(one), atol=1e-12)


def test_class_probabilities_follow_each_binary_models_prediction_precision(three_classes, calibrated_ovr):
    from pyspark.ml.classification import OneVsRestModel

    test = three_classes[3]
    single = OneVsRestModel([m.copy().setPredictionPrecision("float32") for m in calibrated_ovr.models])
    single.setFeaturesCol(calibrated_ovr.getFeaturesCol())
    probabilities = [np.array([r.probability.toArray() for r in with_one_vs_rest_probability(m, test).collect()])
                     for m in (calibrated_ovr, single)]
    np.testing.assert_allclose(probabilities[1], probabilities[0], atol=1e-6)
    assert not np.array_equal(probabilities[1], probabilities[0])  # the float32 dot products were used
    single.models[1].setPredictionPrecision("half")
    with pytest.raises(ValueError, match=r"predictionPrecision must be one of \('float64', 'float32'\), got 'half'"):
        with_one_vs_rest_probability(single, test)


def test_uncalibrated_binary_models_give_accuracy_but_no_probabilities(three_classes):
    train, _, _, test = three_classes
    ovr = OneVsRest(classifier=SpSVM(maxBasis=20, regParam=0.1, gamma=0.5, numPartitions=2)).fit(train)
    assert MulticlassClassificationEvaluator(metricName="accuracy").evaluate(ovr.transform(test)) > 0.8
    with pytest.raises(ValueError, match="the binary model of class 0 is not calibrated: fit OneVsRest over"):
        with_one_vs_rest_probability(ovr, test)


def test_labels_counted_from_1_are_named_as_one_vs_rest_classes_without_rows(spark, three_classes):
    """OneVsRest fits one model per class 0, 1, ..., up to the largest label: with labels 1 to 3, class 0's binary
    model sees one label only, and the message says why rather than asking for the OneVsRest already there."""
    _, X, labels, _ = three_classes
    with pytest.raises(ValueError, match=r"found 1: \[0.0\]; every row has that label; within OneVsRest, .* one of "
                                         r"those classes has no rows: index the labels as 0 to k-1"):
        OneVsRest(classifier=CSVC(gamma=0.5, numPartitions=2)).fit(to_df(spark, X, labels + 1))


def test_a_validation_indicator_under_one_vs_rest_is_named_with_the_fix(three_classes):
    """OneVsRest selects the label and features columns (and its weightCol) before fitting each class, so a
    validationIndicatorCol never reaches the binary fits: the message says to use validationFraction there."""
    from pyspark.sql import functions as F

    train = three_classes[0].withColumn("held", F.rand(seed=1) < 0.25)
    classifier = SpSVM(maxBasis=5, gamma=0.5, numPartitions=2, validationIndicatorCol="held")
    with pytest.raises(ValueError, match=r"the validationIndicator column 'held' does not exist in the DataFrame .* "
                                         r"\(OneVsRest gives its classifier only the label, features and weight "
                                         r"columns: under it, hold out validation rows with validationFraction\)"):
        OneVsRest(classifier=classifier).fit(train)


def test_a_probability_column_the_frame_has_already_is_refused(three_classes, calibrated_ovr):
    """The helper replaced the frame's own column of that name, silently, where transform refuses one."""
    from pyspark.sql import functions as F

    scored = calibrated_ovr.transform(three_classes[3]).withColumn("probability", F.lit("mine"))
    with pytest.raises(ValueError, match="^the DataFrame has a column 'probability' already: set probabilityCol to "):
        with_one_vs_rest_probability(calibrated_ovr, scored)
    assert "classProbability" in with_one_vs_rest_probability(calibrated_ovr, scored, "classProbability").columns
