"""C-SVC of spark-bsvm (LocalEngine, 2 partitions) against LIBSVM (scikit-learn's SVC).

Same C, gamma, tolerance (1e-3) and a 1,000 MB kernel cache for LIBSVM, on Ripley, ijcnn1
(49,990 rows; test on ijcnn1.t), a8a and covtype-20k (the first 15,000 rows train, the last
5,000 test; gamma = 16, C = 10 as in ``../shared/data/README.md``); prints the dual objective,
test accuracy, support size, and wall and CPU seconds (``time.process_time``, all threads) of
both, measured in one run, and ours over LIBSVM's CPU seconds.  Each is the first fit on its data in the
process (after a Ripley fit that loads numba's code), whose first writes to fresh memory can cost more than a
later fit's (on the forty-first and forty-second sessions' virtual machine, up to ~1 s on covtype before the
working set's buffer went to small pages: ``HISTORY.md``); with ``--fits n`` both fit each data set n times,
alternating, and the medians of the later fits' CPU seconds and their ratio are printed beside.

    python -m bench.bench_csvc_vs_libsvm [--data ripley ijcnn1 a8a covtype] [--fits 1]
"""

import argparse

import numpy as np
from sklearn.svm import SVC

from bench.common import load_covtype_20k, load_libsvm, load_ripley, print_table, timed
from core.engine import LocalEngine
from core.kernels import KernelSpec, kernel_block
from core.svc import fit_csvc


def _ijcnn1():
    X, y = load_libsvm("ijcnn1", "ijcnn1", n_features=22)
    Xt, yt = load_libsvm("ijcnn1", "ijcnn1.t", n_features=22)
    return X.toarray(), y, Xt.toarray(), yt


def _a8a():
    return (*load_libsvm("a8a", "a8a", n_features=123), *load_libsvm("a8a", "a8a.t", n_features=123))


# name: (data, C, gamma)
DATASETS = {"ripley": (load_ripley, 10.0, 2.0), "ijcnn1": (_ijcnn1, 10.0, 1.0), "a8a": (_a8a, 1.0, 0.05),
            "covtype": (load_covtype_20k, 10.0, 16.0)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    parser.add_argument("--fits", type=int, default=1, help="fits of each data set by each, alternating")
    args = parser.parse_args()
    if args.fits < 1:
        parser.error(f"--fits must be at least 1, got {args.fits}")
    fit_csvc(LocalEngine(*load_ripley()[:2]), C=1.0)  # numba's code loaded before the timed fits
    rows = []
    for name in args.data:
        load, C, gamma = DATASETS[name]
        X, y, Xt, yt = load()
        kernel = KernelSpec("rbf", gamma=gamma)
        dense = X.toarray() if hasattr(X, "toarray") else X
        ours, ref = [], []  # (model, wall, cpu) of each fit, alternating
        for _ in range(args.fits):
            ours.append(timed(lambda: fit_csvc(LocalEngine(X, y, n_partitions=2), C=C, kernel=kernel, tol=1e-3)))
            ref.append(timed(lambda: SVC(C=C, gamma=gamma, tol=1e-3, cache_size=1000).fit(dense, y)))
        (model, ours_time, ours_cpu), (svc, ref_time, ref_cpu) = ours[0], ref[0]
        coef = svc.dual_coef_.ravel()
        K = kernel_block(svc.support_vectors_, svc.support_vectors_, kernel)
        ref_obj = 0.5 * coef @ K @ coef - np.abs(coef).sum()
        dense_t = Xt.toarray() if hasattr(Xt, "toarray") else Xt
        ours_acc = 100 * np.mean(model.predict(Xt) == yt)
        ref_acc = 100 * np.mean(svc.predict(dense_t) == yt)
        obj = model.metadata["objective"]
        rows.append([name, C, gamma, obj, ref_obj, f"{abs(obj - ref_obj) / abs(ref_obj):.1e}",
                     f"{ours_acc:.2f}", f"{ref_acc:.2f}", model.n_support, svc.support_.size,
                     f"{ours_time:.1f}", f"{ours_cpu:.1f}", f"{ref_time:.1f}", f"{ref_cpu:.1f}",
                     f"{ours_cpu / ref_cpu:.2f}", model.metadata["rounds"]])
        if args.fits > 1:
            later = [float(np.median([cpu for _, _, cpu in fits[1:]])) for fits in (ours, ref)]
            rows[-1] += [f"{later[0]:.1f}", f"{later[1]:.1f}", f"{later[0] / later[1]:.2f}"]
    later_columns = ["later cpu s", "LIBSVM later cpu s", "later cpu ratio"] if args.fits > 1 else []
    print_table(["data", "C", "gamma", "objective", "LIBSVM obj", "rel diff", "acc %", "LIBSVM acc %",
                 "SVs", "LIBSVM SVs", "wall s", "cpu s", "LIBSVM wall s", "LIBSVM cpu s", "cpu ratio", "rounds",
                 *later_columns], rows)


if __name__ == "__main__":
    main()
