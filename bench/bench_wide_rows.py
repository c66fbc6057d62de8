"""Every method on rows of a million features, text-like and sparse, against LIBSVM's C-SVC on the same rows.

Generated rows as a bag of words gives them: a vocabulary of ``--features`` words (default 1,000,000), each
row ~20 words, 5 of them from its class's topic of 200 words and the rest from the whole vocabulary, values
positive and each row scaled to norm 1 (as tf-idf rows are), 5% of the labels flipped; ``--rows`` training
rows (default 10,000) and a quarter as many test rows.  Each case runs in a process of its own, after a fit on
other rows of the same kind that loads numba's code, and prints wall and CPU seconds (``time.process_time``,
all threads), the most memory the process held beyond what it held before the fit (its peak resident set),
the support size and the test error.  spark-bsvm's fits run on ``LocalEngine`` with 2 partitions; LIBSVM is
scikit-learn's SVC on the CSR rows, with the same C, gamma, tolerance (1e-3) and a 1,000 MB kernel cache.
Before the core kept such rows sparse, a C-SVC fit of 400 of them held 6.3 GB, and the slant sparsifier
could not start (``bench/HISTORY.md``).

    python -m bench.bench_wide_rows [--rows 10000] [--features 1000000] [--cases csvc libsvm ...]
"""

import argparse
import multiprocessing
import resource

import numpy as np

from bench.common import print_table, timed

C, GAMMA, BUDGET = 1.0, 1.0, 100
CASES = ("csvc", "libsvm", "budget_l1", "spsvm", "ebsvm", "slant", "l0svm")


def wide_rows(n, p, seed):
    """(X, y): n CSR rows of p features, bag-of-words-like (see the module doc), labels +-1."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    topics = np.random.default_rng(0).choice(p, (2, 200), replace=False)  # the same topics for every seed
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    features = [np.union1d(rng.choice(topics[int(label > 0)], 5, replace=False), rng.choice(p, 15, replace=False))
                for label in y]
    indptr = np.concatenate([[0], np.cumsum([f.size for f in features])])
    values = rng.random(indptr[-1]) + 0.1
    X = sp.csr_matrix((values, np.concatenate(features), indptr), shape=(n, p))
    X = sp.diags(1.0 / np.sqrt(X.multiply(X).sum(axis=1).A1)) @ X
    flipped = rng.random(n) < 0.05
    y[flipped] = -y[flipped]
    return X.tocsr(), y


def _fit(case, X, y):
    """The model of ``case`` on (X, y): a KernelExpansion, or scikit-learn's SVC for ``libsvm``."""
    from core.ebsvm import fit_ebsvm
    from core.engine import LocalEngine
    from core.kernels import KernelSpec
    from core.l0svm import fit_l0svm
    from core.slant import fit_slant
    from core.spsvm import fit_spsvm
    from core.svc import fit_budget_svm, fit_csvc

    kernel = KernelSpec("rbf", gamma=GAMMA)
    if case == "libsvm":
        from sklearn.svm import SVC

        return SVC(C=C, gamma=GAMMA, tol=1e-3, cache_size=1000).fit(X, y)
    engine = LocalEngine(X, y, n_partitions=2)
    fits = {"csvc": lambda: fit_csvc(engine, C=C, kernel=kernel),
            "budget_l1": lambda: fit_budget_svm(engine, budget=BUDGET, C=C, kernel=kernel),
            "spsvm": lambda: fit_spsvm(engine, max_basis=BUDGET, lam=1e-3, kernel=kernel),
            "ebsvm": lambda: fit_ebsvm(engine, budget=BUDGET, lam=1e-4, kernel=kernel),
            "slant": lambda: fit_slant(engine, fit_csvc(engine, C=C, kernel=kernel), max_support=BUDGET),
            "l0svm": lambda: fit_l0svm(engine, kernel=kernel)}
    return fits[case]()


def _run(case, n, p, out):
    """One case in this process: its row of the table, put on the queue ``out``."""
    import warnings

    warnings.simplefilter("ignore")  # the budget and slant fits' notes on their settings
    X, y = wide_rows(n, p, seed=1)
    Xt, yt = wide_rows(max(1, n // 4), p, seed=2)
    _fit(case, *wide_rows(300, p, seed=3))  # numba's code loaded, the fit's libraries imported
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    model, wall, cpu = timed(lambda: _fit(case, X, y))
    held = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024  # KB to MB
    support = int(model.n_support_.sum()) if case == "libsvm" else model.n_support
    error = 100.0 * np.mean(model.predict(Xt) != yt)
    out.put([case, round(wall, 2), round(cpu, 2), round(max(held, 0.0), 1), support, round(error, 2)])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000, help="training rows (test rows: a quarter as many)")
    parser.add_argument("--features", type=int, default=1_000_000)
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    args = parser.parse_args()
    if args.rows < 4 or args.features < 400:
        parser.error("--rows must be at least 4 and --features at least 400 (the two topics' words)")
    context = multiprocessing.get_context("spawn")
    rows = []
    for case in args.cases:
        out = context.Queue()
        process = context.Process(target=_run, args=(case, args.rows, args.features, out))
        process.start()
        process.join()  # the row put on the queue is small: the process ends without waiting for a reader
        if process.exitcode:
            raise SystemExit(f"the {case} case failed (exit code {process.exitcode}), its error above")
        rows.append(out.get())
    print(f"{args.rows} training rows of {args.features} features, ~20 stored a row; C = {C:g}, gamma = {GAMMA:g}, "
          f"budgets {BUDGET}")
    print_table(["case", "wall s", "CPU s", "peak MB beyond start", "support", "test error %"], rows)
    libsvm = {r[0]: r for r in rows}.get("libsvm")
    ours = {r[0]: r for r in rows}.get("csvc")
    if libsvm and ours:
        print(f"C-SVC over LIBSVM: {ours[2] / libsvm[2]:.2f}x the CPU seconds, {ours[1] / libsvm[1]:.2f}x the wall")


if __name__ == "__main__":
    main()
