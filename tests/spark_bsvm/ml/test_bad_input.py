"""The bad-input matrix of the Spark estimators: each case is refused with its one-line message by the checks'
job where the executors coordinate the fit, before the training stage starts (no training task, so no
task retries), or, where the driver does, by the tasks' own checks of their rows (dealt into the tasks'
partitions first where the frame's plan does not fix as many), judged before any round.

Bad params (every range-checked one) are in ``test_params.BAD``, with the check that no Spark job starts;
the in-process API's matrix is in ``tests/core/test_engine.py``."""

import numpy as np
import pytest
from pyspark.ml.linalg import Vectors, VectorUDT
from pyspark.sql.types import ArrayType, DoubleType, StringType, StructField, StructType

from core.engine import LocalEngine
from core.svc import fit_csvc
from spark_bsvm import CSVC, BudgetSVM, ElasticBudgetSVM, L0SVM, SlantSparsifier, SpSVM
from spark_bsvm.ml.estimators import CSVCModel

pytestmark = pytest.mark.spark

NAN, INF = float("nan"), float("inf")
VECTOR = StructType([StructField("features", VectorUDT()), StructField("label", DoubleType())])
ARRAY = StructType([StructField("features", ArrayType(DoubleType())), StructField("label", DoubleType())])
WEIGHTED = StructType(VECTOR.fields + [StructField("w", DoubleType())])
GOOD = [(Vectors.dense([0.0, 1.0]), 0.0), (Vectors.dense([1.0, 0.0]), 1.0)]


def dense(*rows):
    return [(Vectors.dense(x), label) for x, label in rows]


WEIGHT_MESSAGE = (r"weight column 'w' has 1 value\(s\) that are null, NaN, infinite or negative; weights must be "
                  r">= 0 and finite")
LABELS = r"binary classification needs exactly two label values, found {}; for more classes wrap the estimator " \
         r"in OneVsRest"
ONE_LABEL = r"binary classification needs exactly two label values, found 1: \[{}\]; every row has that label; " \
            r"within OneVsRest, which fits one model per class 0, 1, ..., up to the largest label, one of those " \
            r"classes has no rows: index the labels as 0 to k-1 \(StringIndexer\)"
VALUES = (r"features column 'features' has 1 row\(s\) with NaN, infinite or null values, or values above 1e\+100 in "
          r"magnitude \(the kernels' squared norms overflow\); drop or impute those rows "
          r"\(pyspark.ml.feature.Imputer\), or rescale the features \(pyspark.ml.feature.StandardScaler\)")
SIZES = r"features column 'features' holds vectors of different sizes \({} to {} entries\); assemble every row " \
        r"with the same features"

# (case, schema, rows, estimator params, the whole message)
MATRIX = [
    ("empty", VECTOR, [], {}, r"the training data is empty: the DataFrame has no rows"),
    ("one row", VECTOR, GOOD[:1], {}, ONE_LABEL.format("0.0")),
    ("one class", VECTOR, dense(([0.0, 1.0], 1.0), ([2.0, 1.0], 1.0)), {}, ONE_LABEL.format("1.0")),
    ("three classes", VECTOR, GOOD + dense(([2.0, 2.0], 2.0)), {}, LABELS.format(r"3: \[0.0, 1.0, 2.0\]")),
    ("NaN label", VECTOR, GOOD + dense(([2.0, 2.0], NAN)), {}, "labels contain NaN or infinite values; drop or fix "
                                                               "those rows"),
    ("null label", VECTOR, GOOD + [(Vectors.dense([2.0, 2.0]), None)], {},
     r"label column 'label' has 1 null value\(s\); drop or fill those rows"),
    ("string labels", StructType([VECTOR.fields[0], StructField("label", StringType())]),
     [(Vectors.dense([0.0, 1.0]), "a"), (Vectors.dense([1.0, 0.0]), "b"), (Vectors.dense([1.0, 1.0]), "c")], {},
     LABELS.format(r"3: \['a', 'b', 'c'\]")),
    ("null features", VECTOR, GOOD + [(None, 1.0)], {},
     r"features column 'features' has 1 null value\(s\); drop or impute those rows"),
    ("NaN feature", VECTOR, GOOD + dense(([NAN, 1.0], 1.0)), {}, VALUES),
    ("inf feature, sparse", VECTOR, GOOD + [(Vectors.sparse(2, [1], [INF]), 1.0)], {}, VALUES),
    ("-inf feature, array", ARRAY, [([0.0, 1.0], 0.0), ([1.0, -INF], 1.0)], {}, VALUES),
    # finite, but the kernels' squared norms overflow: a fit stalled on such rows (1e120: finite moments)
    ("too large feature", VECTOR, GOOD + dense(([1e120, 1.0], 1.0)), {}, VALUES),
    ("too large feature, sparse", VECTOR, GOOD + [(Vectors.sparse(2, [1], [-1e160]), 1.0)], {}, VALUES),
    ("too large feature, array", ARRAY, [([0.0, 1.0], 0.0), ([1.0, 1e120], 1.0)], {}, VALUES),
    ("null in an array", ARRAY, [([0.0, 1.0], 0.0), ([1.0, None], 1.0)], {}, VALUES),
    ("sizes", VECTOR, GOOD + dense(([1.0, 2.0, 3.0], 1.0)), {}, SIZES.format(2, 3)),
    ("sizes, sparse", VECTOR, GOOD + [(Vectors.sparse(4, [3], [1.0]), 1.0)], {}, SIZES.format(2, 4)),
    ("sizes, array", ARRAY, [([0.0], 0.0), ([1.0, 2.0], 1.0)], {}, SIZES.format(1, 2)),
    ("no features", ARRAY, [([], 0.0), ([], 1.0)], {},
     "features column 'features' holds vectors of 0 entries: there are no features"),
    ("negative weight", WEIGHTED, [GOOD[0] + (1.0,), GOOD[1] + (-1.0,)], {"weightCol": "w"}, WEIGHT_MESSAGE),
    ("NaN weight", WEIGHTED, [GOOD[0] + (1.0,), GOOD[1] + (NAN,)], {"weightCol": "w"}, WEIGHT_MESSAGE),
    ("inf weight", WEIGHTED, [GOOD[0] + (1.0,), GOOD[1] + (INF,)], {"weightCol": "w"}, WEIGHT_MESSAGE),
    ("null weight", WEIGHTED, [GOOD[0] + (1.0,), GOOD[1] + (None,)], {"weightCol": "w"}, WEIGHT_MESSAGE),
    ("weights 0 for a label", WEIGHTED, [GOOD[0] + (1.0,), GOOD[1] + (0.0,)], {"weightCol": "w"},
     r"binary classification needs exactly two label values, found 1 among the rows of weight > 0: \[0.0\]; the "
     r"rows of weight 0 are dropped \(they contribute nothing\), so give some rows of each label a positive weight"),
    ("all weights 0", WEIGHTED, [GOOD[0] + (0.0,), GOOD[1] + (0.0,)], {"weightCol": "w"},
     r"the training data is empty: the DataFrame has no rows of weight > 0 \(the rows of weight 0 are dropped: "
     r"they contribute nothing\)"),
]


def _refused(estimator, df, message, caplog, by_tasks=False):
    """``estimator.fit(df)`` raises the one line ``message``: before any training stage, or (``by_tasks``) at
    the coordinator's judgment of the training tasks' own checks, before any task trained."""
    with caplog.at_level("INFO", logger="spark_bsvm"):
        with pytest.raises(ValueError, match=f"^{message}$") as raised:
            estimator.fit(df)
    assert "\n" not in str(raised.value)
    if by_tasks:
        assert "the training tasks check their rows" in caplog.text and "training tasks connected" not in caplog.text
    else:
        assert "starting" not in caplog.text and "training tasks" not in caplog.text  # no training stage


@pytest.mark.parametrize("calibration", [0.0, 0.4])
@pytest.mark.parametrize("schema, rows, params, message", [case[1:] for case in MATRIX],
                         ids=[case[0] for case in MATRIX])
def test_bad_data_is_refused_with_one_line_before_training(spark, schema, rows, params, message, calibration,
                                                           caplog):
    """Also where a bad row may fall among the calibration rows, which no training stage reads (they were
    used as they were: a third label as the negative class)."""
    df = spark.createDataFrame(rows, schema).repartition(2)
    _refused(CSVC(gamma=1.0, numPartitions=2, coordinatorMode="executor", calibrationFraction=calibration,
                  **params), df, message, caplog)


def test_calibrating_a_model_checks_the_rows_and_their_labels(spark):
    model = CSVC(gamma=1.0).fit(spark.createDataFrame(GOOD * 4, VECTOR))
    with pytest.raises(ValueError, match="^" + VALUES + "$"):
        model.calibrate(spark.createDataFrame(GOOD + dense(([NAN, 1.0], 1.0)), VECTOR))
    with pytest.raises(ValueError, match=r"the calibration rows' label values \[0.0, 2.0\] are not the model's"):
        model.calibrate(spark.createDataFrame(dense(([0.0, 1.0], 0.0), ([1.0, 0.0], 2.0)), VECTOR))
    with pytest.raises(ValueError, match="the calibration rows have 3 features, the model 2"):
        model.calibrate(spark.createDataFrame(dense(([0.0, 1.0, 0.0], 0.0), ([1.0, 0.0, 0.0], 1.0)), VECTOR))
    assert model.calibrate(spark.createDataFrame(GOOD * 3, VECTOR)).platt is not None


@pytest.mark.parametrize("schema, rows, params, message", [case[1:] for case in MATRIX],
                         ids=[case[0] for case in MATRIX])
def test_bad_data_is_refused_with_the_same_line_by_the_training_tasks_own_checks(spark, schema, rows, params,
                                                                                  message, caplog, monkeypatch):
    """As many partitions as tasks: the tasks check their rows, no job of checks runs (it would fail this
    test), the coordinator's judgment raises the same line, and the stage ends before any round, no task
    failed."""
    from spark_bsvm.engine import stage

    monkeypatch.setattr(stage, "check_training_data", lambda *args: pytest.fail("a job of checks ran"))
    df = spark.sparkContext.parallelize(rows, 2).toDF(schema)
    with caplog.at_level("INFO", logger="spark_bsvm"):
        with pytest.raises(ValueError, match=f"^{message}$") as raised:
            CSVC(gamma=1.0, numPartitions=2, **params).fit(df)
    assert "\n" not in str(raised.value)
    assert "the training tasks check their rows" in caplog.text and "training tasks connected" not in caplog.text
    assert "starting the training stage again" not in caplog.text


@pytest.fixture(scope="module")
def reference_path(tmp_path_factory):
    X, y = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0]]), np.array([0.0, 1.0, 1.0, 0.0])
    path = str(tmp_path_factory.mktemp("reference") / "csvc")
    CSVCModel(fit_csvc(LocalEngine(X, y))).write().save(path)
    return path


@pytest.mark.parametrize("case", ["NaN feature", "sizes, sparse"])
@pytest.mark.parametrize("estimator", [BudgetSVM, SpSVM, L0SVM, ElasticBudgetSVM, SlantSparsifier],
                         ids=lambda cls: cls.__name__)
def test_every_estimator_checks_the_values_up_front(spark, estimator, case, reference_path, caplog):
    (schema, rows, _, message), = [c[1:] for c in MATRIX if c[0] == case]
    df = spark.createDataFrame(rows, schema)
    reference = {"referenceModelPath": reference_path} if estimator is SlantSparsifier else {}
    # the frame's 2 partitions dealt into the one task's: its checks judge the rows
    _refused(estimator(numPartitions=1, **reference), df, message, caplog, by_tasks=True)


def test_calibration_counts_the_rows_by_their_weights(spark):
    """Platt's sigmoid took every calibration row once, whatever its weight."""
    from core.platt import fit_platt

    rng = np.random.default_rng(3)
    X = rng.standard_normal((60, 2))
    labels = (X[:, 0] + 0.5 * rng.standard_normal(60) > 0).astype(float)
    weights = rng.integers(1, 6, 60).astype(float)
    frame = spark.createDataFrame([(Vectors.dense(x), float(l), float(w)) for x, l, w in zip(X, labels, weights)],
                                  WEIGHTED)
    model = CSVC(gamma=1.0, weightCol="w").fit(frame).calibrate(frame)
    f = model.expansion.decision_function(X)
    np.testing.assert_allclose(model.platt, fit_platt(f, np.where(labels > 0, 1.0, -1.0), weights), rtol=1e-9)
    assert not np.allclose(model.platt, fit_platt(f, np.where(labels > 0, 1.0, -1.0)), rtol=1e-3)


def test_calibration_drops_the_rows_of_weight_0_as_the_fit_does(spark):
    """``fit`` took a frame with weights of 0, ``calibrate`` refused the same frame."""
    from core.platt import fit_platt

    rng = np.random.default_rng(4)
    X = rng.standard_normal((40, 2))
    labels = (X[:, 0] + 0.5 * rng.standard_normal(40) > 0).astype(float)
    weights = np.where(np.arange(40) % 5 == 0, 0.0, 1.0)
    frame = spark.createDataFrame([(Vectors.dense(x), float(l), float(w)) for x, l, w in zip(X, labels, weights)],
                                  WEIGHTED)
    model = CSVC(gamma=1.0, weightCol="w").fit(frame).calibrate(frame)
    kept = weights > 0
    f = model.expansion.decision_function(X[kept])
    np.testing.assert_allclose(model.platt, fit_platt(f, np.where(labels[kept] > 0, 1.0, -1.0)), rtol=1e-9)


def test_calibration_rows_without_a_label_are_refused_before_training(spark, caplog):
    """Seed 0 holds out 5 rows of label 0.0 only: Platt's sigmoid on them gave every row the same probability
    (A = 0), after the training stage; calibrationFraction 0.01 holds out no row, which failed after training."""
    rng = np.random.default_rng(4)
    rows = [(Vectors.dense(x), float(i < 2)) for i, x in enumerate(rng.standard_normal((24, 2)))]
    frame = spark.createDataFrame(rows, VECTOR)
    _refused(CSVC(gamma=1.0, calibrationFraction=0.3, seed=0), frame,
             r"the calibration rows \(calibrationFraction=0.3, seed 0: 5 row\(s\)\) hold no row of label 1.0, and "
             r"Platt's sigmoid needs both; raise calibrationFraction, use more rows of that label, or fit with "
             r"calibrationFraction=0 and call model.calibrate\(held_out_df\)", caplog)
    with pytest.raises(ValueError, match=r"0 row\(s\)\) hold no row of label 0.0 or 1.0"):
        CSVC(gamma=1.0, calibrationFraction=0.01).fit(frame)
    assert CSVC(gamma=1.0, calibrationFraction=0.3, seed=1).fit(frame).platt is not None  # both labels held out
