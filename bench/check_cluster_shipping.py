"""Shipping spark-bsvm to executors that are separate processes (``local-cluster[2,1,1024]``).

1. Executors without spark-bsvm: the fit fails with one line that says so and how to ship it.
2. The same application after ``addPyFile`` of a zip of ``core/`` and ``spark_bsvm/`` (what
   ``spark-submit --py-files`` does): the fit works, with the LocalEngine model.

spark-bsvm may be installed on this machine (editable or not), which executors would find: they
get a ``PYTHONPATH`` whose ``spark_bsvm`` cannot be imported, so that they see no spark-bsvm but
the shipped one.  Prints the seconds each step took.  A script, not a test: the cluster's start
alone takes longer than a test may.  ``python -m bench.check_cluster_shipping``
"""

import os
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _zip_package(path):
    with zipfile.ZipFile(path, "w") as archive:
        for package in ("core", "spark_bsvm"):
            for file in sorted((ROOT / package).rglob("*.py")):
                archive.write(file, file.relative_to(ROOT))
    return path


def main():
    work = Path(tempfile.mkdtemp(prefix="bsvm-cluster-"))
    hidden = work / "no-spark-bsvm" / "spark_bsvm"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'spark_bsvm'\", "
                                        "name='spark_bsvm')\n")
    sys.path.insert(0, str(ROOT))  # the driver imports this checkout; the executors inherit no PYTHONPATH
    os.environ.pop("PYTHONPATH", None)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_WORKER_DIR"] = str(work / "workers")
    from pyspark.sql import SparkSession

    from core.engine import LocalEngine
    from core.kernels import KernelSpec
    from core.svc import fit_csvc
    from core.synthetic import make_rings
    from spark_bsvm import CSVC
    from tests.conftest import contiguous_frame

    start = time.perf_counter()
    spark = (SparkSession.builder.master("local-cluster[2,1,1024]").appName("spark-bsvm-shipping")
             .config("spark.executorEnv.PYTHONPATH", str(hidden.parent)).config("spark.ui.enabled", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    print(f"local-cluster[2,1,1024] up in {time.perf_counter() - start:.1f}s")
    X, y = make_rings(400, 4, seed=3)
    df = contiguous_frame(spark, X, y).cache()
    df.count()
    estimator = CSVC(C=1.0, gamma=0.5, numPartitions=2)

    start = time.perf_counter()
    try:
        estimator.fit(df)
        print("UNEXPECTED: the fit worked without the package on the executors")
    except RuntimeError as exc:
        print(f"without the package: failed in {time.perf_counter() - start:.1f}s with:\n  {exc}")

    spark.sparkContext.addPyFile(str(_zip_package(work / "spark_bsvm.zip")))
    start = time.perf_counter()
    model = estimator.fit(df)
    local = fit_csvc(LocalEngine(X, y, n_partitions=2), C=1.0, kernel=KernelSpec(gamma=0.5))
    same = np.allclose(model.expansion.coef, local.coef, rtol=0, atol=1e-9)
    print(f"with the zip: fitted in {time.perf_counter() - start:.1f}s, {model.numSupportVectors} support vectors, "
          f"same model as LocalEngine: {same}")
    start = time.perf_counter()
    hosted = estimator.copy().setCoordinatorMode("executor").fit(df)
    print(f"coordinatorMode='executor': fitted in {time.perf_counter() - start:.1f}s, same model: "
          f"{np.allclose(hosted.expansion.coef, local.coef, rtol=0, atol=1e-9)}")
    spark.stop()


if __name__ == "__main__":
    main()
