"""CrossValidator over a spark-bsvm estimator with parallelism 1 against 2, on Spark ``local[2]``.

A fit is one barrier stage holding ``numPartitions`` task slots (all of them by default) until it
ends, so fits run side by side only when their partitions fit in the slots together.  Three runs of
the same 3-fold CrossValidator over a 2-point grid (C-SVC, C in {1, 10}, gamma = 0.5) on
``make_rings`` rows, the DataFrame cached and counted first, after one warm-up fit:

    parallelism 1, numPartitions unset (2)     one fit at a time on both slots
    parallelism 2, numPartitions unset (2)     each fit's stage waits for the other's slots
    parallelism 2, numPartitions 1             the README's recipe, slots // parallelism

Only the Spark jobs around the stages (the data's checks, the summaries, the evaluations) overlap in
the second run.  Printed per run: wall seconds, the speed-up against the first run, the mean areaUnderROC per grid
point and the chosen C.

    python -m bench.bench_parallel_tuning [--rows 6000] [--quick]    # --quick: 300 rows, to try it
"""

import argparse

from bench.common import local_spark, print_table, timed
from core.synthetic import make_rings

SLOTS = 2
FOLDS = 3
GRID_C = (1.0, 10.0)


def rings_df(spark, n_rows):
    """``make_rings(n_rows, 10)`` as a cached (features, label) DataFrame of ``SLOTS`` partitions, labels 0/1."""
    from pyspark.ml.linalg import Vectors

    X, y = make_rings(n_rows, 10, seed=0)
    rows = [(Vectors.dense(x), 1.0 if label > 0 else 0.0) for x, label in zip(X, y)]
    df = spark.createDataFrame(rows, ["features", "label"]).repartition(SLOTS).cache()
    df.count()
    return df


def cross_validator(parallelism, num_partitions):
    from pyspark.ml.evaluation import BinaryClassificationEvaluator
    from pyspark.ml.tuning import CrossValidator, ParamGridBuilder

    from spark_bsvm import CSVC

    estimator = CSVC(gamma=0.5)
    if num_partitions is not None:
        estimator.setNumPartitions(num_partitions)
    grid = ParamGridBuilder().addGrid(estimator.C, list(GRID_C)).build()
    return CrossValidator(estimator=estimator, estimatorParamMaps=grid, evaluator=BinaryClassificationEvaluator(),
                          numFolds=FOLDS, parallelism=parallelism, seed=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=6000, help="training rows (default 6000)")
    parser.add_argument("--quick", action="store_true", help="300 rows: check that the script runs")
    args = parser.parse_args()
    n_rows = 300 if args.quick else args.rows

    from spark_bsvm import CSVC

    spark = local_spark("bench_parallel_tuning", SLOTS, "2g")
    try:
        df = rings_df(spark, n_rows)
        CSVC(gamma=0.5).fit(df)  # warm-up: the Python workers, the imports, numba's cached code
        rows, first = [], None
        for parallelism, num_partitions in ((1, None), (2, None), (2, SLOTS // 2)):
            model, wall, _ = timed(lambda: cross_validator(parallelism, num_partitions).fit(df))
            first = first or wall
            best = model.bestModel.getOrDefault("C")
            rows.append([parallelism, "unset" if num_partitions is None else num_partitions, round(wall, 1),
                         f"{first / wall:.2f}x", " ".join(f"{m:.4f}" for m in model.avgMetrics), best])
        print(f"CrossValidator: {FOLDS} folds x C in {GRID_C} (C-SVC, gamma 0.5) on {n_rows} make_rings rows, "
              f"local[{SLOTS}]")
        print_table(["parallelism", "numPartitions", "wall s", "speed-up", "mean AUC per C", "chosen C"], rows)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
