"""Shared fixtures: the benchmark files of ../shared/data (skipped when absent), one local
Spark session for all Spark tests (startup costs ~10 s) and one Spark Connect session for the
Connect tests, which run last (pyspark holds one kind of session per process)."""

import contextlib
import logging
import os
import sys
import threading
import time
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from core import benchmark_files
from core.rows import as_rows, to_dense


def load_libsvm(*parts, n_features):
    """A LIBSVM-format benchmark file as (CSR, labels); skips the test when it is absent."""
    return benchmark_files.load_libsvm(*parts, n_features=n_features, on_missing=pytest.skip)


@pytest.fixture(scope="session")
def ripley():
    """Ripley's synthetic set: (X_train, y_train, X_test, y_test), labels 0/1."""
    return benchmark_files.load_ripley(on_missing=pytest.skip)


@pytest.fixture(scope="session")
def ijcnn1_subset():
    """10,000 random rows of ijcnn1 (seed 0) and 10,000 random rows of ijcnn1.t, dense."""
    X, y = load_libsvm("ijcnn1", "ijcnn1", n_features=22)
    Xt, yt = load_libsvm("ijcnn1", "ijcnn1.t", n_features=22)
    rng = np.random.default_rng(0)
    tr = np.sort(rng.choice(X.shape[0], 10_000, replace=False))
    te = np.sort(rng.choice(Xt.shape[0], 10_000, replace=False))
    return X[tr].toarray(), y[tr], Xt[te].toarray(), yt[te]


@pytest.fixture(scope="session")
def a8a():
    """a8a train and test, CSR sparse with 123 features."""
    X, y = load_libsvm("a8a", "a8a", n_features=123)
    Xt, yt = load_libsvm("a8a", "a8a.t", n_features=123)
    return X, y, Xt, yt

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


@pytest.fixture(scope="session")
def connect_spark():
    """A Spark Connect session on pyspark's local Connect server (``remote("local[2]")``).

    pyspark runs one kind of session per process (Connect mode is process-wide), so this stops the
    classic session first; ``pytest_collection_modifyitems`` runs the tests that use this fixture
    after all others."""
    pytest.importorskip("grpc", reason="Spark Connect needs pip install -e '.[connect]'")
    from pyspark.sql import SparkSession

    classic = SparkSession.getActiveSession()
    if classic is not None:
        classic.stop()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    with warnings.catch_warnings():  # the server starts with the static confs; the client cannot set them again
        warnings.filterwarnings("ignore", message="Failed to set spark")
        session = (SparkSession.builder.remote("local[2]").appName("spark-bsvm-connect-tests")
                   .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
                   .config("spark.driver.memory", "2g").getOrCreate())
    yield session
    session.stop()


# marker -> the fixtures that make a test need it: the README's quick subset, -m "not spark and not data",
# must start no JVM and read no benchmark file
MARKED_FIXTURES = {"spark": ("spark", "connect_spark"), "data": ("ripley", "ijcnn1_subset", "a8a")}


def pytest_collection_modifyitems(items):
    """The Spark Connect tests last (see ``connect_spark``); the order is stable otherwise.  A test using a
    fixture of ``MARKED_FIXTURES`` without its marker is a usage error."""
    unmarked = [f"{item.nodeid} (needs @pytest.mark.{marker})" for item in items
                for marker, fixtures in MARKED_FIXTURES.items()
                if set(fixtures) & set(getattr(item, "fixturenames", ())) and item.get_closest_marker(marker) is None]
    if unmarked:
        raise pytest.UsageError("tests without the marker of the fixtures they use: " + ", ".join(unmarked))
    items.sort(key=lambda item: "connect_spark" in getattr(item, "fixturenames", ()))


def wide_rows(n, p, stored, seed):
    """n CSR rows of p features, as text or hashed features give them (``tests/core/test_wide_rows.py``): about
    ``stored`` entries a row, 4 of them among 40 features that decide the labels (+-1, half each)."""
    rng = np.random.default_rng(seed)
    informative = rng.choice(p, 40, replace=False)
    features = [np.union1d(rng.choice(informative, 4, replace=False), rng.choice(p, stored - 4, replace=False))
                for _ in range(n)]
    indptr = np.concatenate([[0], np.cumsum([f.size for f in features])])
    X = as_rows(sp.csr_matrix((rng.standard_normal(indptr[-1]), np.concatenate(features), indptr), shape=(n, p)))
    w = np.zeros(p)
    w[informative] = rng.standard_normal(40)
    scores = X @ w
    return X, np.where(scores > np.median(scores), 1.0, -1.0)


def contiguous_frame(spark, X, labels, n_partitions=2, sizes=None):
    """A (features vector, label) DataFrame whose partitions are LocalEngine's contiguous blocks (or blocks of
    ``sizes`` rows, 0 allowed), built without RDDs so that Spark Connect sessions can make it too."""
    import pyarrow as pa
    from pyspark.ml.functions import array_to_vector

    X, labels = np.asarray(X, np.float64), np.asarray(labels, np.float64)
    if sizes is None:
        bounds = np.linspace(0, len(labels), n_partitions + 1).astype(np.int64)
    else:
        bounds, n_partitions = np.concatenate([[0], np.cumsum(sizes)]), len(sizes)

    def blocks(batches):  # partition k of the range holds the one id k
        for batch in batches:
            for k in batch.column(0).to_pylist():
                lo, hi = bounds[k], bounds[k + 1]
                yield pa.RecordBatch.from_pydict({"features": X[lo:hi].tolist(), "label": labels[lo:hi]})

    frame = spark.range(0, n_partitions, 1, n_partitions).mapInArrow(blocks, "features array<double>, label double")
    return frame.withColumn("features", array_to_vector("features"))


def rows_frame(spark, rows, columns, n_partitions=2):
    """A DataFrame of the Python tuples ``rows``, split into ``n_partitions`` contiguous partitions; ``columns``
    maps each column's name to its type, "vector" (MLlib's vectors), "double", "boolean" or "array" (of
    doubles).  The schema is given, not inferred: inferring it runs a Spark job that reads a first row and
    stops, after which the frame's first job took 1.8-2.1 s against 0.2-0.3 s (40 rows, ``local[2]``)."""
    from pyspark.ml.linalg import VectorUDT
    from pyspark.sql.types import ArrayType, BooleanType, DoubleType, StructField, StructType

    types = {"vector": VectorUDT(), "double": DoubleType(), "boolean": BooleanType(), "array": ArrayType(DoubleType())}
    schema = StructType([StructField(name, types[kind]) for name, kind in columns.items()])
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, n_partitions), schema)


def to_df(spark, X, labels, n_partitions=2, weights=None):
    """A DataFrame of (features, label[, weight]) split into contiguous partitions like LocalEngine."""
    from pyspark.ml.linalg import Vectors

    rows = [(Vectors.dense(x), float(l)) if weights is None else (Vectors.dense(x), float(l), float(w))
            for x, l, w in zip(X, labels, weights if weights is not None else [None] * len(labels))]
    columns = {"features": "vector", "label": "double"} | ({} if weights is None else {"weight": "double"})
    return rows_frame(spark, rows, columns, n_partitions)


def rings_frame(spark, n, seed):
    """``make_rings(n, 4, seed)`` with MLlib's 0/1 labels: (X, labels, DataFrame of 2 partitions)."""
    from core.synthetic import make_rings

    X, y = make_rings(n, 4, seed=seed)
    labels = np.where(y > 0, 1.0, 0.0)
    return X, labels, to_df(spark, X, labels)


def _by_row(model):
    """A model's expansion as {row: summed coefficient}: ids are positions, rows are content."""
    terms = {}
    for row, coef in zip(to_dense(model.support_vectors), model.coef):
        terms[tuple(row)] = terms.get(tuple(row), 0.0) + coef
    return terms


def assert_same_model_by_rows(a, b, X_test, atol=1e-9):
    """Two models with the same expansion term by term (rows, not ids, name the terms: the same examples in
    another order have other ids), the same bias and the same predictions on ``X_test``."""
    terms_a, terms_b = _by_row(a), _by_row(b)
    assert set(terms_a) == set(terms_b)
    np.testing.assert_allclose([terms_b[r] for r in terms_a], list(terms_a.values()), rtol=0, atol=atol)
    assert b.bias == pytest.approx(a.bias, abs=atol)
    np.testing.assert_array_equal(a.predict(X_test), b.predict(X_test))


@contextlib.contextmanager
def working_directory(spark, path):
    """Run in ``path`` as a job started there would: Python's working directory and the one Spark resolves
    relative local paths against (the JVM's, fixed at its start otherwise) are both ``path``."""
    local = spark._jvm.org.apache.hadoop.fs.FileSystem.getLocal(spark._jsc.hadoopConfiguration())
    before, cwd = local.getWorkingDirectory(), os.getcwd()
    local.setWorkingDirectory(spark._jvm.org.apache.hadoop.fs.Path(str(path)))
    os.chdir(path)
    try:
        yield path
    finally:
        os.chdir(cwd)
        local.setWorkingDirectory(before)


@contextlib.contextmanager
def logged(text, logger="spark_bsvm.progress"):
    """A ``threading.Event`` set once ``logger`` logs a message containing ``text`` while the block runs: a test
    waits on the event itself (a fit's progress, a lock found held), not on a sleep or Spark's lagging tracker."""
    said = threading.Event()

    class Said(logging.Handler):
        def emit(self, record):
            if text in record.getMessage():
                said.set()

    handler = Said()
    logging.getLogger(logger).addHandler(handler)
    try:
        yield said
    finally:
        logging.getLogger(logger).removeHandler(handler)


def wait_until(done, seconds=30.0, step=lambda: time.sleep(0.05)):
    """Call ``step`` (a short sleep, or a poll of what ``done`` looks at) until ``done()``, for at most ``seconds``;
    whether ``done()`` came true.  A test waits for what another thread or process does this way, never without
    an end: a broken test fails, it does not hang the suite."""
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() >= deadline:
            return False
        step()
    return True
