"""Dekel & Singer's Figure 1, qualitatively: prune to s = B, compare with a pruned C-SVC.

As in section 5: random binary problems made by splitting the classes of a
multi-class set into two equal halves (here ``letter``, 26 classes, instead
of MNIST), 1,000 training and 4,000 test examples each, features scaled to
unit average norm, Gaussian kernel with sigma = 1 (gamma = 1/2), C = C0 / B
for budget-L1 and C0 / sqrt(B) for budget-L2.  Every model keeps only its s
largest weights, s = B; the C-SVC (C = C0) is pruned the same way.  The
table prints test errors averaged over the problems.

    python -m bench.bench_budget_pruning [--problems 5] [--C0 10]
"""

import argparse
import time

import numpy as np

from bench.common import load_libsvm, print_table
from core.engine import LocalEngine
from core.kernels import KernelSpec
from core.svc import fit_budget_svm, fit_csvc

BUDGETS = (20, 40, 80, 160, 320)


def problems(n_problems, seed=0):
    X, y = load_libsvm("letter", "letter.scale", n_features=16)
    Xt, yt = load_libsvm("letter", "letter.scale.t", n_features=16)
    X = np.vstack([X.toarray(), Xt.toarray()])
    y = np.concatenate([y, yt])
    X /= np.sqrt((X**2).sum(axis=1)).mean()
    rng = np.random.default_rng(seed)
    classes = np.unique(y)
    for _ in range(n_problems):
        positive = rng.choice(classes, classes.size // 2, replace=False)
        labels = np.where(np.isin(y, positive), 1.0, -1.0)
        idx = rng.permutation(y.size)
        tr, te = idx[:1000], idx[1000:5000]
        yield X[tr], labels[tr], X[te], labels[te]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problems", type=int, default=5)
    parser.add_argument("--C0", type=float, default=10.0)
    parser.add_argument("--gamma", type=float, default=0.5, help="RBF gamma (0.5: the paper's sigma = 1)")
    args = parser.parse_args()
    kernel = KernelSpec("rbf", gamma=args.gamma)
    err = {key: np.zeros(len(BUDGETS)) for key in ("l1", "l2", "csvc", "l1 full", "l2 full")}
    n_sv = {key: np.zeros(len(BUDGETS)) for key in ("l1", "l2")}
    full_csvc = []
    start = time.perf_counter()
    for X, y, Xt, yt in problems(args.problems):
        csvc = fit_csvc(LocalEngine(X, y), C=args.C0, kernel=kernel)
        full_csvc.append((np.mean(csvc.predict(Xt) != yt), csvc.n_support))
        for k, B in enumerate(BUDGETS):
            err["csvc"][k] += np.mean(csvc.pruned(B).predict(Xt) != yt)
            for norm, C in (("l1", args.C0 / B), ("l2", args.C0 / np.sqrt(B))):
                model = fit_budget_svm(LocalEngine(X, y), budget=B, C=C, norm=norm, kernel=kernel)
                n_sv[norm][k] += model.n_support
                err[norm][k] += np.mean(model.pruned(B).predict(Xt) != yt)
                err[norm + " full"][k] += np.mean(model.predict(Xt) != yt)
    m = args.problems
    full_err, full_sv = np.mean(full_csvc, axis=0)
    print(f"letter, random class halves: {m} problems, 1,000 train / 4,000 test, "
          f"gamma={args.gamma:g}, C0={args.C0:g}")
    print(f"unpruned C-SVC (C={args.C0:g}): test error {100 * full_err:.2f}%, {full_sv:.0f} SVs\n")
    rows = [[B] + [f"{100 * err[key][k] / m:.2f}" if key in err else f"{n_sv[key[:2]][k] / m:.0f}"
                   for key in ("l1 full", "l1 SVs", "l1", "l2 full", "l2 SVs", "l2", "csvc")]
            for k, B in enumerate(BUDGETS)]
    print_table(["s = B", "L1 err %", "L1 SVs", "L1 pruned err %", "L2 err %", "L2 SVs", "L2 pruned err %",
                 "C-SVC pruned err %"], rows)
    print(f"\n({time.perf_counter() - start:.0f}s)")


if __name__ == "__main__":
    main()
