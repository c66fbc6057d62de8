"""Saving and loading a model with a long recorded path: bytes and seconds.

An SpSVM-2 model of 1,000 basis functions on covtype-20k (the first 15,000 rows; gamma = 16, lambda =
1/64, ``LocalEngine`` with 2 partitions), whose metadata records the coefficients at every size,
d (d + 1) / 2 = 500,500 of them.  Printed: ``KernelExpansion.to_bytes`` and ``from_bytes`` (bytes, the
fastest of 5 calls, wall and CPU seconds), the part of the bytes that is the metadata's arrays, and the
model saved and loaded as a ``BSVMModel`` on ``local[2]`` (the saved directory's bytes; the medians of the
2nd to 4th saves and loads, wall and the CPU of the process tree: Spark's JVM and Python workers too).  It
calls public methods only, so it runs on the code before format 2 too (the metadata as JSON in the header,
format 1): ``bench/README.md`` (other measurements) gives both, alternating.

    python -m bench.bench_model_io
"""

import io
import os
import shutil
import statistics
import tempfile

import numpy as np

from bench.common import load_covtype_20k, local_spark, print_table, timed, tree_cpu_seconds
from core.engine import LocalEngine
from core.kernels import KernelSpec
from core.model import KernelExpansion
from core.spsvm import fit_spsvm

REPEATS = 5


def _fastest(call):
    """(the result of ``call()``, the fastest wall seconds and the fastest CPU seconds of ``REPEATS`` calls)."""
    runs = [timed(call) for _ in range(REPEATS)]
    return runs[-1][0], min(wall for _, wall, _ in runs), min(cpu for _, _, cpu in runs)


def _spark_save_load(expansion):
    """(directory bytes, median save seconds and process-tree CPU seconds, the same of the loads) of the 2nd to
    4th of 4 saves and loads as a ``BSVMModel`` on ``local[2]``."""
    spark = local_spark("bench_model_io", 2, "4g")
    from spark_bsvm.ml.model import BSVMModel

    model, directory = BSVMModel(expansion), tempfile.mkdtemp(prefix="bench_model_io-")
    saves, loads = [], []
    try:
        for i in range(4):
            path = os.path.join(directory, f"model-{i}")
            for action, runs in ((lambda: model.write().save(path), saves), (lambda: BSVMModel.load(path), loads)):
                tree = tree_cpu_seconds()
                _, wall, _ = timed(action)
                runs.append((wall, tree_cpu_seconds() - tree))
        saved = sum(os.path.getsize(os.path.join(root, name))
                    for root, _, names in os.walk(os.path.join(directory, "model-0")) for name in names)
    finally:
        shutil.rmtree(directory)
        spark.stop()
    return (saved,) + tuple(tuple(statistics.median(q) for q in zip(*runs[1:])) for runs in (saves, loads))


def main():
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    X, y, _, _ = load_covtype_20k()
    with LocalEngine(X, y, n_partitions=2) as engine:
        expansion = fit_spsvm(engine, max_basis=1000, lam=1 / 64, kernel=KernelSpec("rbf", gamma=16.0))
    payload, write, write_cpu = _fastest(expansion.to_bytes)
    back, read, read_cpu = _fastest(lambda: KernelExpansion.from_bytes(payload))
    if back.metadata != expansion.metadata:
        raise AssertionError("the metadata did not survive to_bytes and from_bytes")
    with np.load(io.BytesIO(payload)) as archive:
        metadata_bytes = sum(archive[name].nbytes for name in archive.files if name.startswith("metadata_"))
        header_bytes = archive["header"].nbytes
    saved, (save, save_cpu), (load, load_cpu) = _spark_save_load(expansion)
    print_table(["model", "bytes", "metadata arrays", "header", "to_bytes ms", "cpu ms", "from_bytes ms", "cpu ms",
                 "saved dir", "save s", "tree cpu s", "load s", "tree cpu s"],
                [[f"SpSVM-2 d={expansion.n_support}", f"{len(payload) / 1e6:.2f} MB", f"{metadata_bytes / 1e6:.2f} MB",
                  f"{header_bytes / 1e3:.1f} kB", f"{write * 1e3:.1f}", f"{write_cpu * 1e3:.1f}", f"{read * 1e3:.1f}",
                  f"{read_cpu * 1e3:.1f}", f"{saved / 1e6:.2f} MB", f"{save:.3f}", f"{save_cpu:.2f}", f"{load:.3f}",
                  f"{load_cpu:.2f}"]])


if __name__ == "__main__":
    main()
