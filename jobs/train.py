"""Train a budgeted kernel SVM: the project's main job.

Generates seeded data, trains on local Spark (the active session, or a
``local[*]`` one) or in-process (``--engine local``), holds out a test
part, and prints the test error, the support size and the training time.

    python jobs/train.py --method budget_l1 --budget 100 --C 10
"""

import argparse
import sys
import time

import numpy as np

from core.engine import LocalEngine
from core.kernels import KernelSpec
from core.svc import fit_budget_svm, fit_csvc
from core.synthetic import make_rings


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--method", choices=["csvc", "budget_l1", "budget_l2"], default="budget_l1",
                   help="training method (default: budget_l1)")
    p.add_argument("--n-train", type=int, default=6000, help="generated training rows (default: 6000)")
    p.add_argument("--n-test", type=int, default=3000, help="generated test rows (default: 3000)")
    p.add_argument("--n-features", type=int, default=10, help="generated features (default: 10)")
    p.add_argument("--C", type=float, default=10.0, help="SVM cost C (default: 10)")
    p.add_argument("--gamma", type=float, default=0.2, help="RBF gamma in exp(-gamma ||x-z||^2) (default: 0.2)")
    p.add_argument("--budget", type=int, default=200, help="budget B for the budget SVMs (default: 200)")
    p.add_argument("--prune", action="store_true",
                   help="keep only the B largest weights after training (Dekel & Singer, section 5)")
    p.add_argument("--engine", choices=["spark", "local"], default="spark",
                   help="spark: one barrier stage on the active/local Spark session; local: in-process")
    p.add_argument("--partitions", type=int, default=2, help="partitions of the training set (default: 2)")
    p.add_argument("--seed", type=int, default=0, help="data seed (default: 0)")
    p.add_argument("--save", metavar="PATH", help="write the trained model to PATH (.npz)")
    return p.parse_args(argv)


def _engine(args, X, y):
    if args.engine == "local":
        return LocalEngine(X, y, n_partitions=args.partitions)
    from pyspark.ml.linalg import Vectors

    from spark_bsvm.engine import SparkEngine, default_spark_session

    spark = default_spark_session()  # the session the job started
    rows = [(Vectors.dense(x), float(label)) for x, label in zip(X, y)]
    df = spark.sparkContext.parallelize(rows, args.partitions).toDF(["features", "label"])
    return SparkEngine(df, num_partitions=args.partitions)


def main(argv=None):
    args = parse_args(argv)
    X, y = make_rings(args.n_train + args.n_test, args.n_features, seed=args.seed)
    X_train, y_train, X_test, y_test = X[:args.n_train], y[:args.n_train], X[args.n_train:], y[args.n_train:]
    kernel = KernelSpec("rbf", gamma=args.gamma)
    if args.engine == "spark":
        from spark_bsvm.engine import default_spark_session

        default_spark_session().sparkContext.setLogLevel("ERROR")  # JVM start-up is not training time
    start = time.perf_counter()
    with _engine(args, X_train, y_train) as engine:
        if args.method == "csvc":
            model = fit_csvc(engine, C=args.C, kernel=kernel)
        else:
            # C scaled with B as in Dekel & Singer's experiments (section 5): C / B (L1), C / sqrt(B) (L2)
            scale = args.budget if args.method == "budget_l1" else np.sqrt(args.budget)
            model = fit_budget_svm(engine, budget=args.budget, C=args.C / scale, norm=args.method[-2:],
                                   kernel=kernel, prune=args.prune)
    seconds = time.perf_counter() - start
    error = np.mean(model.predict(X_test) != y_test)
    print(f"method={args.method} train_rows={args.n_train} test_rows={args.n_test} "
          f"rounds={model.metadata['rounds']}")
    print(f"test error: {100 * error:.2f}%   support vectors: {model.n_support}   training time: {seconds:.1f}s")
    if args.save:
        model.save(args.save)
        print(f"model written to {args.save}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
