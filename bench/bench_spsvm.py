"""SpSVM-2 (LocalEngine, 2 partitions) against LIBSVM (scikit-learn's SVC) on ijcnn1 and a8a.

Default mode: for d = 25, 50, 100, 200, 300 basis functions, one SpSVM fit per d on the whole
training file (ijcnn1: 49,990 rows, a8a: 22,696), its test error on the test file and its
training time, next to LIBSVM's test error, support size and time measured in the same run
(ijcnn1: gamma=1, C=10; a8a: gamma=0.05, C=1).  SpSVM's lambda and gamma are the ones chosen by

    python -m bench.bench_spsvm --select

which holds out a seeded 20% of the training file as validation set (the test files are never
read), fits each (lambda, gamma) of a small grid once with d_max basis functions and reads the
validation error at every d off the fit's path (``core.spsvm.truncate``), choosing by the error at
d_max.  Its choice (2026-11-23): ijcnn1 lam=1/32, gamma=0.5 (validation error 2.03% at d=300, grid
lam {1/32, 1/8} x gamma {0.5, 1, 2}); a8a lam=2, gamma=0.05 (15.39% at d=100, grid lam {0.5, 2} x
gamma {0.025, 0.05, 0.1}).

    python -m bench.bench_spsvm [--data ijcnn1 a8a] [--sizes 25 50 100 200 300] [--no-libsvm]
"""

import argparse
import time

import numpy as np
from sklearn.svm import SVC

from bench.common import load_libsvm, print_table
from core.engine import LocalEngine
from core.kernels import KernelSpec
from core.spsvm import fit_spsvm, truncate

# name: (train file, test file, n_features, LIBSVM (gamma, C), SpSVM (lam, gamma) chosen by --select,
#        the selection grid of lam and gamma, d_max of the selection)
DATASETS = {
    "ijcnn1": (("ijcnn1", "ijcnn1"), ("ijcnn1", "ijcnn1.t"), 22, (1.0, 10.0), (1 / 32, 0.5),
               ([1 / 32, 1 / 8], [0.5, 1.0, 2.0]), 300),
    "a8a": (("a8a", "a8a"), ("a8a", "a8a.t"), 123, (0.05, 1.0), (2.0, 0.05),
            ([0.5, 2.0], [0.025, 0.05, 0.1]), 100),
}
SIZES = (25, 50, 100, 200, 300)
KAPPA, SEED, PARTITIONS = 10, 0, 2


def load(name, test=False):
    train, test_file, n_features = DATASETS[name][:3]
    X, y = load_libsvm(*(test_file if test else train), n_features=n_features)
    return X.toarray(), y  # dense rows: faster kernel blocks for these feature counts


def error(model, X, y):
    return 100.0 * np.mean(model.predict(X) != y)


def select(name):
    """Validation error of each (lam, gamma) of the grid at every d; the best by the error at d_max."""
    X, y = load(name)
    rng = np.random.default_rng(SEED)
    held = rng.random(len(y)) < 0.2
    lams, gammas = DATASETS[name][5]
    d_max = DATASETS[name][6]
    sizes = [d for d in SIZES if d <= d_max]
    rows, best = [], None
    for gamma in gammas:
        for lam in lams:
            start = time.perf_counter()
            model = fit_spsvm(LocalEngine(X[~held], y[~held], n_partitions=PARTITIONS), max_basis=d_max, lam=lam,
                              kernel=KernelSpec("rbf", gamma=gamma), kappa=KAPPA, seed=SEED)
            seconds = time.perf_counter() - start
            errors = [error(truncate(model, d), X[held], y[held]) for d in sizes]
            rows.append([name, lam, gamma] + [f"{e:.2f}" for e in errors] + [f"{seconds:.1f}"])
            print(f"{name} lam={lam:.6g} gamma={gamma:.6g}: validation error % at d={sizes}: "
                  f"{[round(e, 2) for e in errors]}, {seconds:.1f}s", flush=True)
            if best is None or errors[-1] < best[0]:
                best = (errors[-1], lam, gamma)
    print_table(["data", "lam", "gamma"] + [f"val err % d={d}" for d in sizes] + ["time s"], rows)
    print(f"{name}: chosen lam={best[1]:.6g}, gamma={best[2]:.6g} (validation error {best[0]:.2f}% at d={d_max})")


def compare(name, sizes, libsvm):
    X, y = load(name)
    Xt, yt = load(name, test=True)
    lam, gamma = DATASETS[name][4]
    rows = []
    for d in sizes:
        start = time.perf_counter()
        model = fit_spsvm(LocalEngine(X, y, n_partitions=PARTITIONS), max_basis=d, lam=lam,
                          kernel=KernelSpec("rbf", gamma=gamma), kappa=KAPPA, seed=SEED)
        seconds = time.perf_counter() - start
        rows.append([name, "SpSVM-2", lam, gamma, d, model.n_support, f"{error(model, Xt, yt):.2f}",
                     f"{seconds:.1f}"])
    if libsvm:
        svc_gamma, C = DATASETS[name][3]
        start = time.perf_counter()
        svc = SVC(C=C, gamma=svc_gamma, tol=1e-3, cache_size=1000).fit(X, y)
        seconds = time.perf_counter() - start
        rows.append([name, "LIBSVM", f"C={C:g}", svc_gamma, "-", svc.support_.size,
                     f"{100.0 * np.mean(svc.predict(Xt) != yt):.2f}", f"{seconds:.1f}"])
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    parser.add_argument("--sizes", nargs="+", type=int, default=list(SIZES))
    parser.add_argument("--select", action="store_true", help="choose lam and gamma on a validation split")
    parser.add_argument("--no-libsvm", action="store_true", help="skip the LIBSVM reference fits")
    args = parser.parse_args()
    if args.select:
        for name in args.data:
            select(name)
        return
    rows = []
    for name in args.data:
        rows += compare(name, args.sizes, not args.no_libsvm)
    print_table(["data", "method", "lam / C", "gamma", "d", "basis / SVs", "test err %", "train s"], rows)


if __name__ == "__main__":
    main()
