"""The slant sparsifier beside SpSVM-2: test error against support size on covtype-20k and ijcnn1 (accuracy only).

covtype-20k: the first 15,000 rows train, the last 5,000 test; ijcnn1: ijcnn1 (49,990 rows) trains,
ijcnn1.t (91,701) tests.  A seeded 20% of the training rows validates; everything is fitted on the other
80%, and the model tested at a size is the very model whose validation error chose it (no refit).

Slant (Cotter, Shalev-Shwartz & Srebro, the basic variant, epsilon = 1/2): every reference of the grid
(LIBSVM's C-SVC, rbf gamma x C) is sparsified once per eta up to 1,000 support vectors, with the
validation rows on the engine, so each path brings its validation error at every size; per size, the
(gamma, C, eta) with the smallest validation error is kept (section 7 chooses eta so; the reference's C
and gamma are chosen too, because the support size the path needs grows with the reference's ||w||^2:
see "Small support sets" in ``core.slant``).  The column "slant, old setting" is the path of the benches
before issue 17 (covtype-20k: gamma = 16, C = 10; ijcnn1: gamma = 1, C = 10; eta = epsilon = 1/2), on
the same 80%.

SpSVM-2 (Keerthi, Chapelle & DeCoste): one fit to 1,000 basis functions per (gamma, lambda) of its grid,
its recorded path scored on the same validation rows, the best per size kept.

Printed per data set: size, then for each method the test error, the validation error that chose it, the
support vectors of the model and the params chosen; then the grid's references (support vectors,
||w||^2, bias) and where each slant path ended.

    python -m bench.bench_slant_curves [--data covtype ijcnn1] [--sizes 10,25,50,100,200,500,1000]
"""

import argparse
import logging
import time

import numpy as np

from bench.common import load_covtype_20k, load_libsvm, print_table
from core.engine import LocalEngine
from core.kernels import KernelSpec
from core.slant import fit_slant, slant_model_at
from core.spsvm import fit_spsvm, truncate
from core.svc import fit_csvc

VALIDATION_SHARE, SEED, PARTITIONS = 0.2, 0, 2
ETAS, EPSILON = (1 / 4, 1 / 2, 1.0), 0.5
MAX_STEPS = 20_000  # eta = 1 has no step bound at epsilon = 1/2 (2 epsilon = eta Kmax)
# per data set: the reference grid (gamma, C), the old setting, SpSVM-2's grid (gamma, lambda)
GRIDS = {
    "covtype": {"reference": [(g, C) for g in (1.0, 4.0, 16.0) for C in (0.1, 1.0, 10.0)], "old": (16.0, 10.0),
                "spsvm": [(g, lam) for g in (1.0, 4.0) for lam in (1 / 64, 1 / 16)]},
    "ijcnn1": {"reference": [(g, C) for g in (0.5, 1.0) for C in (0.1, 1.0, 10.0)], "old": (1.0, 10.0),
               "spsvm": [(g, lam) for g in (0.5, 1.0) for lam in (1 / 32, 1 / 8)]},
}


def load(name):
    """(X, y, X_test, y_test), dense rows."""
    if name == "covtype":
        return load_covtype_20k()
    X, y = load_libsvm("ijcnn1", "ijcnn1", n_features=22)
    Xt, yt = load_libsvm("ijcnn1", "ijcnn1.t", n_features=22)
    return X.toarray(), y, Xt.toarray(), yt


def at_size(record, size):
    """The validation error of a path (its ``metadata["validation"]``) at the largest recorded size <= ``size``."""
    return record["error"][int(np.searchsorted(record["sizes"], size, side="right")) - 1]


def slant_paths(X, y, held, name, largest):
    """{(gamma, C, eta): slant path} over the grid, and one line per reference."""
    fit_rows = LocalEngine(X[~held], y[~held], n_partitions=PARTITIONS)
    engine = LocalEngine(X, y, n_partitions=PARTITIONS, validation=held)
    paths, notes = {}, []
    for gamma, C in GRIDS[name]["reference"]:
        start = time.perf_counter()
        reference = fit_csvc(fit_rows, C=C, kernel=KernelSpec("rbf", gamma=gamma))
        ends = []
        for eta in ETAS:
            path = fit_slant(engine, reference, eta=eta, epsilon=EPSILON, max_support=largest, max_steps=MAX_STEPS)
            paths[gamma, C, eta] = path
            ends.append(f"eta={eta:g}: {path.n_support} ({path.metadata['stopped']})")
        meta = paths[gamma, C, ETAS[0]].metadata["reference"]
        notes.append(f"  reference gamma={gamma:g} C={C:g}: {reference.n_support} SVs, ||w||^2 = "
                     f"{meta['sq_norm']:.4g}, b = {reference.bias:.3f}; path ends at {', '.join(ends)}; "
                     f"{time.perf_counter() - start:.0f}s")
    return paths, notes


def spsvm_paths(X, y, held, name, largest):
    """{(gamma, lambda): SpSVM-2 fit to ``largest`` basis functions}, validation rows on the engine."""
    engine = LocalEngine(X, y, n_partitions=PARTITIONS, validation=held)
    return {(gamma, lam): fit_spsvm(engine, max_basis=largest, lam=lam, kernel=KernelSpec("rbf", gamma=gamma),
                                    tol=0.0) for gamma, lam in GRIDS[name]["spsvm"]}


def error(model, X, y):
    return 100.0 * np.mean(model.predict(X) != y)


def run(name, sizes):
    X, y, Xt, yt = load(name)
    held = np.random.default_rng(SEED).random(len(y)) < VALIDATION_SHARE
    start = time.perf_counter()
    slant, notes = slant_paths(X, y, held, name, max(sizes))
    slant_seconds = time.perf_counter() - start
    start = time.perf_counter()
    spsvm = spsvm_paths(X, y, held, name, max(sizes))
    spsvm_seconds = time.perf_counter() - start
    val = {key: model.metadata["validation"] for key, model in {**slant, **spsvm}.items()}
    old = slant[GRIDS[name]["old"] + (EPSILON,)]
    rows = []
    for size in sizes:
        s_key = min(slant, key=lambda k: (at_size(val[k], size), k))
        p_key = min(spsvm, key=lambda k: (at_size(val[k], size), k))
        s_model = slant_model_at(slant[s_key], size)
        p_model = truncate(spsvm[p_key], min(size, spsvm[p_key].n_support))
        old_model = slant_model_at(old, size)
        rows.append([size, f"{error(s_model, Xt, yt):.2f}", f"{100 * at_size(val[s_key], size):.2f}", s_model.n_support,
                     "g={:g} C={:g} eta={:g}".format(*s_key), f"{error(p_model, Xt, yt):.2f}",
                     f"{100 * at_size(val[p_key], size):.2f}", p_model.n_support, "g={:g} lam={:g}".format(*p_key),
                     f"{error(old_model, Xt, yt):.2f}", f"{100 * np.mean(old_model.predict(Xt) > 0):.1f}"])
    print(f"\n{name}: {int((~held).sum())} rows fit, {int(held.sum())} validate, {len(yt)} test "
          f"({100 * np.mean(yt > 0):.1f}% positive)")
    print_table(["size", "slant test %", "val %", "SVs", "slant chosen", "SpSVM-2 test %", "val %", "SVs",
                 "SpSVM-2 chosen", "slant, old setting: test %", "predicted +1 %"], rows)
    print(f"slant grid: {len(slant)} paths in {slant_seconds:.0f}s; SpSVM-2 grid: {len(spsvm)} fits in "
          f"{spsvm_seconds:.0f}s")
    print("\n".join(notes))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", nargs="+", default=list(GRIDS), choices=list(GRIDS))
    parser.add_argument("--sizes", default="10,25,50,100,200,500,1000", help="support sizes, comma separated")
    args = parser.parse_args()
    logging.getLogger("spark_bsvm").setLevel(logging.ERROR)  # the grid's cut paths warn by design
    sizes = sorted(int(s) for s in args.sizes.split(","))
    print(f"slant: basic variant, epsilon = {EPSILON:g}, eta in {{{', '.join(f'{e:g}' for e in ETAS)}}}, "
          f"at most {MAX_STEPS:,} steps; validation: a seeded {VALIDATION_SHARE:.0%} of the training rows")
    for name in args.data:
        run(name, sizes)


if __name__ == "__main__":
    main()
