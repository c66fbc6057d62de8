"""Shipping spark-bsvm to executors that are separate processes (``local-cluster[2,1,1024]``).

1. Executors without spark-bsvm: the fit fails with one line that says so and how to ship it, coordinated by
   the driver (in its training stage) and on the executors (in its job of checks, which runs first).
2. The same application after ``addPyFile`` of a zip of ``core/`` and ``spark_bsvm/`` made by the README's
   ``zip`` command (what ``spark-submit --py-files`` does): the fit works, with the LocalEngine model.
3. The README's recipe: ``spark-submit --py-files spark_bsvm.zip jobs/train.py`` on the same master and
   executors, with a smaller quick start (``README_SMALLER``) and its outputs in a temporary folder.

spark-bsvm may be installed on this machine (editable or not), which executors would find: they
get a ``PYTHONPATH`` whose ``spark_bsvm`` cannot be imported, so that they see no spark-bsvm but
the shipped one.  Prints the seconds each step took.  A script, not a test: the cluster's start
alone takes longer than a test may.  ``python -m bench.check_cluster_shipping``
"""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


MASTER = "local-cluster[2,1,1024]"
README_ZIP = ["zip", "-r", "spark_bsvm.zip", "core", "spark_bsvm", "-i", "*.py"]  # the README's, run in the checkout
README_SMALLER = ["--set", "data.rows=2000", "--set", "model.params.spsvm.maxBasis=30"]


def _zip_package(path):
    """The README's zip command, writing to ``path`` instead of the checkout."""
    subprocess.run(README_ZIP[:2] + [str(path)] + README_ZIP[3:], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return path


def _submit(archive, hidden, work):
    """The README's ``spark-submit --py-files spark_bsvm.zip jobs/train.py`` on ``MASTER``; (exit code, output)."""
    outputs = [f"output.{key}={work / name}" for key, name in (("model", "model"), ("report", "report.json"),
                                                                ("plot", "plot.png"))]
    command = (["spark-submit", "--master", MASTER, "--conf", f"spark.executorEnv.PYTHONPATH={hidden}",
                "--py-files", str(archive), "jobs/train.py"] + README_SMALLER
               + [word for item in outputs for word in ("--set", item)])
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    return done.returncode, done.stdout


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
    spark = (SparkSession.builder.master(MASTER).appName("spark-bsvm-shipping")
             .config("spark.executorEnv.PYTHONPATH", str(hidden.parent)).config("spark.ui.enabled", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    print(f"{MASTER} up in {time.perf_counter() - start:.1f}s")
    X, y = make_rings(400, 4, seed=3)
    df = contiguous_frame(spark, X, y).cache()
    df.count()
    estimator = CSVC(C=1.0, gamma=0.5, numPartitions=2)

    for mode in ("driver", "executor"):
        start = time.perf_counter()
        try:
            estimator.copy().setCoordinatorMode(mode).fit(df)
            print(f"UNEXPECTED: the fit coordinated by the {mode} worked without the package on the executors")
        except RuntimeError as exc:
            print(f"without the package, coordinatorMode='{mode}': failed in {time.perf_counter() - start:.1f}s "
                  f"with:\n  {exc}")

    archive = _zip_package(work / "spark_bsvm.zip")
    spark.sparkContext.addPyFile(str(archive))
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

    start = time.perf_counter()
    code, output = _submit(archive, hidden.parent, work)
    print(f"spark-submit --py-files spark_bsvm.zip jobs/train.py: exit code {code} in "
          f"{time.perf_counter() - start:.1f}s, its output:\n  " + "\n  ".join(output.splitlines()))


if __name__ == "__main__":
    main()
