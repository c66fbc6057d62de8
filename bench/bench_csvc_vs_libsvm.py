"""C-SVC of spark-bsvm (LocalEngine, 2 partitions) against LIBSVM (scikit-learn's SVC).

Same C, gamma and tolerance (1e-3) on Ripley, a 10,000-row random subset of
ijcnn1 (test on 10,000 random rows of ijcnn1.t) and a8a; prints the dual
objective, test accuracy, support size and training time of both, measured
in one run.

    python bench/bench_csvc_vs_libsvm.py
"""

import time

import numpy as np
from sklearn.svm import SVC

from bench.common import load_libsvm, load_ripley, print_table
from core.engine import LocalEngine
from core.kernels import KernelSpec, kernel_block
from core.svc import fit_csvc


def datasets():
    yield ("ripley", *load_ripley(), 10.0, 2.0)
    X, y = load_libsvm("ijcnn1", "ijcnn1", n_features=22)
    Xt, yt = load_libsvm("ijcnn1", "ijcnn1.t", n_features=22)
    rng = np.random.default_rng(0)
    tr = np.sort(rng.choice(X.shape[0], 10_000, replace=False))
    te = np.sort(rng.choice(Xt.shape[0], 10_000, replace=False))
    yield ("ijcnn1 10k", X[tr].toarray(), y[tr], Xt[te].toarray(), yt[te], 10.0, 1.0)
    X, y = load_libsvm("a8a", "a8a", n_features=123)
    Xt, yt = load_libsvm("a8a", "a8a.t", n_features=123)
    yield ("a8a", X, y, Xt, yt, 1.0, 0.05)


def main():
    rows = []
    for name, X, y, Xt, yt, C, gamma in datasets():
        kernel = KernelSpec("rbf", gamma=gamma)
        start = time.perf_counter()
        model = fit_csvc(LocalEngine(X, y, n_partitions=2), C=C, kernel=kernel, tol=1e-3)
        ours_time = time.perf_counter() - start
        dense = X.toarray() if hasattr(X, "toarray") else X
        start = time.perf_counter()
        svc = SVC(C=C, gamma=gamma, tol=1e-3, cache_size=1000).fit(dense, y)
        ref_time = time.perf_counter() - start
        coef = svc.dual_coef_.ravel()
        K = kernel_block(svc.support_vectors_, svc.support_vectors_, kernel)
        ref_obj = 0.5 * coef @ K @ coef - np.abs(coef).sum()
        dense_t = Xt.toarray() if hasattr(Xt, "toarray") else Xt
        ours_acc = 100 * np.mean(model.predict(Xt) == yt)
        ref_acc = 100 * np.mean(svc.predict(dense_t) == yt)
        obj = model.metadata["objective"]
        rows.append([name, C, gamma, obj, ref_obj, f"{abs(obj - ref_obj) / abs(ref_obj):.1e}",
                     f"{ours_acc:.2f}", f"{ref_acc:.2f}", model.n_support, svc.support_.size,
                     f"{ours_time:.1f}", f"{ref_time:.1f}", model.metadata["rounds"]])
    print_table(["data", "C", "gamma", "objective", "LIBSVM obj", "rel diff", "acc %", "LIBSVM acc %",
                 "SVs", "LIBSVM SVs", "time s", "LIBSVM s", "rounds"], rows)


if __name__ == "__main__":
    main()
