"""The training data as the barrier stage reads it: one non-empty, evenly sized partition per task, whatever
the input's partitioning."""

import logging

import numpy as np
import pytest

from core.engine import LocalEngine
from core.kernels import KernelSpec
from core.svc import fit_csvc
from core.synthetic import make_rings
from spark_bsvm.engine import SparkEngine
from spark_bsvm.engine.shared_results import SharedResults
from spark_bsvm.engine.stage import TrainingData
from tests.conftest import contiguous_frame

pytestmark = pytest.mark.spark
KERNEL = KernelSpec("rbf", gamma=0.5)


@pytest.fixture(scope="module")
def rings():
    return make_rings(400, 4, seed=5)


def partition_sizes(df):
    """Rows of each partition of ``df``, in partition order (empty ones too)."""
    from pyspark.sql import functions as F

    counts = dict(df.select(F.spark_partition_id().alias("p")).groupBy("p").count().collect())
    return [counts.get(p, 0) for p in range(max(counts) + 1)]


def fit(df):
    with SparkEngine(df) as engine:
        return engine.n_partitions, fit_csvc(engine, C=3.0, kernel=KERNEL, tol=1e-6)


@pytest.mark.parametrize("sizes", [[0, 400], [396, 4]], ids=["empty partition 0", "99% in partition 0"])
def test_empty_and_skewed_inputs_are_dealt_evenly_and_train(spark, rings, sizes, caplog):
    """By the checks' job (``TrainingData`` alone), and by the engine, whose tasks check their rows: its first
    stage ends at the judgment and a second one reads the rows dealt again."""
    X, y = rings
    df = contiguous_frame(spark, X, y, sizes=sizes)
    assert partition_sizes(df) == sizes
    assert partition_sizes(TrainingData(df).frame) in ([200, 200], [201, 199], [199, 201])
    caplog.set_level(logging.INFO)
    tasks, model = fit(df)
    assert "the partitions were uneven or empty; the rows are dealt into 2 partitions" in caplog.text
    # the same problem as LocalEngine's, on other partitions: the same optimum up to the solver's tolerance
    local = fit_csvc(LocalEngine(X, y, n_partitions=2), C=3.0, kernel=KERNEL, tol=1e-6)
    assert tasks == 2
    np.testing.assert_allclose(model.decision_function(X), local.decision_function(X), atol=1e-3)


@pytest.mark.parametrize("made", ["3 partitions", "an adaptive shuffle"])
def test_an_input_of_other_partitions_than_tasks_is_dealt_before_the_stage_whose_tasks_check_it(spark, rings, made,
                                                                                                caplog, monkeypatch):
    """A plan that fixes 3 partitions for 2 tasks, or whose adaptive shuffle makes its own as it runs: its rows are
    dealt into the tasks' partitions at once and checked by the tasks (no job of checks: the counts would
    only confirm the dealing, or seldom spare it), in one stage."""
    from spark_bsvm.engine import stage

    monkeypatch.setattr(stage, "check_training_data", lambda *args: pytest.fail("a job of checks ran"))
    X, y = rings
    df = contiguous_frame(spark, X, y, sizes=[150, 150, 100])
    if made == "an adaptive shuffle":
        df = df.repartition("label")
    caplog.set_level(logging.INFO)
    tasks, model = fit(df)
    assert ("the input has 3 partitions" if made == "3 partitions" else "as it runs") in caplog.text
    assert "its rows are dealt into 2" in caplog.text
    assert "uneven or empty" not in caplog.text  # no second stage
    local = fit_csvc(LocalEngine(X, y, n_partitions=2), C=3.0, kernel=KERNEL, tol=1e-6)
    assert tasks == 2
    np.testing.assert_allclose(model.decision_function(X), local.decision_function(X), atol=1e-3)
    shared = SharedResults()  # the fits of one fitMultiple call: one frame dealt, so one shuffle
    first, second = (TrainingData(df, checks_in_stage=True, shared_results=shared) for _ in range(2))
    assert first.checks_in_stage and second.checks_in_stage and first.frame is second.frame


def test_even_input_is_read_as_it_is_and_tiny_input_still_fills_every_task(spark, rings):
    X, y = rings
    even = contiguous_frame(spark, X, y, sizes=[210, 190])  # within 10% of the share: not worth a shuffle
    assert partition_sizes(TrainingData(even).frame) == [210, 190]
    # two rows in partitions 2 and 3: Spark's round robin alone starts both at the same task (pyspark 4.3)
    tiny = contiguous_frame(spark, X[:2], np.array([-1.0, 1.0]), sizes=[0, 0, 1, 1])
    assert partition_sizes(TrainingData(tiny).frame) == [1, 1]


def test_empty_partitions_after_the_last_row_are_dealt_away(spark, rings):
    """[200, 200, 0] for 2 tasks: the checks' job finds partitions 0 and 1 even (no row names partition 2), but
    the plan fixes 3; read as it was, the barrier stage needed 3 task slots of local[2]'s 2 and waited for them
    until Spark gave up."""
    X, y = rings
    frame = TrainingData(contiguous_frame(spark, X, y, sizes=[200, 200, 0]), num_partitions=2).frame
    assert frame.rdd.getNumPartitions() == 2 and sum(partition_sizes(frame)) == 400


def test_the_checks_job_counts_the_rows_of_a_local_relation_by_the_partitions_the_stage_reads(spark):
    """A ``VALUES`` clause, whose projection (the features cast to doubles) Spark's optimizer computes on the
    driver: a partition id from SQL is 0 for each of its rows there, while the stage reads them in local[2]'s 2
    partitions (Spark Connect's ``createDataFrame`` of local rows is such a relation too:
    ``test_connect``)."""
    ids = ", ".join(f"({i})" for i in range(10))
    rows = spark.sql(f"SELECT array(id, 1) AS x, double(id % 2) AS y FROM VALUES {ids} AS t(id)")
    assert TrainingData(rows, features_col="x", label_col="y").partition_rows == {0: 5, 1: 5}


def test_rows_a_round_robin_of_the_caller_left_in_one_partition_are_dealt_into_every_task(spark, rings):
    """Two rows that the caller's ``repartition(2)`` put in one partition: dealt again, they fill both tasks (Spark's
    optimizer merged the deal into the caller's round robin, which dealt them into one partition again, and the
    fit failed on an empty task as if the data were nondeterministic)."""
    X, y = rings
    tiny = contiguous_frame(spark, X[:2], np.array([-1.0, 1.0]), sizes=[1, 1]).repartition(2)
    assert sorted(partition_sizes(tiny)) == [0, 2]  # pyspark 4.3's round robin: both rows start at one task
    assert partition_sizes(TrainingData(tiny).frame) == [1, 1]
    tasks, model = fit(tiny)
    assert tasks == 2 and model.decision_function(X[:2]).tolist() == pytest.approx([-1.0, 1.0], abs=1e-2)


def test_the_rows_are_dealt_before_the_tasks_check_them_unless_the_plan_fixes_the_tasks_partitions(spark, rings):
    """``fixed_partitions``: a cached frame's partitions, an RDD's, an adaptive plan's shuffle into a given number
    (and a coalesce's above it), none for one whose partitions Spark may merge as it runs; ``TrainingData``
    leaves the checks to the tasks, the rows dealt into the tasks' partitions first where the plan does not fix
    as many."""
    from spark_bsvm.engine.stage import fixed_partitions
    from tests.conftest import to_df

    X, y = rings
    df = to_df(spark, X, y, n_partitions=2)
    cached = df.repartition(2).cache()  # an adaptive plan over a cached one that shuffled
    try:
        assert fixed_partitions(df) == 2 and fixed_partitions(cached.select("features")) == 2
        assert fixed_partitions(df.repartition(4)) == 4 and fixed_partitions(df.repartition(4).coalesce(3)) == 3
        assert fixed_partitions(df.repartition(4, "label")) == 4  # a given number: Spark keeps it
        assert fixed_partitions(df.repartition("label")) is None  # Spark may merge the shuffle's partitions
        spark.conf.set("spark.sql.adaptive.enabled", "false")
        try:
            assert fixed_partitions(df.repartition("label")) == int(spark.conf.get("spark.sql.shuffle.partitions"))
        finally:
            spark.conf.unset("spark.sql.adaptive.enabled")
        assert TrainingData(df, num_partitions=2, checks_in_stage=True).checks_in_stage
        assert TrainingData(cached, num_partitions=2, checks_in_stage=True).checks_in_stage
        one_task = TrainingData(df, num_partitions=1, checks_in_stage=True)
        assert one_task.checks_in_stage and partition_sizes(one_task.frame) == [len(y)]
        by_label = TrainingData(df.repartition("label"), num_partitions=2, checks_in_stage=True)
        assert by_label.checks_in_stage and sum(partition_sizes(by_label.frame)) == len(y)
        assert fixed_partitions(by_label.frame) == 2
        assert not TrainingData(df, num_partitions=2).checks_in_stage  # the caller judges no tasks' checks
    finally:
        cached.unpersist()


def _tables(frame, row_bytes):
    """Each task's rows as ``run_barrier_stage`` hands them over (``row_bytes`` None: the ``mapInArrow`` way),
    as Python lists by partition, and whether they came back as dicts (the way of the plan's own batches)."""
    from spark_bsvm.engine.stage import run_barrier_stage

    def make_task(input_schema):
        def task(rows):
            import pyarrow as pa

            from spark_bsvm.engine.stage import record_batches

            table = pa.Table.from_batches(list(record_batches(rows, input_schema)))
            row = {"rows": repr(table.to_pylist())}
            yield row if input_schema is not None else pa.RecordBatch.from_pylist([row])

        return task

    rows = run_barrier_stage(frame, make_task, row_bytes, "rows string")
    return [r["rows"] for r in rows], all(isinstance(r, dict) for r in rows)


def test_the_tasks_get_the_same_rows_from_the_plans_own_batches_as_from_map_in_arrow(spark):
    """Vectors (dense and sparse), a weight and a validation mark; arrays of doubles with a null element and a
    null array: the same batches either way, the plan's own where rows of a known size keep them small."""
    from pyspark.ml.linalg import Vectors

    vectors = spark.createDataFrame([(Vectors.dense([1.0, 0.0, 2.5]), 1.0, 0.5, True),
                                     (Vectors.sparse(3, [1], [-4.0]), 0.0, 2.0, False),
                                     (Vectors.sparse(3, [], []), 1.0, 1.0, False)] * 3,
                                    ["features", "label", "weight", "validation"]).repartition(2)
    arrays = spark.createDataFrame([([1.0, None], 1.0), (None, 0.0), ([3.0, 4.0], 1.0)],
                                   "features array<double>, label double").repartition(2)
    for frame in (vectors, arrays):
        planned, as_dicts = _tables(frame, 64)
        mapped, as_rows = _tables(frame, None)
        assert as_dicts and not as_rows
        assert sorted(planned) == sorted(mapped) and "4.0" in "".join(planned)


def test_columns_pyspark_cannot_describe_in_arrow_take_the_map_in_arrow_way(spark, monkeypatch):
    """As vectors would with a pyspark whose Arrow conversion does not know user-defined types."""
    import pyspark.sql.pandas.types

    def unsupported(schema):
        raise TypeError("unsupported data type for Arrow conversion")

    frame = spark.range(0, 4, 1, 2).selectExpr("array(double(id)) as features", "1.0 as label")
    planned, as_dicts = _tables(frame, 64)
    monkeypatch.setattr(pyspark.sql.pandas.types, "to_arrow_schema", unsupported)
    mapped, as_dicts_then = _tables(frame, 64)
    assert as_dicts and not as_dicts_then and sorted(planned) == sorted(mapped)


def test_the_plans_own_batches_only_where_spark_could_not_size_them_better():
    from spark_bsvm.engine.session import ARROW_BYTES, ARROW_RECORDS, planned_arrow_batches

    def session(**conf):
        return type("Spark", (), {"conf": {ARROW_RECORDS: "10000", **conf}})()

    assert planned_arrow_batches(session(), 712)  # Forest-shaped rows: 7 MB a batch of 10,000
    assert not planned_arrow_batches(session(), None)  # rows of unknown size
    assert not planned_arrow_batches(session(), (64 << 20) // 9999)  # 10,000 such rows pass Spark's 64 MiB
    assert planned_arrow_batches(session(**{ARROW_BYTES: str(1 << 30)}), (64 << 20) // 9999)  # the user's limit
    assert not planned_arrow_batches(session(**{ARROW_RECORDS: "0"}), 712)  # batches of a whole partition


@pytest.mark.parametrize("use", ["count partitions", "read rows", "training data"])
def test_the_engine_leaves_the_callers_dataframe_free_to_use_a_cache_it_adds(spark, use):
    """A DataFrame object keeps the plan it was first given: ``fixed_partitions`` (which counts an uncached
    frame's partitions) and ``run_barrier_stage`` (which reads its rows) plan a copy of it (``plannable``), so
    that the caller's own actions read a cache added after the fit; ``TrainingData`` makes that copy once, for
    both."""
    from pyspark.sql import functions as F

    from spark_bsvm.engine.stage import fixed_partitions, plannable

    df = spark.range(0, 100, 1, 2).select(F.array((F.col("id") * 7).cast("double")).alias("features"),
                                          F.lit(1.0).alias("label"))
    if use == "training data":
        data = TrainingData(df, num_partitions=2, checks_in_stage=True)
        assert data.checks_in_stage and data.frame is not df and plannable(data.frame) is data.frame
        assert len(_tables(data.frame, 64)[0]) == 2
    else:
        assert (fixed_partitions(df) if use == "count partitions" else len(_tables(df, 64)[0])) == 2
    df.cache()
    try:
        assert df.count() == 100
        assert "InMemoryTableScan" in df._jdf.queryExecution().executedPlan().toString()
    finally:
        df.unpersist()


def test_the_stage_runs_in_the_python_workers_of_the_sessions_sql_jobs(spark):
    """One pool of Python workers for the training stage and a model's transform (``session.sql_python_workers``):
    the workers of a stage over the plan's own batches and those of a ``mapInArrow`` job have one parent, the
    pool's daemon."""
    from spark_bsvm.engine.stage import run_barrier_stage

    frame = spark.range(0, 8, 1, 2).selectExpr("array(double(id)) as features", "1.0 as label")

    def make_task(input_schema):
        def task(rows):
            import os

            list(rows)
            yield {"daemon": os.getppid()}

        return task

    def daemon(batches):
        import os

        import pyarrow as pa

        list(batches)
        yield pa.RecordBatch.from_pydict({"daemon": [os.getppid()]})

    stage = {row["daemon"] for row in run_barrier_stage(frame, make_task, 64, "daemon long")}
    assert len(stage) == 1 and stage == {row["daemon"] for row in frame.mapInArrow(daemon, "daemon long").collect()}


def test_the_checks_of_rows_no_stage_reads_bound_their_rows_as_the_training_datas_checks_do(spark, monkeypatch):
    """``check_rows`` (the calibration rows' checks): by the features the column declares (``row_bytes``), under
    which the job's Arrow batches are sized by their rows alone; no bound for an array column, which declares
    none."""
    from contextlib import contextmanager

    from pyspark.ml.feature import VectorAssembler
    from pyspark.ml.functions import vector_to_array

    from spark_bsvm.engine import session
    from spark_bsvm.engine.stage import check_rows, row_bytes

    sized, seen = session.row_sized_arrow_batches, []

    @contextmanager
    def recorded(spark, bound):
        with sized(spark, bound):
            seen.append((bound, spark.sparkContext.getLocalProperty(session.ARROW_BYTES)))
            yield

    monkeypatch.setattr(session, "row_sized_arrow_batches", recorded)
    rows = spark.createDataFrame([(1.0, 2.0, 3.0, 0.0), (3.0, 2.0, 1.0, 1.0)], ["a", "b", "c", "label"])
    assembled = VectorAssembler(inputCols=["a", "b", "c"], outputCol="features").transform(rows)
    assert check_rows(assembled, "features", "label").n_features == 3
    assert check_rows(assembled.select(vector_to_array("features").alias("x"), "label"), "x", "label").n_features == 3
    assert seen == [(row_bytes(3), session.UNSIZED), (None, None)]
