"""One local Spark session for all Spark tests (startup costs ~10 s)."""

import os
import sys

import pytest


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    # local[2, 3]: two task slots, and a failed task is retried (up to 3 attempts)
    session = (SparkSession.builder.master("local[2,3]").appName("spark-bsvm-tests")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
               .config("spark.driver.memory", "2g").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def to_df(spark, X, labels, n_partitions=2, weights=None):
    """A DataFrame of (features, label[, weight]) split into contiguous partitions like LocalEngine."""
    from pyspark.ml.linalg import Vectors

    rows = [(Vectors.dense(x), float(l)) if weights is None else (Vectors.dense(x), float(l), float(w))
            for x, l, w in zip(X, labels, weights if weights is not None else [None] * len(labels))]
    columns = ["features", "label"] + ([] if weights is None else ["weight"])
    return spark.sparkContext.parallelize(rows, n_partitions).toDF(columns)
