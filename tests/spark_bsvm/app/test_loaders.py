"""Every loader on small generated files (values checked) and on the benchmark files (skipped when absent)."""

import gzip

import numpy as np
import pytest
from pyspark.ml import Pipeline
from pyspark.ml.linalg import Vectors, VectorUDT
from pyspark.sql.types import ArrayType, DoubleType, IntegerType, StringType, StructField, StructType

from core.benchmark_files import require
from spark_bsvm.app.config import SCHEMA
from spark_bsvm.app.loaders import load, with_scaling

pytestmark = pytest.mark.spark

DEFAULTS = {key: spec[1] for key, spec in SCHEMA["data"].items()}


def data(**values):
    """A [data] section: schema defaults with ``values``."""
    return dict(DEFAULTS, **values)


def encoded(loaded):
    """(X dense, labels) after fitting the loader's feature stages, rows in file order."""
    frame = Pipeline(stages=loaded.stages).fit(loaded.frame).transform(loaded.frame)
    rows = frame.select(loaded.features_col, "label").collect()
    return np.array([r[0].toArray() for r in rows]), np.array([r["label"] for r in rows])


def test_libsvm_text(spark, tmp_path):
    path = tmp_path / "small.svm"
    path.write_text("1 1:0.5 3:2\n-1 2:-1.5\n1 4:1\n")
    X, y = encoded(load(spark, data(source="libsvm", path=str(path), num_features=5)))
    assert np.array_equal(X, [[0.5, 0, 2, 0, 0], [0, -1.5, 0, 0, 0], [0, 0, 0, 1, 0]])
    assert list(y) == [1.0, -1.0, 1.0]


@pytest.mark.parametrize("label_column, gz", [(-1, True), (0, False)])
def test_csv_with_the_label_last_or_first_and_a_positive_class(spark, tmp_path, label_column, gz):
    rows = [[1.5, 2.0, 3], [0.0, -1.0, 2], [4.0, 5.0, 1]]  # features, class (covtype-like)
    lines = [",".join(map(str, r if label_column == -1 else [r[2]] + r[:2])) + "\n" for r in rows]
    path = tmp_path / ("c.data.gz" if gz else "c.csv")
    if gz:
        with gzip.open(path, "wt") as f:
            f.writelines(lines)
    else:
        path.write_text("".join(lines))
    X, y = encoded(load(spark, data(source="csv", path=str(path), label_column=label_column, positive_label=2)))
    assert np.array_equal(X, [[1.5, 2.0], [0.0, -1.0], [4.0, 5.0]])
    assert list(y) == [0.0, 1.0, 0.0]  # class 2 vs rest


def test_csv_label_position_out_of_range(spark, tmp_path):
    path = tmp_path / "c.csv"
    path.write_text("1,2\n")
    with pytest.raises(ValueError, match=r"label_column = 5 is not a column position .* \(2 columns\)"):
        load(spark, data(source="csv", path=str(path), label_column=5))


def test_csv_header_line_or_text_labels_are_named_from_the_first_row(spark, tmp_path):
    """Spark would fail the first job casting them (the fit's, after splitting and encoding) in a traceback."""
    path = tmp_path / "c.csv"
    path.write_text("x1,x2,class\n1.5,2.0,yes\n0.0,-1.0,no\n")
    with pytest.raises(ValueError, match=r"first row of .*c.csv has 'x1' where a feature's number should be: "
                                         r"remove its header line"):
        load(spark, data(source="csv", path=str(path)))
    path.write_text("1.5,2.0,yes\n0.0,-1.0,no\n")
    with pytest.raises(ValueError, match=r"has the label 'yes', which is no number: set \[data\] positive_label .*"
                                         r"--set data.positive_label=yes"):
        load(spark, data(source="csv", path=str(path)))
    X, y = encoded(load(spark, data(source="csv", path=str(path), positive_label="yes")))
    assert np.array_equal(X, [[1.5, 2.0], [0.0, -1.0]]) and list(y) == [1.0, 0.0]


def kdd_line(duration, protocol, service, flag, label):
    return ",".join([str(duration), protocol, service, flag] + ["1"] * 37 + [label]) + "\n"


def test_kddcup99_one_hot_encodes_the_symbolic_columns_and_deduplicates(spark, tmp_path):
    path = tmp_path / "kdd.csv"
    lines = [kdd_line(0, "tcp", "http", "SF", "normal."), kdd_line(5, "udp", "dns", "SF", "smurf."),
             kdd_line(0, "tcp", "http", "REJ", "neptune."), kdd_line(0, "tcp", "http", "SF", "normal.")]
    path.write_text("".join(lines))
    loaded = load(spark, data(source="kddcup99", path=str(path), positive_label="normal."))
    X, y = encoded(loaded)
    assert list(y) == [1.0, 0.0, 0.0, 1.0]
    # 38 numeric columns, then per symbolic column a slot for each seen value (2 each) and one for unseen
    assert X.shape == (4, 38 + 3 * 3)
    assert list(X[:, 0]) == [0.0, 5.0, 0.0, 0.0]
    onehot = X[:, 38:]
    assert np.all(onehot.sum(axis=1) == 3) and np.array_equal(onehot[0], onehot[3])
    assert not np.array_equal(onehot[0], onehot[2])  # only the flag differs
    assert loaded.frame.dropDuplicates().count() == 3


def test_kddcup99_refuses_a_file_with_other_columns(spark, tmp_path):
    path = tmp_path / "k.csv"
    path.write_text("1,2,3\n")
    with pytest.raises(ValueError, match=r"has 3 columns, KDD Cup 99 has 42"):
        load(spark, data(source="kddcup99", path=str(path)))


def test_parquet_with_a_vector_an_array_or_numeric_columns(spark, tmp_path):
    schema = StructType([StructField("vec", VectorUDT()), StructField("arr", ArrayType(DoubleType())),
                         StructField("x", DoubleType()), StructField("z", IntegerType()),
                         StructField("y", StringType())])
    frame = spark.createDataFrame([(Vectors.dense([1.0, 2.0]), [1.0, 2.0], 1.0, 2, "a"),
                                   (Vectors.sparse(2, [1], [3.0]), [0.0, 3.0], 0.0, 3, "b")], schema).coalesce(1)
    path = str(tmp_path / "p.parquet")
    frame.write.parquet(path)
    expected = [[1.0, 2.0], [0.0, 3.0]]
    for column in ("vec", "arr"):
        X, y = encoded(load(spark, data(source="parquet", path=path, label_column="y", features_column=column,
                                        positive_label="a")))
        assert np.array_equal(X, expected) and list(y) == [1.0, 0.0]
    X, y = encoded(load(spark, data(source="parquet", path=path, label_column="x", feature_columns=["z"])))
    assert np.array_equal(X, [[2.0], [3.0]]) and list(y) == [1.0, 0.0]
    with pytest.raises(ValueError, match=r"feature columns \['y'\] .* are missing or not numeric"):
        load(spark, data(source="parquet", path=path, label_column="x", feature_columns=["z", "y"]))
    with pytest.raises(ValueError, match=r"label_column = 'lbl' is not a column of"):
        load(spark, data(source="parquet", path=path, label_column="lbl"))


def test_forest_synthetic_is_written_once_and_reused(spark, tmp_path):
    path = str(tmp_path / "forest.parquet")
    config = data(source="forest_synthetic", path=path, rows=500, seed=4)
    X, y = encoded(load(spark, config))
    assert X.shape == (500, 54) and set(y) == {0.0, 1.0}
    stamp = (tmp_path / "forest.parquet").stat().st_mtime_ns
    X2, _ = encoded(load(spark, config))
    assert np.array_equal(X, X2) and (tmp_path / "forest.parquet").stat().st_mtime_ns == stamp
    X3, _ = encoded(load(spark, dict(config, seed=5)))  # other arguments rewrite the file
    assert not np.array_equal(X, X3)


def test_forest_synthetic_refuses_to_replace_a_file_it_did_not_write(spark, tmp_path):
    """conf/forest.toml with data.path set to the user's own Parquet file (data.source left at forest_synthetic)
    replaced that file with generated rows."""
    path = tmp_path / "mine.parquet"
    spark.createDataFrame([(1.0, 0.0), (2.0, 1.0)], ["a", "label"]).toPandas().to_parquet(path)
    before = path.read_bytes()
    with pytest.raises(ValueError, match=rf"\[data\] path {path} holds data that the forest_synthetic source did "
                                         r"not generate, and would be replaced by its rows: to train on it, set "
                                         r"data.source"):
        load(spark, data(source="forest_synthetic", path=str(path), rows=50))
    assert path.read_bytes() == before


def test_minmax_scaling_is_fitted_on_the_given_rows(spark, tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("0,10,1\n5,30,0\n10,20,1\n")
    X, _ = encoded(with_scaling(load(spark, data(source="csv", path=str(path))), "minmax"))
    assert np.allclose(X, [[0, 0], [0.5, 1], [1, 0.5]])


def test_unknown_source_and_missing_path(spark):
    with pytest.raises(ValueError, match=r"source 'xls' is unknown; use one of"):
        load(spark, data(source="xls"))
    with pytest.raises(ValueError, match=r"source 'csv' needs a path: set \[data\] path"):
        load(spark, data(source="csv"))


@pytest.mark.data
def test_covtype_subsample_label_first(spark):
    path = require("covtype", "covtype.binary.scale.subsample20k.csv", on_missing=pytest.skip)
    loaded = load(spark, data(source="csv", path=str(path), label_column=0, positive_label=2))
    frame = Pipeline(stages=loaded.stages).fit(loaded.frame).transform(loaded.frame)
    assert frame.count() == 20_000 and frame.filter("label = 1.0").count() == 9_814
    assert frame.first()[loaded.features_col].size == 54


@pytest.mark.data
def test_kddcup99_file(spark):
    path = require("kddcup99", "kddcup.data_10_percent.gz", on_missing=pytest.skip)
    frame = load(spark, data(source="kddcup99", path=str(path), positive_label="normal.")).frame.cache()
    try:
        assert frame.count() == 494_021 and frame.filter("label = 1.0").count() == 97_278
        # one fewer than the file's 145,586 distinct lines: de-duplication sees parsed, binary-labelled rows
        assert frame.dropDuplicates().count() == 145_585
    finally:
        frame.unpersist()


@pytest.mark.data
def test_libsvm_file(spark):
    path = require("a8a", "a8a", on_missing=pytest.skip)
    frame = load(spark, data(source="libsvm", path=str(path), num_features=123)).frame
    assert frame.count() == 22_696 and frame.first()["features"].size == 123
