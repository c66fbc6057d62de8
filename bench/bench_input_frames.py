"""Spark fits over input DataFrames as users hand them, beside bench_engines' prepared frame.

``bench_engines`` times every Spark fit over a cached frame whose two partitions are the tasks' own, the
best case.  A user's frame is more often read from files and assembled on the fly, uncached, in as many
partitions as Spark's file scan makes.  Here one budget-L1 fit (ijcnn1, budget 500, C = 10 / 500, gamma =
1; ``local[2]``, 2 tasks, the driver coordinating) runs in turn over each of these frames of the same
49,990 rows, each ``--repeats`` times after a warm-up round (medians):

    cached          bench_engines' frame: Parquet, dealt into the tasks' 2 partitions, cached and counted
    2 files         two Parquet files through a VectorAssembler, uncached: 2 partitions, the tasks' count
    8 files         eight Parquet files, the same, read with Spark's file split at 1 MiB (as data of many
                    splits is): 8 partitions, which the fit deals into the tasks' 2 (a shuffle)
    1 file          one Parquet file of one row group, the same: Spark splits it into 2 partitions, one of
                    them empty, which the tasks' checks find (the stage starts again over the rows dealt)
    2 files, shuffled
                    the 2 files' frame after the user's own ``repartition(2)``: 2 partitions, which Spark's
                    adaptive execution keeps (a given number)
    2 files, by label
                    the same after ``repartition("label")``: partitions that Spark's adaptive execution
                    makes as it runs (it merges the shuffle's small ones), which the fit deals into the tasks'
                    2

Printed per frame: its partitions, the engine's start (to the tasks connected with their blocks),
the whole fit, the CPU seconds of the process tree (Spark's JVM, its Python workers, this process), the
seconds of the data's checks run as a Spark job of their own (``stage._checked_frame``; none where the
tasks check their rows), the training stages started, and the Spark fit over the local one (LocalEngine,
once after each round of the Spark fits; medians).

    python -m bench.bench_input_frames [--repeats 5]
"""

import argparse
import contextlib
import os
import statistics
import sys
import tempfile

import numpy as np

from bench.bench_engines import CASES, PARTITIONS, _fit, _ijcnn1, _spark_frame
from bench.common import local_spark, print_table, recorded_calls
from core.engine import LocalEngine

CASE = "budget_l1-ijcnn1"
HEADER = ["frame", "partitions", "start s", "fit s", "tree cpu s", "checks s", "stages", "ratio"]


def _parquet_frames(spark, X, y, directory):
    """{name: (a function making the uncached frame afresh, as a user's job would at each fit, the SQL settings
    of its fit)}."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.ml.feature import VectorAssembler

    columns = [f"x{j}" for j in range(X.shape[1])]
    table = pa.table({"label": y, **{c: np.ascontiguousarray(X[:, j]) for j, c in enumerate(columns)}})
    files = {"2 files": 2, "8 files": 8, "1 file": 1}
    for name, count in files.items():
        os.makedirs(os.path.join(directory, name))
        bounds = np.linspace(0, len(y), count + 1).astype(np.int64)
        for i in range(count):  # one row group a file
            pq.write_table(table.slice(bounds[i], bounds[i + 1] - bounds[i]),
                           os.path.join(directory, name, f"part-{i}.parquet"), row_group_size=len(y))
    assembler = VectorAssembler(inputCols=columns, outputCol="features")
    settings = {"8 files": {"spark.sql.files.maxPartitionBytes": str(1 << 20)}}
    frames = {name: (lambda path=os.path.join(directory, name): assembler.transform(spark.read.parquet(path)),
                     settings.get(name, {}))
              for name in files}
    frames["2 files, shuffled"] = (lambda: frames["2 files"][0]().repartition(PARTITIONS), {})
    frames["2 files, by label"] = (lambda: frames["2 files"][0]().repartition("label"), {})
    return frames


@contextlib.contextmanager
def _sql_settings(spark, settings):
    """``settings`` ({key: value}) set in ``spark`` for the block, unset after it."""
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key in settings:
            spark.conf.unset(key)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    spark = local_spark("bench_input_frames", PARTITIONS, "4g")
    from spark_bsvm.engine import SparkEngine, stage

    fit = CASES[CASE][1]
    X, y = _ijcnn1()
    local = []  # LocalEngine's fit seconds, one a round
    with tempfile.TemporaryDirectory(prefix="bench_input_frames-") as directory:
        cached = _spark_frame(spark, X, y, directory)
        frames = {"cached": (lambda: cached, {}), **_parquet_frames(spark, X, y, os.path.join(directory, "input"))}
        checks, starts = recorded_calls(stage, "_checked_frame"), recorded_calls(stage, "run_barrier_stage")
        runs, partitions = {name: [] for name in frames}, {}
        for repeat in range(args.repeats + 1):  # the first round warms each frame's plans and code up
            for name, (make, settings) in frames.items():
                with _sql_settings(spark, settings):
                    df = make()
                    df.schema  # the user's own analysis of the frame, before the fit
                    stages = len(starts)
                    run = _fit(lambda: SparkEngine(df, num_partitions=PARTITIONS), fit, None, checks)
                    run["stages"] = len(starts) - stages
                    if repeat:
                        runs[name].append(run)
                    else:
                        partitions[name] = df.rdd.getNumPartitions()
            local.append(_fit(lambda: LocalEngine(X, y, n_partitions=PARTITIONS), fit, None)["fit"])
    rows = []
    for name, fits in runs.items():
        med = {q: statistics.median(r[q] for r in fits) for q in ("start", "fit", "tree_cpu", "checks", "stages")}
        rows.append([name, partitions[name], med["start"], med["fit"], med["tree_cpu"], med["checks"],
                     med["stages"], med["fit"] / statistics.median(local[1:])])
    print(f"budget-L1 on ijcnn1, local[{PARTITIONS}], {PARTITIONS} tasks; medians of {args.repeats} fits a frame; "
          f"LocalEngine's fit {statistics.median(local[1:]):.3f} s (median of as many, one after each round)\n")
    print_table(HEADER, rows)
    spark.stop()


if __name__ == "__main__":
    sys.exit(main())
