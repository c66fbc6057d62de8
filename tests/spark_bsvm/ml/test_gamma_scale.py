"""gamma="scale", every estimator's default: scikit-learn's value, computed by the data's checks on Spark, the
same as in-process, recorded as a number by the fitted model and kept by save/load."""

import numpy as np
import pytest

from core.engine import LocalEngine
from core.kernels import KernelSpec
from core.spsvm import fit_spsvm
from spark_bsvm import BSVMModel, CSVC, BudgetSVM, ElasticBudgetSVM, L0SVM, SpSVM
from tests.conftest import rows_frame, to_df

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def data(spark):
    rng = np.random.default_rng(11)
    X = rng.normal(loc=3.0, scale=[0.5, 2.0, 4.0], size=(120, 3))
    labels = np.where(X[:, 0] + 0.2 * X[:, 1] > 3.5, 1.0, 0.0)
    return X, labels, to_df(spark, X, labels)


def test_the_default_gamma_is_scikit_learns_scale_and_spark_equals_local(data, tmp_path):
    sklearn_svm = pytest.importorskip("sklearn.svm")
    X, labels, df = data
    expected = sklearn_svm.SVC(gamma="scale").fit(X, labels)._gamma
    estimator = SpSVM(maxBasis=10, regParam=0.1, numPartitions=2)
    assert estimator.getGamma() == "scale"
    model = estimator.fit(df)
    assert model.getGamma() == pytest.approx(expected, rel=1e-11) and estimator.getGamma() == "scale"
    local = fit_spsvm(LocalEngine(X, labels, n_partitions=2), max_basis=10, lam=0.1, kernel=KernelSpec(gamma="scale"))
    assert local.kernel.gamma == pytest.approx(model.getGamma(), rel=1e-11)
    np.testing.assert_allclose(model.expansion.coef, local.coef, rtol=0, atol=1e-9)
    path = str(tmp_path / "spsvm")
    model.write().save(path)
    loaded = BSVMModel.load(path)
    assert loaded.getGamma() == model.getGamma() and loaded.expansion.kernel == model.expansion.kernel


@pytest.mark.parametrize("estimator", [CSVC(maxIter=50), BudgetSVM(budget=10, maxIter=50),
                                       ElasticBudgetSVM(budget=5, epochs=1), L0SVM(maxOuterIter=2, initialSize=20)],
                         ids=lambda e: type(e).__name__)
def test_every_estimator_fits_with_the_data_gamma(data, estimator):
    X, _, df = data
    model = estimator.setNumPartitions(1).fit(df)
    assert model.getGamma() == pytest.approx(1.0 / (3 * X.var()), rel=1e-11)


@pytest.mark.parametrize("mode", ["driver", "executor"])
def test_a_fit_with_validation_rows_gets_the_gamma_of_its_training_rows_alone(spark, data, mode):
    """The validation rows (validationIndicatorCol) are left out of gamma="scale" on Spark as in-process: the
    tasks' own checks judged by the driver's coordinator and the executors' fit's Spark job of checks alike.
    Here the validation rows are spread 3x as widely: counted, they would halve gamma."""
    from pyspark.ml.linalg import Vectors

    X, labels, _ = data
    held = np.arange(len(labels)) % 4 == 1
    X = np.where(held[:, None], 3.0 * X, X)
    training_gamma = LocalEngine(X[~held], labels[~held]).scale_gamma
    assert training_gamma > 1.5 * LocalEngine(X, labels).scale_gamma
    df = rows_frame(spark, [(Vectors.dense(x), float(l), bool(h)) for x, l, h in zip(X, labels, held)],
                    {"features": "vector", "label": "double", "held": "boolean"})
    model = SpSVM(maxBasis=5, regParam=0.1, kappa=4, seed=2, numPartitions=2, coordinatorMode=mode,
                  validationIndicatorCol="held").fit(df)
    local = fit_spsvm(LocalEngine(X, labels, n_partitions=2, validation=held), max_basis=5, lam=0.1,
                      kernel=KernelSpec(gamma="scale"), kappa=4, seed=2)
    assert model.getGamma() == pytest.approx(training_gamma, rel=1e-11)
    assert local.kernel.gamma == training_gamma
    np.testing.assert_allclose(model.expansion.coef, local.coef, rtol=0, atol=1e-9)


def test_an_explicit_gamma_is_kept_and_a_bad_one_is_named(data):
    assert CSVC(gamma=1.0, maxIter=50, numPartitions=1).fit(data[2]).getGamma() == 1.0
    with pytest.raises(TypeError, match="gamma must be a number > 0 or 'scale', got 'auto'"):
        CSVC(gamma="auto")


def test_the_variance_keeps_its_digits_beside_a_large_mean(spark, data):
    from spark_bsvm.engine.blocks import check_training_data

    X, labels, _ = data
    shifted = X + 1e6  # a naive sum(x^2) / n - mean^2 would lose the variance's digits to cancellation
    df = to_df(spark, shifted, labels).select("features", "label")
    summary = check_training_data(df, "features", "label")
    assert summary.scale_gamma == pytest.approx(1.0 / (3 * shifted.var()), rel=1e-9)


def test_sparse_mixed_and_array_rows_give_numpys_variance_and_the_same_checks(spark):
    """The checks' moments come per (label, partition, size) group from each partition's rows: sparse rows (their
    zeros counted), sparse and dense rows mixed, and an array<double> column all give Var(X) of numpy."""
    from pyspark.ml.linalg import Vectors

    from spark_bsvm.engine.blocks import check_training_data

    rng = np.random.default_rng(3)
    X = np.where(rng.random((90, 5)) < 0.6, 0.0, rng.normal(2.0, 3.0, size=(90, 5)))
    labels = (np.arange(90) % 3 == 0).astype(float)
    expected = float(f"{1.0 / (5 * X.var()):.12g}")

    def sparse(x):
        return Vectors.sparse(5, {j: v for j, v in enumerate(x) if v != 0.0})

    frames = {
        "sparse": [(sparse(x), float(l)) for x, l in zip(X, labels)],
        "mixed": [(sparse(x) if i % 2 else Vectors.dense(x), float(l)) for i, (x, l) in enumerate(zip(X, labels))],
        "array": [([float(v) for v in x], float(l)) for x, l in zip(X, labels)],
    }
    for name, rows in frames.items():
        df = rows_frame(spark, rows, {"features": "array" if name == "array" else "vector", "label": "double"}, 3)
        summary = check_training_data(df, "features", "label")
        assert (summary.n_rows, summary.n_features, summary.classes) == (90, 5, [0.0, 1.0]), name
        assert summary.scale_gamma == pytest.approx(expected, rel=1e-11), name
        assert sum(summary.partition_rows.values()) == 90, name


def test_an_array_row_with_a_null_entry_is_counted_not_a_failed_job(spark):
    from spark_bsvm.engine.blocks import check_training_data

    rows = [([1.0, 2.0], 0.0), ([1.0, None], 1.0), ([3.0, float("nan")], 1.0), ([2.0, 2.0], 1.0)]
    df = spark.createDataFrame(rows, "features array<double>, label double")
    with pytest.raises(ValueError, match="has 2 row\\(s\\) with NaN, infinite or null values"):
        check_training_data(df, "features", "label")
