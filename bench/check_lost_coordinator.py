"""What a lost coordinating task costs a fit coordinated on the executors (``coordinatorMode='executor'``).

On ``local[2,3]`` (two slots), one SpSVM-2 fit (d = 100, lambda = 0.1, gamma =
0.5) on 20,000 make_rings rows, 2 partitions, is run undisturbed, then again with the Python worker of
the task hosting the coordinator killed (SIGKILL, through the engine's test hook) at half of its
rounds.  Spark fails the barrier stage, the fit starts a new one and starts over.  Printed: both wall
times, the rounds, and whether the models are equal.  A script, not a test (a minute of fitting).

    python -m bench.check_lost_coordinator [--rows 20000]
"""

import argparse
import os
import sys
import tempfile

import numpy as np

from bench.common import timed
from core.engine import LocalEngine
from core.kernels import KernelSpec
from core.spsvm import fit_spsvm
from core.synthetic import make_rings

ARGUMENTS = dict(max_basis=100, lam=0.1, kernel=KernelSpec("rbf", gamma=0.5), kappa=5, seed=3)


class CountingEngine(LocalEngine):
    """LocalEngine that counts the rounds a fit asks for (the rounds the coordinating task runs)."""

    rounds = 0

    def run(self, function, request, rebuild=None):
        self.rounds += 1
        return super().run(function, request, rebuild)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    args = parser.parse_args()

    from pyspark.ml.linalg import Vectors
    from pyspark.sql import SparkSession

    from spark_bsvm.engine.training import train

    X, y = make_rings(args.rows, 10, seed=0)
    counting = CountingEngine(X, y, n_partitions=2)
    fit_spsvm(counting, **ARGUMENTS)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = (SparkSession.builder.master("local[2,3]").appName("check_lost_coordinator")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
             .config("spark.driver.memory", "2g").getOrCreate())
    spark.sparkContext.setLogLevel("OFF")
    try:
        df = spark.createDataFrame([(Vectors.dense(x), float(label)) for x, label in zip(X, y)], ["features", "label"])
        df = df.repartition(2).cache()
        df.count()

        def fit(fault_injection=None):
            return train(df, fit_spsvm, ARGUMENTS, num_partitions=2, mode="executor", fault_injection=fault_injection)

        fit()  # warm-up: the Python workers, the imports, numba's cached code
        undisturbed, calm, _ = timed(fit)
        with tempfile.TemporaryDirectory() as scratch:
            marker = os.path.join(scratch, "killed")
            restarted, disturbed, _ = timed(lambda: fit({"round": counting.rounds // 2, "marker": marker}))
            killed = os.path.exists(marker)
        same = (np.array_equal(restarted.support_vectors, undisturbed.support_vectors)
                and np.array_equal(restarted.coef, undisturbed.coef) and restarted.bias == undisturbed.bias)
        print(f"SpSVM-2 d=100 on {args.rows} rows, local[2,3], executor mode, {counting.rounds} rounds")
        print(f"undisturbed: {calm:.1f} s; coordinator's worker killed at round {counting.rounds // 2} "
              f"(killed: {killed}): {disturbed:.1f} s ({disturbed - calm:+.1f} s, {disturbed / calm:.2f}x); "
              f"same model: {same}")
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
