"""What the engine reads from a session: task slots as Spark's barrier check counts them, where the
coordinator listens and where the tasks connect."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.engine import LocalEngine
from core.kernels import KernelSpec
from core.svc import fit_csvc
from core.synthetic import make_rings
from spark_bsvm.engine.session import (ARROW_BYTES, ARROW_RECORDS, FEWEST_BATCH_ROWS, UNSIZED, barrier_tasks,
                                      local_master_cores, row_sized_arrow_batches, slots_of, unsized_arrow_batches)

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[3]
KERNEL = KernelSpec("rbf", gamma=0.5)


def test_slots_are_each_executors_cores_over_task_cpus():
    assert (slots_of(8, 1), slots_of(8, 2), slots_of(2, 2), slots_of(1, 2)) == (8, 4, 1, 0)
    assert slots_of(9, 2, executor_cores=3) == 3  # three executors of 3 cores run one 2-cpu task each, not 4


def test_barrier_requirements_are_explained(spark):
    assert barrier_tasks(spark) == 2 and barrier_tasks(spark, 1) == 1  # local[2, 3]: two slots
    with pytest.raises(ValueError, match=r"^numPartitions=3 exceeds the 2 task slots of this application \(each "
                                         r"executor's cores over spark.task.cpus=1, summed\)"):
        barrier_tasks(spark, 3)
    dynamic = type("Spark", (), {"conf": {"spark.dynamicAllocation.enabled": "true"}})()
    with pytest.raises(ValueError, match="set spark.dynamicAllocation.enabled=false"):
        barrier_tasks(dynamic, 2)
    # Spark itself ignores dynamic allocation on a local master, and runs barrier stages there
    local = type("Spark", (), {"conf": {"spark.dynamicAllocation.enabled": "true", "spark.master": "local[2]"},
                               "sparkContext": spark.sparkContext})()
    assert barrier_tasks(local, 2) == 2


def test_a_connect_client_counts_the_slots_of_a_local_master_whatever_the_default_parallelism(connect_spark):
    """A range's partitions are the default parallelism, which a conf may set apart from the cores: a local
    master's slots come from the master itself (a fit of 3 tasks on 2 slots would wait 10 minutes, then fail)."""
    connect_spark.conf.set("spark.sql.leafNodeDefaultParallelism", "3")
    try:
        assert barrier_tasks(connect_spark) == 2  # local[2]
    finally:
        connect_spark.conf.unset("spark.sql.leafNodeDefaultParallelism")
    assert local_master_cores("local") == (1, None) and local_master_cores("local[4, 3]") == (4, None)
    assert local_master_cores("local-cluster[2,3,1024]") == (6, 3) and local_master_cores("local[*]") is None


def test_a_connect_client_that_cannot_count_the_slots_asks_for_num_partitions():
    """Another master with the default parallelism set: no count to trust, so no default task count."""
    conf = {"spark.master": "yarn", "spark.default.parallelism": "8"}
    cluster = type("SparkSession", (), {"__module__": "pyspark.sql.connect.session", "conf": conf})()
    with pytest.raises(ValueError, match=r"^under Spark Connect spark-bsvm counts the task slots by the cluster's "
                                         r"default parallelism, which spark.default.parallelism=8 sets .*: set "
                                         r"numPartitions"):
        barrier_tasks(cluster)
    assert barrier_tasks(cluster, 4) == 4


def test_arrow_batches_go_unsized_only_where_their_row_count_keeps_them_within_the_byte_limit():
    limit = 64 << 20
    assert unsized_arrow_batches(10000, limit, 712, False) == {ARROW_BYTES: UNSIZED}  # Forest-shaped rows
    wide = limit // 5000  # 10,000 such rows would pass the limit: 5,000 a batch do not, unless the user set the count
    assert unsized_arrow_batches(10000, limit, wide, False) == {ARROW_BYTES: UNSIZED, ARROW_RECORDS: "5000"}
    assert unsized_arrow_batches(10000, limit, wide, True) == {}
    assert unsized_arrow_batches(10000, limit, limit // (FEWEST_BATCH_ROWS - 1), False) == {}  # Spark sizes them
    assert unsized_arrow_batches(0, limit, 712, True) == {}  # a user's unlimited row count


def _batch_rows(df):
    """The rows of each Arrow batch a task of ``df`` receives, and the batch settings the tasks see."""
    def task(batches):
        import pyarrow as pa
        from pyspark import TaskContext

        context = TaskContext.get()
        yield pa.RecordBatch.from_pydict({"rows": [[b.num_rows for b in batches]],
                                          "bytes": [context.getLocalProperty(ARROW_BYTES)],
                                          "records": [context.getLocalProperty(ARROW_RECORDS)]})

    (row,) = df.mapInArrow(task, "rows array<long>, bytes string, records string").collect()
    return row["rows"], row["bytes"], row["records"]


def test_row_sized_batches_reach_the_tasks_of_the_block_only_and_yield_to_the_users_byte_limit(spark):
    df = spark.range(5000).selectExpr("array(double(id), 1.0) as features").coalesce(1)
    wide = (64 << 20) // 2000  # rows too wide for Spark's 10,000 a batch: 2,000 a batch keep within 64 MiB
    with row_sized_arrow_batches(spark, wide):
        assert _batch_rows(df) == ([2000, 2000, 1000], UNSIZED, "2000")
    assert _batch_rows(df) == ([5000], None, None)
    spark.conf.set(ARROW_BYTES, str(1 << 30))
    try:
        with row_sized_arrow_batches(spark, wide):
            assert _batch_rows(df)[0] == [5000]
    finally:
        spark.conf.unset(ARROW_BYTES)


# a session of its own (task cpus and addresses are fixed when Spark starts): local[2] with 2 cpus a task,
# so one slot; listening on every interface, advertising the loopback address
SCRIPT = """
import json, os, sys
os.environ["PYSPARK_PYTHON"] = sys.executable
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[2]").config("spark.task.cpus", "2").config("spark.ui.enabled", "false")
         .config("spark.driver.bindAddress", "0.0.0.0").config("spark.driver.host", "127.0.0.1").getOrCreate())
from core.kernels import KernelSpec
from core.svc import fit_csvc
from core.synthetic import make_rings
from spark_bsvm.engine import SparkEngine

X, y = make_rings(200, 4, seed=0)
df = spark.createDataFrame([(x.tolist(), float(v)) for x, v in zip(X, y)], "features array<double>, label double")
tracker = spark.sparkContext.statusTracker()
jobs = len(tracker.getJobIdsForGroup(None))
try:
    SparkEngine(df, num_partitions=2)
except ValueError as exc:
    refused = str(exc)
jobs_while_refusing = len(tracker.getJobIdsForGroup(None)) - jobs
with SparkEngine(df) as engine:
    listening = engine._coordinator.listener.getsockname()[0]
    model = fit_csvc(engine, C=1.0, kernel=KernelSpec("rbf", gamma=0.5))
print(json.dumps({"refused": refused, "jobs_while_refusing": jobs_while_refusing, "tasks": engine.n_partitions,
                  "listening": listening, "told": engine.address[0], "bias": model.bias,
                  "support": model.n_support}))
"""


@pytest.fixture(scope="module")
def own_session():
    """What SCRIPT saw in its own Spark session."""
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_task_cpus_count_in_the_slots_before_any_job(own_session):
    assert own_session["refused"].startswith("numPartitions=2 exceeds the 1 task slots of this application (each "
                                             "executor's cores over spark.task.cpus=2, summed)")
    assert own_session["jobs_while_refusing"] == 0
    assert own_session["tasks"] == 1  # by default the fit takes the one slot, and trains
    local = fit_csvc(LocalEngine(*make_rings(200, 4, seed=0)), C=1.0, kernel=KERNEL)
    assert (own_session["support"], own_session["bias"]) == (local.n_support, pytest.approx(local.bias, abs=1e-9))


def test_the_coordinator_listens_on_the_bind_address_and_tells_tasks_the_driver_host(own_session):
    assert (own_session["listening"], own_session["told"]) == ("0.0.0.0", "127.0.0.1")
    assert own_session["support"] > 0  # the tasks reached it there


def test_the_sql_workers_environment_is_a_copy_for_the_block_only(spark):
    """``sql_python_workers`` never changes the context's environment dict, which other threads may be
    iterating (a tuner's concurrent fits define their stages at once): it puts a copy in its place."""
    from spark_bsvm.engine.session import sql_python_workers

    context = spark.sparkContext
    environment, before = context.environment, dict(context.environment)
    with sql_python_workers(spark):
        assert context.environment is not environment
        assert context.environment == dict(before, SPARK_SIMPLIFIED_TRACEBACK="1")
        assert environment == before
    assert context.environment is environment and environment == before
