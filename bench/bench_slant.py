"""Slant-loss sparsifier on ijcnn1: test error against support size, both variants, next to the reference.

Reference: the project's C-SVC (rbf gamma = 1, C = 10) on all 49,990 training rows, cached as .npz
under /tmp so that reruns are cheap.  eta and epsilon are chosen per support size on a validation
split of the training set, never on ijcnn1.t (as in the paper's section 7): a second C-SVC is
trained on 80% of the training rows, every grid point sparsifies it once up to the largest size, and
its recorded path gives the validation error at every size.  Each size's chosen (eta, epsilon) is
then run on all training rows with the full reference, and its model at that size is tested on
ijcnn1.t.  Times are those of the final fits (the selection's total is printed too).

Other methods are columns: one entry of ``COLUMNS`` (a function of the data and the sizes that
returns a ``Column``).  SpSVM-2 is fitted once per size with the lambda and gamma that
``bench.bench_spsvm --select`` chose on a validation split of ijcnn1's training rows.

    python -m bench.bench_slant [--sizes 50,100,200,300,500,1000] [--partitions 2]
"""

import argparse
import time
from dataclasses import dataclass, field

import numpy as np

from bench.bench_spsvm import DATASETS as SPSVM_DATASETS
from bench.common import load_libsvm, print_table
from core.engine import LocalEngine
from core.kernels import KernelSpec, kernel_block
from core.model import KernelExpansion
from core.slant import fit_slant, slant_model_at, slant_path_coef
from core.spsvm import fit_spsvm
from core.svc import fit_csvc

KERNEL = KernelSpec("rbf", gamma=1.0)
C = 10.0
VALIDATION_SHARE, SPLIT_SEED = 0.2, 0
# (eta, epsilon) grids after section 7 (eta in powers of 4, epsilon in powers of 2), fewer of them; the
# aggressive variant only where eta < 2 epsilon, where its step count is bounded (see core.slant)
GRIDS = {
    False: [(eta, 0.5) for eta in (1 / 16, 1 / 4, 1 / 2, 1.0, 2.0)],
    True: [(eta, eps) for eta in (1 / 4, 1 / 2, 1.0) for eps in (1 / 4, 1 / 2, 1.0) if eta < 2 * eps],
}
STEPS_PER_SUPPORT_VECTOR = 300  # max_steps = this * the largest size (the aggressive variant re-steps a lot)


@dataclass
class Data:
    """ijcnn1 train/test, the validation split and the two references."""

    X: np.ndarray
    y: np.ndarray
    Xt: np.ndarray
    yt: np.ndarray
    train: np.ndarray  # rows of X the selection trains on
    valid: np.ndarray  # rows of X it validates on
    reference: KernelExpansion  # C-SVC on all of X
    split_reference: KernelExpansion  # C-SVC on X[train]
    partitions: int
    kernel: KernelSpec = KERNEL


@dataclass
class Column:
    """One method's models at the sizes (None where it has none), its fit time and a note per size."""

    models: list
    seconds: float
    notes: list = field(default_factory=list)


def timed(fit):
    """A Column from ``fit()`` returning the models at the sizes."""
    start = time.perf_counter()
    models = fit()
    return Column(models, time.perf_counter() - start)


def cached_csvc(X, y, tag):
    """C-SVC (gamma = 1, C = 10) on X, y, read from /tmp when an earlier run saved it."""
    path = f"/tmp/bench_slant_ijcnn1_{tag}_n{len(y)}_g{KERNEL.gamma:g}_C{C:g}.npz"
    try:
        return KernelExpansion.load(path)
    except FileNotFoundError:
        start = time.perf_counter()
        model = fit_csvc(LocalEngine(X, y), C=C, kernel=KERNEL)
        model.metadata["seconds"] = time.perf_counter() - start
        model.save(path)
        return model


def load_data(partitions):
    X, y = load_libsvm("ijcnn1", "ijcnn1", n_features=22)
    Xt, yt = load_libsvm("ijcnn1", "ijcnn1.t", n_features=22)
    X, Xt = X.toarray(), Xt.toarray()
    order = np.random.default_rng(SPLIT_SEED).permutation(len(y))
    n_valid = int(VALIDATION_SHARE * len(y))
    valid, train = np.sort(order[:n_valid]), np.sort(order[n_valid:])
    return Data(X, y, Xt, yt, train, valid, cached_csvc(X, y, "full"),
                cached_csvc(X[train], y[train], f"split{SPLIT_SEED}"), partitions)


def path_errors(model, X, y, sizes):
    """Error rate of the path's model at every size, from one kernel block."""
    coef = slant_path_coef(model, sizes)
    f = kernel_block(X, model.support_vectors, model.kernel) @ coef.T + model.bias
    return np.mean(np.where(f > 0, 1.0, -1.0) != y[:, None], axis=0)


def slant_column(data, sizes, aggressive):
    """Choose (eta, epsilon) per size on the validation split, then fit on all rows with the choices."""
    largest = max(sizes)
    run = dict(aggressive=aggressive, max_support=largest, max_steps=STEPS_PER_SUPPORT_VECTOR * largest)
    start = time.perf_counter()
    engine = LocalEngine(data.X[data.train], data.y[data.train], n_partitions=data.partitions)
    errors = {}
    for eta, eps in GRIDS[aggressive]:
        path = fit_slant(engine, data.split_reference, eta=eta, epsilon=eps, **run)
        errors[eta, eps] = path_errors(path, data.X[data.valid], data.y[data.valid], sizes)
    selection = time.perf_counter() - start
    chosen = [min(errors, key=lambda p: (errors[p][k], p)) for k in range(len(sizes))]
    engine = LocalEngine(data.X, data.y, n_partitions=data.partitions)
    fits, seconds = {}, 0.0
    for eta, eps in sorted(set(chosen)):
        start = time.perf_counter()
        fits[eta, eps] = fit_slant(engine, data.reference, eta=eta, epsilon=eps, **run)
        seconds += time.perf_counter() - start
    models = [slant_model_at(fits[p], s) for p, s in zip(chosen, sizes)]
    notes = [f"eta={p[0]:g} eps={p[1]:g} val {100 * errors[p][k]:.2f}%" for k, p in enumerate(chosen)]
    notes.append(f"selection {selection:.0f}s over {len(GRIDS[aggressive])} (eta, epsilon); final fits "
                 + ", ".join(f"eta={p[0]:g} eps={p[1]:g}: {f.metadata['rounds']} rounds, "
                             f"{len(f.metadata['steps'])} steps" for p, f in fits.items()))
    return Column(models, seconds, notes)


def spsvm_column(data, sizes):
    """SpSVM-2 with d = each size, lambda and gamma as chosen for ijcnn1 in bench.bench_spsvm."""
    lam, gamma = SPSVM_DATASETS["ijcnn1"][4]
    engine = LocalEngine(data.X, data.y, n_partitions=data.partitions)
    column = timed(lambda: [fit_spsvm(engine, max_basis=s, lam=lam, kernel=KernelSpec("rbf", gamma=gamma))
                            for s in sizes])
    column.notes = [f"lam={lam:g} gamma={gamma:g}" for _ in sizes]
    return column


COLUMNS = {
    "slant basic": lambda data, sizes: slant_column(data, sizes, aggressive=False),
    "slant aggressive": lambda data, sizes: slant_column(data, sizes, aggressive=True),
    "SpSVM-2": spsvm_column,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="50,100,200,300,500,1000", help="support sizes, comma separated")
    parser.add_argument("--partitions", type=int, default=2, help="LocalEngine partitions")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    data = load_data(args.partitions)
    ref_err = np.mean(data.reference.predict(data.Xt) != data.yt)
    print(f"ijcnn1: {len(data.y)} train / {len(data.yt)} test rows; validation split {len(data.valid)} of "
          f"the training rows; rbf gamma={KERNEL.gamma:g}")
    seconds = data.reference.metadata.get("seconds")
    print(f"reference C-SVC (C={C:g}): test error {100 * ref_err:.2f}%, {data.reference.n_support} SVs, fit "
          + (f"{seconds:.0f}s" if seconds else "time unknown") + " (cached in /tmp)\n")
    columns = {}
    for name, make in COLUMNS.items():
        columns[name] = make(data, sizes)
    header = ["support size", "reference err %"]
    for name in columns:
        header += [f"{name} err %", "SVs"]
    rows = []
    for k, size in enumerate(sizes):
        row = [size, f"{100 * ref_err:.2f}"]
        for column in columns.values():
            model = column.models[k]
            row += ["-", "-"] if model is None else [f"{100 * np.mean(model.predict(data.Xt) != data.yt):.2f}",
                                                     model.n_support]
        rows.append(row)
    print_table(header, rows)
    print()
    for name, column in columns.items():
        print(f"{name}: fit {column.seconds:.1f}s")
        for size, note in zip(sizes + [""], column.notes):
            print(f"  {size} {note}")


if __name__ == "__main__":
    main()
