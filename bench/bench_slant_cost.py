"""The slant sparsifier's path against the C-SVC reference it sparsifies: is the path cheaper?

On ijcnn1 (49,990 rows, C = 10, gamma = 1) and covtype-20k (the first 15,000 rows, C = 10,
gamma = 16; the settings of ``bench.bench_csvc_vs_libsvm``), in one process: the C-SVC reference
(``fit_csvc`` on ``LocalEngine``, 2 partitions, tol 1e-3), then ``fit_slant`` of that reference on
the same engine, the basic variant with the paper's eta = epsilon = 1/2, up to 1,000 support
vectors (or to its end).  Printed: wall and CPU seconds of both (``time.process_time``, all
threads), the support sizes, the steps, the path's CPU over the reference's (the goal: <= 0.5),
and the test error of both models.  With ``--repeats r`` the pair (reference, path) is fitted r
times, each pair on an engine of its own (an engine's partitions keep a reference's values over
their rows for its later paths, ``core.partition.slant``, and every pair trains the same reference: a
path on the first pair's engine would skip them); the times are medians, and the ratio is that of
the medians, with the range of the r pairs' own ratios beside it (one fit of either varies by up to ~25% on this
machine: the reference's CPU took 2.5 to 3.3 s across runs).  Before them ``core.warm_up`` loads the machine
code of every fit from numba's cache (~4 s; a first run fills the cache), so that no timed fit loads any, and
sets the library's logs to errors.  The Ripley fit that warmed up before left some of a long path's code to the
first pair (ijcnn1: the column store giving up rows, steps applied in bulk, the reference's float64 pass over
the screened rows), whose path took 0.3-0.5 s more CPU than the later ones (sixtieth session).

    python -m bench.bench_slant_cost [--data ijcnn1 covtype] [--support 1000] [--repeats 1]
"""

import argparse
import os

import numpy as np

from bench.bench_csvc_vs_libsvm import DATASETS
from bench.common import print_table, timed
from core import warm_up
from core.engine import LocalEngine
from core.kernels import KernelSpec
from core.slant import fit_slant
from core.svc import fit_csvc

ETA = EPSILON = 0.5
PARTITIONS = 2


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+", default=["ijcnn1", "covtype"], choices=["ijcnn1", "covtype"])
    parser.add_argument("--support", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    warm_up.main([])  # numba's code of every fit loaded before the timed fits (and the fits' logs set to errors)
    rows = []
    for name in args.data:
        load, C, gamma = DATASETS[name]
        X, y, X_test, y_test = load()
        times = []  # (reference wall, reference cpu, path wall, path cpu) per pair
        for _ in range(args.repeats):  # a fresh engine a pair: its path computes the reference's values itself
            with LocalEngine(X, y, n_partitions=PARTITIONS) as engine:
                reference, ref_wall, ref_cpu = timed(lambda: fit_csvc(engine, C=C, tol=1e-3,
                                                                      kernel=KernelSpec("rbf", gamma=gamma)))
                sparse, wall, cpu = timed(lambda: fit_slant(engine, reference, eta=ETA, epsilon=EPSILON,
                                                            max_support=args.support))
                times.append((ref_wall, ref_cpu, wall, cpu))
        ref_wall, ref_cpu, wall, cpu = np.median(times, axis=0)
        pairs = [path / ref for _, ref, _, path in times]
        errors = [100 * np.mean(model.predict(X_test) != y_test) for model in (reference, sparse)]
        rows.append([name, reference.n_support, f"{ref_wall:.2f}", f"{ref_cpu:.2f}", f"{errors[0]:.2f}",
                     sparse.n_support, len(sparse.metadata["steps"]), f"{wall:.2f}", f"{cpu:.2f}",
                     f"{errors[1]:.2f}", f"{cpu / ref_cpu:.2f}", f"{min(pairs):.2f}-{max(pairs):.2f}"])
    print(f"medians of {args.repeats} pairs (reference, path) fitted in turn\n")
    print_table(["data", "C-SVC SVs", "wall s", "cpu s", "test err %", "slant SVs", "steps", "wall s", "cpu s",
                 "test err %", "slant cpu / C-SVC cpu", "pairs' ratios"], rows)
    print(f"\nslant: basic variant, eta = epsilon = {ETA}, up to {args.support} support vectors; "
          "the goal is a ratio <= 0.5")


if __name__ == "__main__":
    main()
