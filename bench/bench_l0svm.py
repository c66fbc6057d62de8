"""L0-norm SVM (Huang, Zheng, King & Lyu) on Ripley, as in the paper's Table 1 and Figure 5.

Table 1's protocol: 20 random 100-point subsets of synth.tr (seeded), each
model tested on all 1,000 rows of synth.te; C_xi = 1, C_alpha = 0.2,
Gaussian width 0.5.  The paper does not write its kernel out; it follows
Tipping (2000), whose Gaussian is exp(-||x - z||^2 / r^2), so width 0.5 is
gamma = 4 in our exp(-gamma ||x - z||^2).  The other reading, sigma = 0.5 in
exp(-||x - z||^2 / (2 sigma^2)), is gamma = 2; both are printed, for both
margin terms (see ``core.l0svm``), beside the L2-norm SVM (our C-SVC, C = 1).
Paper: L2-norm SVM 49.8 SVs, 9.65%; L0-norm SVM 4.15 SVs, 9.36%.

Table 4 on twonorm (Breiman's recipe, ``core.synthetic.make_twonorm``, 7,400
rows): 5-fold CV, C_alpha = 0.2, gamma and C_xi chosen per fold by 3-fold CV
inside the training folds over the grid below (kept small so the script runs
in minutes).  The paper does not say how the CV chooses among settings whose
accuracies differ by less than their noise; both rules are printed: the best
inner accuracy, and the sparsest setting (fewest support vectors in the inner
fits) within one standard error of it (Breiman et al.'s one-SE rule).
Paper: L0-norm SVM 97.81%, 16.6 SVs; L2-norm SVM 97.70%, 537.4 SVs.

    PYTHONPATH=. python -m bench.bench_l0svm
"""

import time

import numpy as np

from bench.common import load_ripley, print_table
from core.benchmark_files import ripley_subsets
from core.engine import LocalEngine
from core.kernels import KernelSpec
from core.l0svm import fit_l0svm
from core.svc import fit_csvc
from core.synthetic import make_twonorm

SUBSETS, SUBSET_SIZE, SEED = 20, 100, 0
C_XI, C_ALPHA = 1.0, 0.2
GAMMAS = {4.0: "exp(-d^2/r^2), r=0.5", 2.0: "exp(-d^2/(2s^2)), s=0.5"}
TWONORM_FOLDS, INNER_FOLDS = 5, 3
TWONORM_GRID = [(gamma, C) for gamma in (0.01, 0.1) for C in (0.1, 1.0, 10.0)]  # 1/(d Var x) = 0.042 between
RULES = ("best accuracy", "sparsest within 1 SE")


def ripley_table1(fit, data=None):
    """Mean support size, test error (%) and training seconds of ``fit(engine)`` over the subsets,
    and the models."""
    X, y, Xt, yt = data or load_ripley()
    models, errors, seconds = [], [], []
    for idx in ripley_subsets(X.shape[0], SUBSETS, SUBSET_SIZE, SEED):
        start = time.perf_counter()
        model = fit(LocalEngine(X[idx], y[idx]))
        seconds.append(time.perf_counter() - start)
        errors.append(100.0 * np.mean(model.predict(Xt) != yt))
        models.append(model)
    return float(np.mean([m.n_support for m in models])), float(np.mean(errors)), float(np.mean(seconds)), models


def l0_fit(gamma, margin, C_xi=C_XI):
    return lambda engine: fit_l0svm(engine, C_xi=C_xi, C_alpha=C_ALPHA, kernel=KernelSpec(gamma=gamma),
                                    margin=margin)


def _folds(n, k, seed):
    return np.array_split(np.random.default_rng(seed).permutation(n), k)


def inner_cv(X, y, seed):
    """Per grid point: (inner accuracy, mean support size, fits that converged) of the L0-SVM over INNER_FOLDS."""
    folds = _folds(len(y), INNER_FOLDS, seed)
    scores = []
    for gamma, C in TWONORM_GRID:
        right, sizes, converged = 0, [], 0
        for k, held in enumerate(folds):
            fit_rows = np.concatenate([f for j, f in enumerate(folds) if j != k])
            model = l0_fit(gamma, "kernel", C)(LocalEngine(X[fit_rows], y[fit_rows]))
            right += int(np.sum(model.predict(X[held]) == y[held]))
            sizes.append(model.n_support)
            converged += bool(model.metadata["converged"])
        scores.append((right / len(y), float(np.mean(sizes)), converged))
    return scores


def choose(scores, rule, n):
    """Index of the grid point ``rule`` picks from the inner-CV ``scores`` of n held-out predictions."""
    accuracy = np.array([s[0] for s in scores])
    best = int(np.argmax(accuracy))
    if rule == RULES[0]:
        return best
    within = np.flatnonzero(accuracy >= accuracy[best] - np.sqrt(accuracy[best] * (1 - accuracy[best]) / n))
    return int(within[np.argmin([scores[k][1] for k in within])])


def twonorm_table4():
    """Per fold and rule: (gamma, C, test accuracy %, support size, outer iterations, converged), and the
    inner fits that did not converge."""
    X, y = make_twonorm(seed=SEED)
    results, unconverged = {rule: [] for rule in RULES}, 0
    for fold, test in enumerate(_folds(len(y), TWONORM_FOLDS, SEED)):
        train = np.setdiff1d(np.arange(len(y)), test)
        scores = inner_cv(X[train], y[train], SEED + 1 + fold)
        unconverged += sum(INNER_FOLDS - s[2] for s in scores)
        fitted = {}
        for rule in RULES:
            k = choose(scores, rule, train.size)
            if k not in fitted:
                gamma, C = TWONORM_GRID[k]
                model = l0_fit(gamma, "kernel", C)(LocalEngine(X[train], y[train]))
                fitted[k] = (gamma, C, 100.0 * np.mean(model.predict(X[test]) == y[test]), model.n_support,
                             model.metadata["outer_iterations"], model.metadata["converged"])
            results[rule].append(fitted[k])
    return results, unconverged


def main():
    data = load_ripley()
    rows, figure, summary = [], {}, []
    for gamma, convention in GAMMAS.items():
        svs, err, sec, _ = ripley_table1(lambda e: fit_csvc(e, C=C_XI, kernel=KernelSpec(gamma=gamma)), data)
        rows.append(["L2-norm SVM (C-SVC)", gamma, convention, "-", f"{svs:.2f}", f"{err:.2f}", f"{sec:.3f}", "-"])
        for margin in ("kernel", "identity"):
            svs, err, sec, models = ripley_table1(l0_fit(gamma, margin), data)
            outer = np.mean([m.metadata["outer_iterations"] for m in models])
            rows.append(["L0-norm SVM", gamma, convention, margin, f"{svs:.2f}", f"{err:.2f}", f"{sec:.3f}",
                         f"{outer:.1f}"])
            if margin == "kernel":
                figure[gamma] = [m.metadata["support_sizes"] for m in models[:3]]
                converged = sum(m.metadata["converged"] for m in models)
                sizes = [m.n_support for m in models]
                summary.append([f"Ripley, gamma={gamma:g}", "Table 1", "90.64 / 4.15", f"{100 - err:.2f}",
                                f"{svs:.2f}", f"{np.median(sizes):g}", max(sizes), f"{converged}/{len(models)}"])
    print(f"Table 1 on Ripley: mean over {SUBSETS} random {SUBSET_SIZE}-point subsets of synth.tr, "
          f"tested on synth.te; C_xi={C_XI}, C_alpha={C_ALPHA}")
    print_table(["method", "gamma", "kernel reading", "margin", "SVs", "error %", "train s", "outer it"], rows)
    print("paper: L2-norm SVM 49.8 SVs 9.65%; L0-norm SVM 4.15 SVs 9.36%")
    for gamma, paths in figure.items():
        print(f"\nFigure 5: support size |A| per outer iteration (0 = the initial set), gamma={gamma}, "
              "margin=kernel, first three subsets")
        longest = max(len(p) for p in paths)
        print_table(["iteration"] + [f"subset {k + 1}" for k in range(len(paths))],
                    [[t] + [p[t] if t < len(p) else "" for p in paths] for t in range(longest)])

    results, unconverged = twonorm_table4()
    grid = ", ".join(f"({g:g}, {c:g})" for g, c in TWONORM_GRID)
    print(f"\nTable 4 on twonorm ({TWONORM_FOLDS}-fold CV; (gamma, C_xi) per fold by {INNER_FOLDS}-fold inner CV "
          f"over {grid}; C_alpha={C_ALPHA}, margin=kernel)")
    print_table(["rule", "fold", "gamma", "C_xi", "accuracy %", "SVs", "outer it", "converged"],
                [[rule, k + 1, g, c, f"{acc:.2f}", svs, it, conv]
                 for rule in RULES for k, (g, c, acc, svs, it, conv) in enumerate(results[rule])])
    total = TWONORM_FOLDS * INNER_FOLDS * len(TWONORM_GRID)
    print(f"inner-CV fits that stopped at max_outer: {unconverged} of {total}")
    for rule in RULES:
        acc = [r[2] for r in results[rule]]
        sizes = [r[3] for r in results[rule]]
        summary.append([f"twonorm, {rule}", "Table 4", "97.81 / 16.6", f"{np.mean(acc):.2f}", f"{np.mean(sizes):.1f}",
                        f"{np.median(sizes):g}", max(sizes), f"{sum(r[5] for r in results[rule])}/{len(sizes)}"])
    print("\nL0-norm SVM beside the paper (Ripley: margin=kernel; twonorm: per-fold choice by the rule named)")
    print_table(["data", "paper's", "paper acc % / SVs", "accuracy %", "SVs mean", "median", "max", "converged"],
                summary)


if __name__ == "__main__":
    main()
