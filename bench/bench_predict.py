"""Prediction: a model of 1,000 support vectors applied to 1,000,000 rows of 54 features.

In one process:

    kernel limit     kernel_block of 100,000 rows (in batches of 4,096) against the 1,000 support
                     vectors (RBF) on numba's default pool, scaled to the row count: the rate of
                     computing the kernel values and storing them
    decision_function  ``KernelExpansion.decision_function`` in-process, on the same pool (its
                     ``kernel_times`` reduces each tile while in cache and stores no kernel value, so
                     it may beat the limit); again with ``precision="float32"`` (float32 rbf values)
    transform        ``BSVMModel.transform`` on Spark ``local[2]``: the rows generated as a Parquet file
                     (untimed), read, scored and written to Parquet (prediction, rawPrediction), with
                     ``predictionPrecision`` float64, then float32.  Two lines before them bound what
                     scoring can reach: the same read, assembly and write with no Python (the output
                     columns made in the JVM from whether each row's vector is present), and the
                     transform of a model with no support vector (the rows' round trip through Arrow and
                     the Python workers, no kernel value computed).

Every line is timed ``--repeats`` times, the lines in turn (all of them once, then all again: the machine's
drift reaches each line alike), each Spark line after one untimed write; the table gives each line's medians
and the range of its rates.

"cpu s": ``time.process_time`` (all threads) for the in-process lines; for the Spark lines, that of this
process and its children (``bench.common.tree_cpu_seconds``): the JVM (in local mode both driver and
executor) and its Python workers.

The model's support vectors are random rows of the Forest-shaped set, the coefficients random: the
cost of prediction depends on the support size, not on how the model was trained.

    python -m bench.bench_predict [--rows 1000000] [--support 1000] [--repeats 3]
"""

import argparse
import itertools
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

from bench.common import print_table, tree_cpu_seconds
from core.kernels import KernelSpec, kernel_block
from core.model import KernelExpansion
from core.rows import squared_norms
from core.synthetic import make_forest_like

BATCH = 4096  # rows per kernel block of the kernel limit


def _model(X, support, seed=0):
    rng = np.random.default_rng(seed)
    sv = X[rng.choice(X.shape[0], support, replace=False)]
    return KernelExpansion(sv, rng.standard_normal(support), 0.1, KernelSpec("rbf", gamma=0.5), [0.0, 1.0],
                           X.shape[1], {})


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--support", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; "
          f"{args.rows:,} rows x 54 features, {args.support:,} support vectors (RBF); "
          f"medians of {args.repeats} runs a line\n")
    X, _ = make_forest_like(args.rows, noise=0.05, seed=1)
    expansion = _model(X, args.support)
    times = {}  # line -> [(wall s, cpu s)], one per repeat

    # the kernel values alone, in blocks of decision_function's batch size (one 100,000 x 1,000 block would
    # time the page faults of 800 MB, not the kernel)
    sample = X[:100_000]
    sample_norms = squared_norms(sample)
    scale = args.rows / sample.shape[0]

    def kernel_limit():
        for lo in range(0, sample.shape[0], BATCH):
            kernel_block(sample[lo:lo + BATCH], expansion.support_vectors, expansion.kernel,
                         x_sq_norms=sample_norms[lo:lo + BATCH])

    def decision_function(precision):
        def run():
            expansion.decision_function(X, precision)
        return run

    in_process = [("kernel limit", kernel_limit, scale, time.process_time)]
    in_process += [(f"decision_function {precision}", decision_function(precision), 1.0, time.process_time)
                   for precision in ("float64", "float32")]
    kernel_block(sample[:BATCH], expansion.support_vectors, expansion.kernel)  # the pooled kernel's code loaded
    for precision in ("float64", "float32"):
        expansion.decision_function(X[:1000], precision)

    os.environ["PYSPARK_PYTHON"] = sys.executable
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.ml.feature import VectorAssembler
    from pyspark.ml.functions import array_to_vector
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from spark_bsvm import BSVMModel

    folder = tempfile.mkdtemp(prefix="bench_predict-")
    try:
        source = os.path.join(folder, "rows.parquet")
        pq.write_table(pa.table({f"x{j}": X[:, j] for j in range(X.shape[1])}), source, row_group_size=65536)
        spark = (SparkSession.builder.master("local[2]").appName("bench_predict").config("spark.driver.memory", "4g")
                 .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        frame = spark.read.parquet(source)
        assembled = VectorAssembler(inputCols=frame.columns, outputCol="features").transform(frame)
        present = F.col("features").isNotNull()  # evaluates VectorAssembler, as scoring the vectors does
        outputs = [("read, assemble, write: no Python",
                    assembled.select(F.when(present, 1.0).otherwise(0.0).alias("prediction"),
                                     array_to_vector(F.array(F.lit(-1.0), F.lit(1.0))).alias("rawPrediction"))),
                   ("transform, no support vector", BSVMModel(_model(X, 0)).transform(assembled))]
        outputs += [(f"transform -> Parquet {precision}",
                     BSVMModel(expansion).setPredictionPrecision(precision).transform(assembled))
                    for precision in ("float64", "float32")]
        outputs_written = itertools.count()

        def write(scoring):  # each output removed after its write, untimed
            out = os.path.join(folder, f"scores-{next(outputs_written)}")
            scoring.select("prediction", "rawPrediction").write.parquet(out)
            return out

        spark_lines = []
        for label, scoring in outputs:
            scoring.limit(1000).select("prediction").collect()  # the workers' imports, numba
            shutil.rmtree(write(scoring))  # untimed: the first write of each line
            spark_lines.append((label, lambda scoring=scoring: write(scoring), 1.0, tree_cpu_seconds))
        for _ in range(args.repeats):
            for label, run, factor, cpu_seconds in in_process + spark_lines:
                wall, cpu = time.perf_counter(), cpu_seconds()
                out = run()
                times.setdefault(label, []).append(((time.perf_counter() - wall) * factor,
                                                    (cpu_seconds() - cpu) * factor))
                if out:  # a Spark line's output folder
                    shutil.rmtree(out)
        spark.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    limit = statistics.median(wall for wall, _ in times["kernel limit"])
    rows = []
    for label, runs in times.items():
        wall, cpu = (statistics.median(column) for column in zip(*runs))
        rates = sorted(args.rows / w for w, _ in runs)
        rows.append([label, wall, cpu, args.rows / wall, f"{rates[0] / 1e3:.1f}k-{rates[-1] / 1e3:.1f}k",
                     wall / limit])
    print_table(["what", "wall s", "cpu s", "rows/s", "rows/s range", "x kernel limit"], rows)


if __name__ == "__main__":
    sys.exit(main())
