"""Prediction in float32 against float64: the same models' test error, decision values and time.

Models trained (float64, ``LocalEngine``, 2 partitions) as the other benches train them: on covtype-20k
(the first 15,000 rows train, the last 5,000 test) the C-SVC of ``bench.bench_csvc_vs_libsvm`` (C = 10,
gamma = 16) and SpSVM-2 with 1,000 basis functions of ``bench.bench_spsvm_cost`` (gamma = 4, lambda = 1/64);
on ijcnn1 (49,990 rows, test on the 91,701 of ijcnn1.t) the C-SVC (C = 10, gamma = 1).  Each model's test
rows, as dense rows and as CSR rows (their float32 dot products come from a GEMM and from the CSR loop),
are scored by ``decision_function`` with ``precision="float64"`` and ``"float32"``, alternating, 5 times
each: printed are both test errors, the predictions that differ, the largest |f32 - f64|, and the median
wall and CPU seconds (``time.process_time``, all threads) of one scoring.

    python -m bench.bench_precision
"""

import os
import time

import numpy as np
import scipy.sparse as sp

from bench.bench_csvc_vs_libsvm import DATASETS
from bench.common import print_table
from core.engine import LocalEngine
from core.kernels import KernelSpec
from core.rows import to_dense
from core.spsvm import fit_spsvm
from core.svc import fit_csvc

REPEATS = 5


def _models():
    """(data name, method, model, test rows, test labels) of the three models."""
    out = []
    for name in ("covtype", "ijcnn1"):
        load, C, gamma = DATASETS[name]
        X, y, X_test, y_test = load()
        with LocalEngine(X, y, n_partitions=2) as engine:
            out.append((name, "C-SVC", fit_csvc(engine, C=C, kernel=KernelSpec("rbf", gamma=gamma)), X_test, y_test))
            if name == "covtype":
                spsvm = fit_spsvm(engine, max_basis=1000, lam=1 / 64, kernel=KernelSpec("rbf", gamma=4.0), tol=0.0)
                out.append((name, "SpSVM-2 d=1000", spsvm, X_test, y_test))
    return out


def _scored(model, X, precision):
    """(decision values, wall s, cpu s) of one scoring."""
    wall, cpu = time.perf_counter(), time.process_time()
    f = model.decision_function(X, precision)
    return f, time.perf_counter() - wall, time.process_time() - cpu


def main():
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores\n")
    rows = []
    for (name, method, model, X, y), form in ((case, form) for case in _models() for form in ("dense", "CSR")):
        X = to_dense(X) if form == "dense" else sp.csr_matrix(to_dense(X))
        times = {"float64": [], "float32": []}
        values = {}
        for _ in range(REPEATS):
            for precision in times:
                values[precision], wall, cpu = _scored(model, X, precision)
                times[precision].append((wall, cpu))
        f64, f32 = values["float64"], values["float32"]
        positive = model.classes[1]
        errors = [100 * np.mean((f > 0) != (y == positive)) for f in (f64, f32)]
        (w64, c64), (w32, c32) = (np.median(times[p], axis=0) for p in ("float64", "float32"))
        rows.append([name, method, model.n_support, form, f"{errors[0]:.2f}", f"{errors[1]:.2f}",
                     int(np.sum((f64 > 0) != (f32 > 0))), f"{np.max(np.abs(f32 - f64)):.1e}",
                     f"{w64:.3f}", f"{c64:.3f}", f"{w32:.3f}", f"{c32:.3f}", f"{c64 / c32:.2f}"])
    print_table(["data", "model", "SVs", "rows", "test err % f64", "test err % f32", "predictions differing",
                 "max |f32 - f64|", "f64 wall s", "f64 cpu s", "f32 wall s", "f32 cpu s", "cpu f64 / f32"], rows)


if __name__ == "__main__":
    main()
