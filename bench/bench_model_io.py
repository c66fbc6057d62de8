"""Saving and loading a model with a long recorded path: bytes and seconds.

An SpSVM-2 model of 1,000 basis functions on covtype-20k (the first 15,000 rows; gamma = 16, lambda =
1/64, ``LocalEngine`` with 2 partitions), whose metadata records the coefficients at every size,
d (d + 1) / 2 = 500,500 of them.  Printed: ``KernelExpansion.to_bytes`` and ``from_bytes`` (bytes, the
fastest of 5 calls), the part of the bytes that is the metadata's arrays, and the model saved and loaded
as a ``BSVMModel`` on ``local[2]`` (the saved directory's bytes; the range of the 2nd to 4th saves and
loads).  The seconds of the format before the arrays (format 1, the metadata as JSON in the header) are
in ``bench/README.md`` (other measurements), taken with that code.

    python -m bench.bench_model_io
"""

import io
import os
import shutil
import sys
import tempfile
import time

import numpy as np

from bench.common import load_covtype_20k, print_table
from core.engine import LocalEngine
from core.kernels import KernelSpec
from core.model import KernelExpansion
from core.spsvm import fit_spsvm

REPEATS = 5


def _fastest(call):
    """(the result of ``call()``, its fastest wall seconds of ``REPEATS`` calls)."""
    best, result = np.inf, None
    for _ in range(REPEATS):
        start = time.perf_counter()
        result = call()
        best = min(best, time.perf_counter() - start)
    return result, best


def _spark_save_load(expansion):
    """(directory bytes, [save seconds], [load seconds]) of 4 saves and loads as a ``BSVMModel``."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from spark_bsvm.ml.model import BSVMModel

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    model, directory = BSVMModel(expansion), tempfile.mkdtemp(prefix="bench_model_io-")
    saves, loads = [], []
    try:
        for i in range(4):
            path = os.path.join(directory, f"model-{i}")
            start = time.perf_counter()
            model.write().save(path)
            saves.append(time.perf_counter() - start)
            start = time.perf_counter()
            BSVMModel.load(path)
            loads.append(time.perf_counter() - start)
        saved = sum(os.path.getsize(os.path.join(root, name))
                    for root, _, names in os.walk(os.path.join(directory, "model-0")) for name in names)
    finally:
        shutil.rmtree(directory)
    return saved, saves[1:], loads[1:]


def main():
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    X, y, _, _ = load_covtype_20k()
    with LocalEngine(X, y, n_partitions=2) as engine:
        expansion = fit_spsvm(engine, max_basis=1000, lam=1 / 64, kernel=KernelSpec("rbf", gamma=16.0))
    payload, write = _fastest(expansion.to_bytes)
    back, read = _fastest(lambda: KernelExpansion.from_bytes(payload))
    if back.metadata != expansion.metadata:
        raise AssertionError("the metadata did not survive to_bytes and from_bytes")
    with np.load(io.BytesIO(payload)) as archive:
        metadata_bytes = sum(archive[name].nbytes for name in archive.files if name.startswith("metadata_"))
        header_bytes = archive["header"].nbytes
    saved, saves, loads = _spark_save_load(expansion)
    print_table(["model", "bytes", "metadata arrays", "header", "to_bytes ms", "from_bytes ms", "saved dir",
                 "save s", "load s"],
                [[f"SpSVM-2 d={expansion.n_support}", f"{len(payload) / 1e6:.2f} MB", f"{metadata_bytes / 1e6:.2f} MB",
                  f"{header_bytes / 1e3:.1f} kB", f"{write * 1e3:.1f}", f"{read * 1e3:.1f}", f"{saved / 1e6:.2f} MB",
                  f"{min(saves):.3f}-{max(saves):.3f}", f"{min(loads):.3f}-{max(loads):.3f}"]])


if __name__ == "__main__":
    main()
