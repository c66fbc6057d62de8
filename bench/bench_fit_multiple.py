"""pyspark.ml's tuners over a spark-bsvm estimator: the data's checks and one training stage per fold, against
one of each per fit.

``CrossValidator`` and ``TrainValidationSplit`` fit their estimator once per param map through
``fitMultiple``.  The estimators' own ``fitMultiple`` runs the data's checks (in the training tasks where
the driver coordinates the fits, as here, else a Spark job before each training stage) once for
the param maps that leave the data's params alone, and trains them in one stage where their stages would
take every task slot (``numPartitions`` unset, as here); pyspark's default
(``Estimator.fitMultiple``, kept here by a subclass that calls it) fits each param map on its own, checks
and stage included.  Both tuners, C-SVC (gamma = 0.5, C in a 4-point grid) on ``make_rings`` rows (cached and counted
first), parallelism 1, ``local[2]``, after a warm-up ``CrossValidator`` each way; the two ways alternate
(A B A B ...).

Printed per run: the tuner, the way, the Spark jobs of the data's checks and their wall seconds (none where
the tasks check their rows), the training stages, the tuner's wall seconds, CPU seconds of this process
and its children (the JVM, which in local mode is driver and executor, and the Python workers:
``bench.common.tree_cpu_seconds``), and the chosen C; then per tuner the medians and the ratio of the wall
times (shared / per fit), with the range of the pairs' own ratios.

    python -m bench.bench_fit_multiple [--rows 4000] [--repeats 3] [--quick]
"""

import argparse
import os

import numpy as np
from pyspark.ml import Estimator

from bench.bench_parallel_tuning import rings_df
from bench.common import local_spark, print_table, recorded_calls, timed, tree_cpu_seconds
from spark_bsvm import CSVC
from spark_bsvm.engine import stage

SLOTS = 2
GRID_C = (0.1, 1.0, 10.0, 100.0)
FOLDS = 3


class CheckedPerFit(CSVC):
    """C-SVC with pyspark.ml's default ``fitMultiple``: every param map's fit checks its data in a stage of its
    own."""

    def fitMultiple(self, dataset, paramMaps):
        return Estimator.fitMultiple(self, dataset, paramMaps)


def tuner(name, estimator):
    from pyspark.ml.evaluation import BinaryClassificationEvaluator
    from pyspark.ml.tuning import CrossValidator, ParamGridBuilder, TrainValidationSplit

    grid = ParamGridBuilder().addGrid(estimator.C, list(GRID_C)).build()
    if name == "CrossValidator":
        return CrossValidator(estimator=estimator, estimatorParamMaps=grid, numFolds=FOLDS, seed=1,
                              evaluator=BinaryClassificationEvaluator())
    return TrainValidationSplit(estimator=estimator, estimatorParamMaps=grid, trainRatio=0.75, seed=1,
                                evaluator=BinaryClassificationEvaluator())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4000, help="make_rings rows (default 4000)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each way per tuner (default 3)")
    parser.add_argument("--quick", action="store_true", help="300 rows, one run each: check that the script runs")
    args = parser.parse_args()
    n_rows, repeats = (300, 1) if args.quick else (args.rows, args.repeats)
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; {n_rows} make_rings rows, "
          f"C-SVC (gamma 0.5) over C in {GRID_C}, local[{SLOTS}], parallelism 1")
    spark = local_spark("bench_fit_multiple", SLOTS, "2g")
    try:
        df = rings_df(spark, n_rows)
        checks = recorded_calls(stage, "check_training_data")  # the wall seconds of each run
        stages = recorded_calls(stage.TrainingData, "run_stage")
        ways = [("shared", CSVC(gamma=0.5)), ("per fit", CheckedPerFit(gamma=0.5))]
        for _, estimator in ways:  # warm-up: the Python workers, the imports, numba's cached code, the JVM's
            tuner("CrossValidator", estimator).fit(df)
        rows, summary = [], []
        for name in ("CrossValidator", "TrainValidationSplit"):
            times = {way: [] for way, _ in ways}
            for _ in range(repeats):
                for way, estimator in ways:
                    del checks[:], stages[:]
                    cpu = tree_cpu_seconds()
                    model, wall, _ = timed(lambda: tuner(name, estimator).fit(df))
                    cpu = tree_cpu_seconds() - cpu
                    times[way].append((wall, cpu))
                    rows.append([name, way, len(checks), f"{sum(checks):.2f}", len(stages), f"{wall:.2f}", f"{cpu:.2f}",
                                 model.bestModel.getOrDefault("C")])
            shared, per_fit = (np.array(times[way]) for way, _ in ways)
            pairs = shared[:, 0] / per_fit[:, 0]
            summary.append([name, f"{np.median(shared[:, 0]):.2f}", f"{np.median(shared[:, 1]):.2f}",
                            f"{np.median(per_fit[:, 0]):.2f}", f"{np.median(per_fit[:, 1]):.2f}",
                            f"{np.median(shared[:, 0]) / np.median(per_fit[:, 0]):.2f}",
                            f"{pairs.min():.2f}-{pairs.max():.2f}"])
        print_table(["tuner", "way", "check runs", "checks s", "stages", "wall s", "cpu s", "chosen C"], rows)
        print(f"\nmedians of {repeats} runs each way")
        print_table(["tuner", "shared wall s", "shared cpu s", "per fit wall s", "per fit cpu s",
                     "wall ratio", "pairs' ratios"], summary)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
