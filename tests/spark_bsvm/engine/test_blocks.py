"""Sparse and mixed dense/sparse feature vectors: Arrow -> CSR in the training task, and a fit on them."""

import re

import numpy as np
import pyarrow as pa
import pytest
import scipy.sparse as sp

from core.engine import LocalEngine
from core.kernels import KernelSpec, scale_gamma
from core.rows import dense_enough
from core.spsvm import fit_spsvm
from core.svc import fit_csvc
from spark_bsvm import CSVC, SpSVM
from spark_bsvm.engine import SparkEngine
from spark_bsvm.engine import wire
from spark_bsvm.engine.blocks import declared_features, rows_from_arrow
from tests.conftest import rows_frame, wide_rows

pytestmark = pytest.mark.spark

_VECTOR = pa.struct([("type", pa.int8()), ("size", pa.int32()), ("indices", pa.list_(pa.int32())),
                     ("values", pa.list_(pa.float64()))])


def _arrow_vectors(X, dense_rows, explicit_zeros=()):
    """Spark's VectorUDT layout in Arrow: rows in ``dense_rows`` dense, the others sparse (those in
    ``explicit_zeros`` storing their zeros too)."""
    records = []
    for i, x in enumerate(X):
        if i in dense_rows:
            records.append({"type": 1, "size": None, "indices": None, "values": x.tolist()})
        else:
            nz = np.arange(x.size) if i in explicit_zeros else np.flatnonzero(x)
            records.append({"type": 0, "size": x.size, "indices": nz.tolist(), "values": x[nz].tolist()})
    return pa.array(records, type=_VECTOR)


def test_mixed_dense_and_sparse_vectors_become_the_same_csr_block():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((40, 7)) * (rng.random((40, 7)) < 0.3)
    X[5] = 0.0  # an all-zero row, once sparse (no entries) and once dense
    X[6] = 0.0
    column = _arrow_vectors(X, dense_rows={0, 6, 11, 12, 39})
    rows = rows_from_arrow(column, 7)
    assert sp.issparse(rows)
    np.testing.assert_array_equal(rows.toarray(), X)
    # a slice of the column (Arrow offsets) converts to the matching rows
    np.testing.assert_array_equal(rows_from_arrow(column.slice(10, 20), 7).toarray(), X[10:30])
    # dense=True (DataSummary.dense): the same rows as one dense array
    dense = rows_from_arrow(column, 7, dense=True)
    assert isinstance(dense, np.ndarray) and dense.flags.c_contiguous
    np.testing.assert_array_equal(dense, X)


def test_sparse_vectors_alone_become_the_csr_block_of_their_nonzero_values():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((30, 6)) * (rng.random((30, 6)) < 0.4)
    X[3] = 0.0
    for zeros in ((), (2, 3, 17)):  # Arrow's lists taken as they are; with explicit zeros, the zeros dropped
        column = _arrow_vectors(X, dense_rows=(), explicit_zeros=zeros)
        for lo, hi in ((0, 30), (5, 26)):
            rows = rows_from_arrow(column.slice(lo, hi - lo), 6)
            assert sp.issparse(rows) and rows.has_canonical_format and rows.nnz == np.count_nonzero(X[lo:hi])
            # the task's own memory, not Arrow's read-only buffers (numba would compile its kernels again)
            assert all(a.flags.writeable for a in (rows.data, rows.indices, rows.indptr))
            np.testing.assert_array_equal(rows.toarray(), X[lo:hi])
        np.testing.assert_array_equal(rows_from_arrow(column, 6, dense=True), X)


@pytest.mark.parametrize("kind", ["sparse", "sparse_with_zeros", "mixed", "dense_vectors", "lists"])
def test_the_batches_of_a_task_become_the_block_of_their_rows_in_order(kind):
    """A chunked column (a task's Arrow batches, some empty, one a slice) gives the block of the whole column
    as one array, in writable arrays of the task's own."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((50, 6)) * (rng.random((50, 6)) < 0.4)
    X[7] = 0.0
    if kind == "lists":
        column = pa.array(X.tolist(), pa.list_(pa.float64()))
    else:
        dense_rows = {"mixed": {0, 7, 30}, "dense_vectors": range(50)}.get(kind, ())
        column = _arrow_vectors(X, dense_rows, explicit_zeros=(4, 33) if kind == "sparse_with_zeros" else ())
    whole = rows_from_arrow(column, 6)
    chunks = [column.slice(0, 0), column.slice(0, 20), column.slice(20, 0), column.slice(20, 30)]
    rows = rows_from_arrow(pa.chunked_array(chunks, column.type), 6)
    assert sp.issparse(rows) == sp.issparse(whole) == (kind not in ("dense_vectors", "lists"))
    arrays = (rows.data, rows.indices, rows.indptr) if sp.issparse(rows) else (rows,)
    assert all(a.flags.writeable for a in arrays)
    if sp.issparse(rows):
        assert rows.has_canonical_format and rows.indices.dtype == whole.indices.dtype
    np.testing.assert_array_equal(_dense(rows), X)
    np.testing.assert_array_equal(_dense(whole), X)
    np.testing.assert_array_equal(rows_from_arrow(pa.chunked_array([], column.type), 6, dense=True),
                                  np.zeros((0, 6)))


def test_a_tasks_rows_are_read_once_for_its_checks_and_its_block():
    """``partition_rows``: the checks' groups of a task's batches (per label: rows, and the nonzeros, the mean and
    the sum of squared deviations about it of all the rows' values, the zeros of sparse rows included), and a
    CSR block made of the very arrays the checks read (the batches converted once)."""
    from spark_bsvm.engine.blocks import partition_block, partition_groups, partition_rows

    rng = np.random.default_rng(6)
    X = rng.standard_normal((60, 5)) * (rng.random((60, 5)) < 0.5)
    X[:, 0] += 3.0  # every row stores an entry
    y = np.where(rng.random(60) < 0.4, 2.0, 7.0)
    features = _arrow_vectors(X, dense_rows=())
    batches = [pa.RecordBatch.from_arrays([features.slice(lo, 20), pa.array(y[lo:lo + 20])], ["features", "label"])
               for lo in (0, 20, 40)]
    partition = partition_rows(iter(batches))
    groups = {g["label"]: g for g in partition_groups(partition, 3)}
    assert set(groups) == {2.0, 7.0}
    for label, g in groups.items():
        rows = X[y == label]
        assert (g["partition"], g["size"], g["rows"], g["bad_values"], g["null_features"]) == (3, 5, len(rows), 0, 0)
        assert g["nonzeros"] == np.count_nonzero(rows)
        assert g["mean"] == pytest.approx(rows.mean(), rel=1e-12)
        assert g["squares"] == pytest.approx(((rows - rows.mean()) ** 2).sum(), rel=1e-12)
    data = partition_block(partition, 3, 5, [2.0, 7.0], has_weight=False)
    assert np.shares_memory(data.rows.data, partition.features.values)
    np.testing.assert_array_equal(data.rows.toarray(), X)
    np.testing.assert_array_equal(data.y, np.where(y == 7.0, 1.0, -1.0))


def test_a_tasks_checks_of_rows_of_a_million_features_are_a_few_numbers():
    """What a task sends of its checks does not grow with the features: rows of 2^20 features, ~20 stored a row
    (text, hashed features), give groups of a few numbers each (their moments those of every value), where every
    feature's moments took 24 MB a group on the wire, and the driver held them all."""
    from spark_bsvm.engine.blocks import partition_groups, partition_rows

    X, y = wide_rows(50, 1 << 20, 20, seed=4)
    records = [{"type": 0, "size": X.shape[1], "indices": X.indices[lo:hi].tolist(), "values": X.data[lo:hi].tolist()}
               for lo, hi in zip(X.indptr[:-1], X.indptr[1:])]
    batch = pa.RecordBatch.from_arrays([pa.array(records, type=_VECTOR), pa.array(y)], ["features", "label"])
    groups = partition_groups(partition_rows(iter([batch])), 0)
    assert len(wire.encode({wire.GROUPS: groups})) < 2000
    for g in groups:
        rows = X[y == g["label"]]
        mean = rows.sum() / (rows.shape[0] * rows.shape[1])
        assert (g["rows"], g["size"], g["nonzeros"]) == (rows.shape[0], 1 << 20, rows.nnz)
        assert g["mean"] == pytest.approx(mean, rel=1e-12)
        # the zeros' deviations, then the stored values'
        squares = (rows.shape[0] * rows.shape[1] - rows.nnz) * mean ** 2 + ((rows.data - mean) ** 2).sum()
        assert g["squares"] == pytest.approx(squares, rel=1e-9)


@pytest.mark.parametrize("nonzero", [0.2, 0.7], ids=["sparse_rows_csr", "mostly_nonzero_rows_dense"])
def test_spark_fit_on_mixed_vectors_equals_the_local_fit(spark, nonzero):
    """Rows stored as sparse and dense vectors in turn (as VectorAssembler stores them): the tasks hold a CSR
    block of rows 20% nonzero and a dense block of rows 70% nonzero (``DataSummary.dense``), as
    ``LocalEngine`` holds the same rows."""
    from pyspark.ml.linalg import Vectors

    rng = np.random.default_rng(4)
    X = rng.standard_normal((300, 30)) * (rng.random((300, 30)) < nonzero)
    y = np.where(X[:, :5].sum(axis=1) + 0.3 * rng.standard_normal(300) > 0.0, 1.0, -1.0)
    rows = [(Vectors.sparse(30, np.flatnonzero(x).tolist(), x[x != 0].tolist()) if i % 7 else Vectors.dense(x),
             float(label)) for i, (x, label) in enumerate(zip(X, y))]
    df = rows_frame(spark, rows, {"features": "vector", "label": "double"})
    kernel = KernelSpec("rbf", gamma=0.1)
    with SparkEngine(df, num_partitions=2) as engine:
        on_spark = fit_csvc(engine, C=2.0, kernel=kernel, tol=1e-6)
    local = fit_csvc(LocalEngine(sp.csr_matrix(X), y, n_partitions=2), C=2.0, kernel=kernel, tol=1e-6)
    assert sp.issparse(on_spark.support_vectors) == (nonzero < 0.5) == sp.issparse(local.support_vectors)
    np.testing.assert_array_equal(_dense(on_spark.support_vectors), _dense(local.support_vectors))
    np.testing.assert_allclose(on_spark.coef, local.coef, rtol=0, atol=1e-9)


WIDE_KERNEL = KernelSpec("rbf", gamma=0.05)  # ||x - z||^2 ~ 40: values far from 0, labels learnt
WIDE_FITS = {  # an estimator on Spark and the core fit it runs, on LocalEngine
    "csvc": (CSVC(C=1.0, gamma=0.05, numPartitions=2), lambda engine: fit_csvc(engine, C=1.0, kernel=WIDE_KERNEL)),
    "spsvm": (SpSVM(maxBasis=20, regParam=1e-3, gamma=0.05, kappa=5, seed=3, numPartitions=2),
              lambda engine: fit_spsvm(engine, max_basis=20, lam=1e-3, kernel=WIDE_KERNEL, kappa=5, seed=3))}


@pytest.mark.parametrize("method", sorted(WIDE_FITS))
def test_spark_fit_and_transform_of_rows_of_a_million_features_equal_the_local_ones(spark, method):
    """Sparse vectors of 2^20 features, ~20 stored a row (text, hashed features): the tasks' CSR blocks give the
    model ``LocalEngine`` gives (its support vectors sparse, of every feature), and transform scores the rows as
    the model's ``decision_function`` does in this process (``tests/core/test_wide_rows.py``: without a dense
    array of their width)."""
    from pyspark.ml.linalg import Vectors

    X, y = wide_rows(300, 1 << 20, 20, seed=9)
    labels = np.where(y > 0, 1.0, 0.0)
    rows = [(Vectors.sparse(X.shape[1], X.indices[lo:hi], X.data[lo:hi]), float(label))
            for lo, hi, label in zip(X.indptr[:-1], X.indptr[1:], labels)]
    df = rows_frame(spark, rows, {"features": "vector", "label": "double"})
    estimator, fit = WIDE_FITS[method]
    model = estimator.fit(df)
    local = fit(LocalEngine(X, labels, n_partitions=2))
    on_spark = model.expansion
    assert sp.issparse(on_spark.support_vectors) and on_spark.support_vectors.shape == (local.n_support, 1 << 20)
    assert (on_spark.support_vectors != local.support_vectors).nnz == 0
    np.testing.assert_allclose(on_spark.coef, local.coef, rtol=0, atol=1e-9)
    assert on_spark.bias == pytest.approx(local.bias, abs=1e-9)
    scored = np.array([r.rawPrediction[1] for r in model.transform(df).select("rawPrediction").collect()])
    np.testing.assert_allclose(scored, on_spark.decision_function(X), rtol=0, atol=1e-12)
    assert np.mean((scored > 0) == (labels > 0)) > 0.75


def _dense(rows):
    return rows.toarray() if sp.issparse(rows) else rows


def test_a_list_column_becomes_a_dense_block_and_its_sizes_are_checked():
    X = np.arange(12.0).reshape(4, 3)
    for rows in (rows_from_arrow(pa.array(X.tolist(), pa.list_(pa.float64())), 3),
                 rows_from_arrow(_arrow_vectors(X, dense_rows=range(4)), 3)):  # dense vectors alike
        np.testing.assert_array_equal(rows, X)
        assert rows.flags.writeable and rows.flags.c_contiguous
    with pytest.raises(ValueError, match=r"must all have 3 entries, found sizes \[2\]; assemble the features as"):
        rows_from_arrow(pa.array([[1.0, 2.0, 3.0], [1.0, 2.0]], pa.list_(pa.float64())), 3)
    with pytest.raises(ValueError, match=r"^the features column has 1 null value\(s\); drop or impute those rows$"):
        rows_from_arrow(pa.array([[1.0, 2.0, 3.0], None], pa.list_(pa.float64())), 3)


@pytest.mark.parametrize("element", ["double", "float"])
def test_array_features_train_like_vectors(spark, element):
    from pyspark.ml.functions import vector_to_array

    from core.synthetic import make_rings
    from tests.conftest import to_df

    X, y = make_rings(200, 4, seed=6)
    dtype = "float32" if element == "float" else "float64"
    arrays = to_df(spark, X, y).select(vector_to_array("features", dtype=dtype).alias("features"), "label")
    kernel = KernelSpec("rbf", gamma=0.5)
    with SparkEngine(arrays, num_partitions=2) as engine:
        on_arrays = fit_csvc(engine, C=1.0, kernel=kernel)
    expected = X.astype(np.float32).astype(np.float64) if element == "float" else X
    local = fit_csvc(LocalEngine(expected, y, n_partitions=2), C=1.0, kernel=kernel)
    np.testing.assert_array_equal(on_arrays.support_vectors, local.support_vectors)
    np.testing.assert_allclose(on_arrays.coef, local.coef, atol=1e-9)


@pytest.mark.parametrize("arrow", [True, False], ids=["arrow_udf", "pandas_udf"])
def test_scoring_tasks_size_numba_pool_to_the_task_cores(spark, arrow, monkeypatch):
    """Two tasks of one core each on two cores: each worker's pool at its default (two threads) would put
    four threads on the two cores."""
    import numba
    from pyspark.ml.linalg import Vectors
    from pyspark.sql import functions as F

    from spark_bsvm.engine.blocks import rows_column

    if not arrow:
        monkeypatch.delattr(F, "arrow_udf", raising=False)
    assert numba.config.NUMBA_NUM_THREADS >= 2 and int(spark.conf.get("spark.task.cpus", "1")) == 1
    df = spark.createDataFrame([(Vectors.dense([float(i), 1.0]),) for i in range(40)], ["features"]).repartition(2)
    column = rows_column(df, "features", 2, lambda X: {"threads": np.full(X.shape[0], numba.get_num_threads())},
                         "threads int")
    assert {row["t"] for row in df.select(column["threads"].alias("t")).collect()} == {1}


def _task_groups(prepared):
    """``partition_groups`` of each partition of ``prepared``, computed in its task and read back from the
    wire message it would send (``wire.GROUPS``)."""
    from pyspark import TaskContext

    def task(batches):
        from spark_bsvm.engine import wire
        from spark_bsvm.engine.blocks import partition_groups, partition_rows

        groups = partition_groups(partition_rows(batches), TaskContext.get().partitionId())
        yield pa.RecordBatch.from_pylist([{"groups": wire.encode({wire.GROUPS: groups})}])

    return [g for row in prepared.mapInArrow(task, "groups binary").collect()
            for g in wire.decode(row["groups"])[wire.GROUPS]]


def _judged(judge):
    try:
        return judge()
    except ValueError as exc:
        return str(exc)


def test_the_checks_job_and_the_tasks_own_checks_judge_rows_as_numpy_does(spark):
    """The checks' Spark job (``check_training_data``) and ``partition_groups`` in each training task, sent as
    its wire message and judged by ``judged_groups``, give the same ``DataSummary``, numpy's for clean rows
    (dense, sparse and mixed vectors, arrays, weights, a validation mark, string labels), or the same message
    naming each kind of bad row."""
    from pyspark.ml.linalg import Vectors, VectorUDT
    from pyspark.sql.types import (ArrayType, BooleanType, DoubleType, FloatType, StringType, StructField,
                                   StructType)

    import spark_bsvm.engine.blocks as blocks

    rng = np.random.default_rng(7)
    X = np.where(rng.random((80, 5)) < 0.4, 0.0, rng.normal(3.0, 2.0, size=(80, 5)))
    held = np.arange(80) % 5 == 0
    vector = StructType([StructField("features", VectorUDT()), StructField("label", DoubleType()),
                         StructField("weight", DoubleType()), StructField("validation", BooleanType())])
    clean = [(Vectors.sparse(5, {j: v for j, v in enumerate(x) if v}) if i % 3 else Vectors.dense(x),
              float(i % 2), 1.0 + i % 4, bool(held[i])) for i, x in enumerate(X)]
    good = clean[:6]
    weights = "^weight column 'weight' has 1 value\\(s\\) that are null, NaN, infinite or negative"
    bad_values = "^features column 'features' has 1 row\\(s\\) with NaN, infinite or null values"
    # rows, schema, the message with every column and with features and label alone (None: clean rows)
    cases = [(clean, vector, None, None),
             ([(r[0], r[1], r[2], None if i == 3 else r[3]) for i, r in enumerate(clean)], vector,
              "^the validation indicator column has 1 null value", None)]
    for bad, message, alone in [
            ((None, 1.0, 1.0, False), "^features column 'features' has 1 null value\\(s\\)", "same"),
            ((Vectors.dense([float("nan")] + [1.0] * 4), 1.0, 1.0, False), bad_values, "same"),
            ((Vectors.sparse(5, [2], [float("-inf")]), 0.0, 1.0, False), bad_values, "same"),
            ((Vectors.dense([1.0, 2.0]), 1.0, 1.0, False), "holds vectors of different sizes \\(2 to 5", "same"),
            ((Vectors.dense([1.0] * 5), None, 1.0, False), "^label column 'label' has 1 null value", "same"),
            ((Vectors.dense([1.0] * 5), 2.0, 1.0, False), "0.0, 1.0, 2.0", "same"),
            ((Vectors.dense([1.0] * 5), 1.0, -1.0, False), weights, "clean"),
            ((Vectors.dense([1.0] * 5), 1.0, None, False), weights, "clean"),
            ((Vectors.dense([1.0] * 5), 1.0, 0.0, False), "^weight column 'weight' has 1 weight\\(s\\) of 0", "clean"),
            ((Vectors.dense([1.0] * 5), 1.0, float("inf"), False), weights, "clean")]:
        cases.append((good + [bad], vector, message, message if alone == "same" else None))
    arrays = StructType([StructField("features", ArrayType(FloatType())), StructField("label", StringType())])
    cases.append(([(x.astype(float).tolist(), "yes" if i % 2 else "no") for i, x in enumerate(X)], arrays, None, None))
    null_entry = "^features column 'features' has 1 row\\(s\\) with NaN"
    cases.append(([(x.tolist(), "a") for x in X[:3]] + [([1.0, None, 2.0, 0.0, 1.0], "b"), ([], "b")], arrays,
                  null_entry, null_entry))
    for rows, schema, message, alone in cases:
        df = spark.createDataFrame(rows, schema)
        for columns, expected in ((list(schema.names), message), (["features", "label"], alone)):
            prepared = df.select(*columns).repartition(3)
            weight = "weight" if "weight" in columns else None
            job = _judged(lambda: blocks.check_training_data(prepared, "features", "label", weight))
            tasks = _judged(lambda: blocks.judged_groups(_task_groups(prepared), "validation" in columns, "features",
                                                         "label", weight))
            if expected is not None:
                assert isinstance(job, str) and re.search(expected, job), (columns, job)
                assert tasks == job
                continue
            assert not isinstance(job, str) and not isinstance(tasks, str), (columns, job, tasks)
            features = np.array([r[0].toArray() if schema is vector else np.float32(r[0]) for r in rows], float)
            marked = np.array([bool(r[3]) for r in rows]) if "validation" in columns else np.zeros(len(rows), bool)
            training = features[~marked]
            assert job.scale_gamma == pytest.approx(scale_gamma(5, training.var()), rel=1e-11)
            assert (job.n_rows, job.n_features, job.n_validation, sum(job.partition_rows.values()),
                    job.n_partitions) == (len(rows), 5, int(marked.sum()), len(rows), 3)
            assert job.dense == dense_enough(np.count_nonzero(features), *features.shape)
            assert set(job.classes) == {r[1] for r in rows}
            assert (tasks.scale_gamma, tasks.classes, tasks.n_rows, tasks.partition_rows, tasks.n_features,
                    tasks.n_validation, tasks.dense) == (job.scale_gamma, job.classes, job.n_rows, job.partition_rows,
                                                         job.n_features, job.n_validation, job.dense)


def test_a_features_column_declares_its_size_where_spark_ml_wrote_it(spark):
    """The bound of the stage's Arrow batches when the tasks check their rows: VectorAssembler's metadata, none
    for an array column or a vector column without metadata."""
    from pyspark.ml.feature import VectorAssembler
    from pyspark.ml.functions import array_to_vector

    df = spark.createDataFrame([(1.0, 2.0, 3.0, [1.0, 2.0])], ["a", "b", "c", "array"])
    assembled = VectorAssembler(inputCols=["a", "b", "c"], outputCol="features").transform(df)
    assert declared_features(assembled.schema["features"]) == 3
    assert declared_features(df.schema["array"]) is None
    assert declared_features(df.select(array_to_vector("array").alias("v")).schema["v"]) is None
