"""Fits coordinated on the executors (Spark Connect's way) against fits coordinated by the driver, and what the
executors' way adds: its Spark job of checks, and what a barrier sync would.

Per data set, a cached frame in 2 partitions on ``local[2]`` (ijcnn1 and the Forest-shaped rows as
``bench_engines`` reads them; text-like rows of 2^20 features, ~20 stored a row, as ``bench_wide_rows``
makes them), and budget-L1 (B = 50, C = 10 / B, gamma = 1) fitted ``--repeats`` times each way after a
first fit each way, alternating (executor, driver, executor, ...).  Printed, medians of the repeats:

    checks s      the Spark job of checks that a fit coordinated on the executors runs first
                  (``blocks.check_training_data``; the driver's tasks check their own rows in the training
                  stage), run alone between the fits
    executor s    a fit coordinated on the executors, wall seconds, and its process tree's CPU seconds
    driver s      the same fit coordinated by the driver
    executor - driver   what the executors' way costs a fit
    same          whether both ways give the same model (coefficients within 1e-9)

and, once, a bare barrier stage of 2 tasks over 10 numbers whose tasks call ``allGather`` (the executors'
way posted the coordinator's address by one until the sixty-eighth session; its tasks now find it at ports
the fit's secret gives, ``spark_bsvm.engine.hosted``): the seconds each call waited, and the stage's.  Spark's
task waits for a sync's reply in steps of one second (``BarrierTaskContext.runBarrier``).

    python -m bench.bench_coordinator_modes [--repeats 3] [--wide-rows 4000] [--cases ijcnn1 forest wide]
"""

import argparse
import tempfile
import time

import numpy as np

from bench.bench_engines import _forest, _ijcnn1, _spark_frame
from bench.bench_wide_rows import wide_rows
from bench.common import local_spark, print_table, tree_timed

BUDGET = 50
CASES = ("ijcnn1", "forest", "wide")


def _frame(spark, case, wide_rows_count, directory):
    """The cached frame of ``case`` (2 partitions) and the bound of a row's bytes its checks' job is given (that
    of the features the column declares; none for the wide rows, made without VectorAssembler)."""
    from spark_bsvm.engine.stage import row_bytes

    if case == "wide":
        from pyspark.ml.linalg import Vectors

        X, y = wide_rows(wide_rows_count, 1 << 20, seed=1)
        X.sort_indices()  # a vector's indices increase
        rows = [(Vectors.sparse(X.shape[1], X.indices[lo:hi], X.data[lo:hi]), float(label))
                for lo, hi, label in zip(X.indptr[:-1], X.indptr[1:], y)]
        frame = spark.createDataFrame(rows, ["features", "label"]).repartition(2).cache()
        frame.count()
        return frame, None
    X, y = _ijcnn1() if case == "ijcnn1" else _forest()
    return _spark_frame(spark, X, y, directory), row_bytes(X.shape[1])


def _sync_waits(spark):
    """Per task of a bare barrier stage of 2 tasks: the seconds its ``allGather`` waited; and the stage's."""
    def task(rows):
        from pyspark import BarrierTaskContext

        context = BarrierTaskContext.get()
        list(rows)
        start = time.perf_counter()
        context.allGather("")
        yield time.perf_counter() - start

    stage = spark.sparkContext.parallelize(range(10), 2).barrier().mapPartitions(task)
    waits, wall, _ = tree_timed(stage.collect)
    return waits, wall


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--wide-rows", type=int, default=4000)
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    args = parser.parse_args()

    spark = local_spark("bench_coordinator_modes", 2, "6g")
    from spark_bsvm import BudgetSVM
    from spark_bsvm.engine.blocks import check_training_data

    for k in range(3):
        waits, wall = _sync_waits(spark)
        print(f"bare barrier stage {k + 1}: allGather waited {', '.join(f'{w:.3f}' for w in waits)} s; "
              f"the stage {wall:.3f} s")
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        for case in args.cases:
            frame, bound = _frame(spark, case, args.wide_rows, directory)
            runs = {"checks": [], "executor": [], "driver": []}
            models = {}
            for repeat in range(args.repeats + 1):
                for mode in ("executor", "driver"):
                    estimator = BudgetSVM(budget=BUDGET, C=10.0 / BUDGET, gamma=1.0, numPartitions=2,
                                          coordinatorMode=mode)
                    models[mode], wall, cpu = tree_timed(lambda: estimator.fit(frame))
                    if repeat:  # the first fit each way loads the workers' code
                        runs[mode].append((wall, cpu))
                _, wall, cpu = tree_timed(lambda: check_training_data(frame, "features", "label", row_bytes=bound))
                if repeat:
                    runs["checks"].append((wall, cpu))
            median = {name: np.median(np.array(times), axis=0) for name, times in runs.items()}
            same = np.allclose(models["executor"].expansion.coef, models["driver"].expansion.coef, rtol=0, atol=1e-9)
            rows.append([case, *median["checks"], *median["executor"], *median["driver"],
                         median["executor"][0] - median["driver"][0], "yes" if same else "NO"])
            frame.unpersist()
    print(f"\nbudget-L1 (B = {BUDGET}), local[2], 2 tasks; medians of {args.repeats} fits each way after a first\n")
    print_table(["case", "checks s", "tree cpu s", "executor s", "tree cpu s", "driver s", "tree cpu s",
                 "executor - driver s", "same"], rows)


if __name__ == "__main__":
    main()
