"""The budget SVMs' solves: budget-L1 at the default tol and at 1e-4, and budget-L2, on 10,000 rows.

On the first 10,000 training rows of covtype-20k (gamma = 16) and of ijcnn1 (gamma = 1), the test rows
held out as ``bench.bench_csvc_vs_libsvm`` holds them, ``LocalEngine`` with 2 partitions, budget
B = 500: budget-L1 with C = 10 / 500 at tol 1e-3 (the default) and 1e-4, and budget-L2 with C = 1
(its ball's multiplier search solves to tol / 100).  Printed per fit: wall and CPU seconds
(``time.process_time``, all threads), the dual decomposition's rounds (budget-L2: those of its last
solve), the support size, the dual objective (the minimum reached: lower is better) and the test error.
These fits spend nearly all their time in the working sets' SMO (``core.smo``), in pair steps on a
budget problem: what this bench times.

    python -m bench.bench_budget [--data covtype ijcnn1] [--rows 10000]
"""

import argparse
import os

import numpy as np

from bench.bench_csvc_vs_libsvm import DATASETS
from bench.common import load_ripley, print_table, timed
from core.engine import LocalEngine
from core.kernels import KernelSpec
from core.svc import fit_budget_svm

BUDGET = 500
PARTITIONS = 2
FITS = [("l1", 10 / BUDGET, 1e-3), ("l1", 10 / BUDGET, 1e-4), ("l2", 1.0, 1e-3)]  # norm, C, tol


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+", default=["covtype", "ijcnn1"], choices=["covtype", "ijcnn1"])
    parser.add_argument("--rows", type=int, default=10_000)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    X, y = load_ripley()[:2]
    with LocalEngine(X, y) as engine:  # numba's code loaded before the timed fits
        for norm, _, _ in FITS:
            fit_budget_svm(engine, budget=10, C=1.0, norm=norm)
    rows = []
    for name in args.data:
        load, _, gamma = DATASETS[name]
        X, y, X_test, y_test = load()
        with LocalEngine(X[:args.rows], y[:args.rows], n_partitions=PARTITIONS) as engine:
            for norm, C, tol in FITS:
                model, wall, cpu = timed(lambda: fit_budget_svm(engine, budget=BUDGET, C=C, norm=norm, tol=tol,
                                                                kernel=KernelSpec("rbf", gamma=gamma)))
                rows.append([name, f"budget-{norm.upper()}", f"{C:g}", f"{tol:g}", f"{wall:.2f}", f"{cpu:.2f}",
                             model.metadata["rounds"], model.n_support, f"{float(model.metadata['objective']):.10g}",
                             f"{100 * np.mean(model.predict(X_test) != y_test):.2f}"])
    print(f"\n{args.rows:,} training rows, B = {BUDGET}, {PARTITIONS} partitions\n")
    print_table(["data", "method", "C", "tol", "wall s", "cpu s", "rounds", "SVs", "objective", "test err %"], rows)


if __name__ == "__main__":
    main()
