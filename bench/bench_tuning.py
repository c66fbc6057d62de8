"""Tuning SpSVM-2 in one fit against pyspark's TrainValidationSplit over the same grid, on Spark ``local[2]``.

Both choose (gamma, regParam, support size) on a held-out 20% of the training rows:

    one fit          ``SpSVM(gammaGrid=..., regParamGrid=..., maxBasis=max size, validationFraction=0.2,
                     selectSupportSize="best")``: every (gamma, regParam) setting runs one after another in one
                     barrier stage, the validation rows stay in the training tasks, and each setting's path
                     gives the validation error at every support size up to the largest
    TrainValidationSplit  ``trainRatio=0.8`` over gamma x regParam x maxBasis (the support size an extra grid
                     axis), accuracy on the validation part: one fit (one barrier stage) per grid point

Printed per data set and method: wall seconds, CPU seconds (this process and all its descendants: the
JVM and the Python workers, read from /proc, so Linux only), the chosen setting, its test error, and
the best test error of any TrainValidationSplit grid point (its sub-models, trained on its 80%), so
that a reader sees how well each validation picked.  After one warm-up fit (Python workers, numba's
cache) on the same cached DataFrame.

    python -m bench.bench_tuning [--data covtype ijcnn1] [--quick]    # --quick: 1,500 rows, to try it
"""

import argparse

import numpy as np

from bench.common import load_covtype_20k, load_libsvm, local_spark, print_table, tree_timed

# name: (gammas, regParams (SpSVM's lambda), support sizes); the grids around bench_spsvm_cost's and
# bench_spsvm's choices
GRIDS = {"covtype": ((4.0, 8.0, 16.0), (1 / 64, 1 / 16), (50, 100, 200)),
         "ijcnn1": ((0.5, 1.0, 2.0), (1 / 32, 1 / 8), (50, 100, 200))}
QUICK_GRID = ((0.5, 2.0), (1 / 16, 1.0), (10, 20))
VALIDATION, SEED, SLOTS, KAPPA = 0.2, 0, 2, 10


def load(name, quick):
    """(X_train, y_train, X_test, y_test), labels 0/1, dense; --quick: 1,500 / 1,000 rows."""
    if name == "covtype":
        X, y, Xt, yt = load_covtype_20k()
    else:
        X, y = load_libsvm("ijcnn1", "ijcnn1", n_features=22)
        Xt, yt = load_libsvm("ijcnn1", "ijcnn1.t", n_features=22)
        X, Xt = X.toarray(), Xt.toarray()
    if quick:
        X, y, Xt, yt = X[:1500], y[:1500], Xt[:1000], yt[:1000]
    return X, np.where(y > 0, 1.0, 0.0), Xt, np.where(yt > 0, 1.0, 0.0)


def test_error(model, X, y):
    """The model's test error in %, labels 0/1 (its threshold is 0 on f)."""
    return 100.0 * float(np.mean((model.expansion.decision_function(X) > 0) != (y > 0)))


def one_fit(df, gammas, reg_params, sizes):
    from spark_bsvm import SpSVM

    return SpSVM(maxBasis=max(sizes), kappa=KAPPA, seed=SEED, numPartitions=SLOTS, validationFraction=VALIDATION,
                 selectSupportSize="best", gammaGrid=list(gammas), regParamGrid=list(reg_params)).fit(df)


def train_validation_split(df, gammas, reg_params, sizes):
    from pyspark.ml.evaluation import MulticlassClassificationEvaluator
    from pyspark.ml.tuning import ParamGridBuilder, TrainValidationSplit

    from spark_bsvm import SpSVM

    estimator = SpSVM(kappa=KAPPA, seed=SEED, numPartitions=SLOTS)
    grid = (ParamGridBuilder().addGrid(estimator.gamma, list(gammas)).addGrid(estimator.regParam, list(reg_params))
            .addGrid(estimator.maxBasis, list(sizes)).build())
    return TrainValidationSplit(estimator=estimator, estimatorParamMaps=grid, trainRatio=1.0 - VALIDATION,
                                evaluator=MulticlassClassificationEvaluator(metricName="accuracy"), seed=SEED,
                                collectSubModels=True).fit(df)


def setting(model):
    return f"gamma {model.getGamma():g}, regParam {model.getRegParam():g}, size {model.numSupportVectors}"


def run(spark, name, quick):
    from pyspark.ml.linalg import Vectors

    gammas, reg_params, sizes = QUICK_GRID if quick else GRIDS[name]
    X, y, Xt, yt = load(name, quick)
    df = spark.createDataFrame([(Vectors.dense(x), float(label)) for x, label in zip(X, y)], ["features", "label"])
    df = df.repartition(SLOTS).cache()
    df.count()
    one_fit(df, gammas[:1], reg_params[:1], (5,))  # warm-up: the Python workers, the imports, numba's cache
    ours, ours_wall, ours_cpu = tree_timed(lambda: one_fit(df, gammas, reg_params, sizes))
    tvs, tvs_wall, tvs_cpu = tree_timed(lambda: train_validation_split(df, gammas, reg_params, sizes))
    grid_best = min(test_error(m, Xt, yt) for m in tvs.subModels)
    chosen_validation = ours.trainingSummary["validation"]["kept_error"]
    print(f"\n{name}: {len(y)} training rows ({VALIDATION:.0%} held out for validation), {len(yt)} test rows; "
          f"gamma {gammas} x regParam {[round(r, 5) for r in reg_params]}, support sizes {sizes}; local[{SLOTS}]")
    print_table(["method", "fits", "wall s", "CPU s", "chosen", "validation error %", "test error %",
                 "grid's best test error %"],
                [["one fit (gammaGrid x regParamGrid)", 1, round(ours_wall, 1), round(ours_cpu, 1), setting(ours),
                  round(100 * chosen_validation, 2), round(test_error(ours, Xt, yt), 2), round(grid_best, 2)],
                 ["TrainValidationSplit", len(tvs.subModels), round(tvs_wall, 1), round(tvs_cpu, 1),
                  setting(tvs.bestModel), round(100 * (1 - max(tvs.validationMetrics)), 2),
                  round(test_error(tvs.bestModel, Xt, yt), 2), round(grid_best, 2)]])
    print(f"wall: TrainValidationSplit / one fit = {tvs_wall / ours_wall:.2f}x; CPU: {tvs_cpu / ours_cpu:.2f}x")
    df.unpersist()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+", default=list(GRIDS), choices=list(GRIDS))
    parser.add_argument("--quick", action="store_true", help="1,500 training rows and a 2 x 2 x 2 grid: check that "
                                                             "the script runs")
    args = parser.parse_args()

    spark = local_spark("bench_tuning", SLOTS, "4g")
    try:
        for name in args.data:
            run(spark, name, args.quick)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
