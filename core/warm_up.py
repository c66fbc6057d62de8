"""Compile ahead: put the machine code of every fit and prediction into numba's cache before the first fit.

A machine compiles ``core``'s numba code on its first fit and keeps it in numba's cache (``core.jit_cache``):
the six methods' first fits took 15-17 s more than their second on a 2-core machine
(``bench/bench_cold_start.py --modes empty``).  Where every run starts from an empty cache, as executors in
fresh containers do, every run pays that.  This module runs each method once on a few hundred generated rows,
dense and sparse (and sparse among a million features), with each kernel and with validation rows, then each
prediction precision and the tasks' statistics of their rows, so that whatever a fit or a prediction calls is
compiled and cached.  Run it where the image is built:

    RUN NUMBA_CACHE_DIR=/opt/spark-bsvm-numba python -m core.warm_up
    ENV NUMBA_CACHE_DIR=/opt/spark-bsvm-numba

(without ``NUMBA_CACHE_DIR`` it fills the cache that the package's own place chooses: beside the sources
of a writable install, else numba's user cache folder).  numba keys its cache by the CPU's name and
features, so an executor whose CPU differs from the build machine's compiles (and caches) the code again.
Executors that cannot write the folder read it as a seed (``core.jit_cache``).
"""

import argparse
import logging
import sys
import time

import numpy as np

from core import jit_cache
from core.ebsvm import fit_ebsvm
from core.engine import LocalEngine
from core.kernel_columns import KernelColumns
from core.kernels import PRECISIONS, KernelSpec, kernel_block, kernel_times
from core.l0svm import fit_l0svm
from core.moments import group_moments
from core.partition.slant import COLUMN_BYTES, add_steps
from core.progress import LOGGER
from core.rows import as_rows, is_sparse, take_rows, to_csr
from core.separation import warn_if_one_class
from core.slant import fit_slant
from core.spsvm import fit_spsvm
from core.svc import fit_budget_svm, fit_csvc
from core.synthetic import make_rings

ROWS, FEATURES = 240, 6
WIDE_FEATURES = 1 << 20  # the sparse rows again, among as many features as rows of text or hashed features have
POOLED_ROWS, POOLED_COLUMNS = 3000, 2400  # 7.2 million kernel values: above the pool's threshold
KERNELS = (KernelSpec("rbf", gamma=0.5), KernelSpec("linear"), KernelSpec("poly", gamma=0.5, degree=2, coef0=1.0))


def _fits(engine, kernel):
    """Every method once on ``engine`` with ``kernel`` (small budgets: compiling, not training, is the point)."""
    reference = fit_csvc(engine, C=1.0, kernel=kernel)
    yield reference
    yield fit_budget_svm(engine, budget=20, C=0.5, norm="l1", kernel=kernel)
    yield fit_budget_svm(engine, budget=20, C=0.5, norm="l2", kernel=kernel)
    yield fit_slant(engine, reference, max_support=10, max_steps=40)  # linear, poly: no step bound of its own
    yield fit_ebsvm(engine, budget=10, lam=1e-2, kernel=kernel)
    yield fit_spsvm(engine, max_basis=10, lam=1e-2, kernel=kernel)
    yield fit_spsvm(engine, max_basis=4, lam=1e-2, kernel=kernel, selection="method1", retrain="always")
    yield fit_l0svm(engine, C_xi=1.0, C_alpha=0.2, kernel=kernel, max_outer=5)


def warm_up():
    """Compile (or load from numba's cache) the code of every method's fit, dense and sparse rows, every
    kernel, and every prediction precision; returns the number of models fitted."""
    X, y = _rows(ROWS)
    validation = np.arange(ROWS) % 5 == 0
    fitted = 0
    for rows in (X, to_csr(X)):
        for kernel in KERNELS:
            with LocalEngine(rows, y, n_partitions=2, validation=validation) as engine:
                for model in _fits(engine, kernel):
                    for precision in PRECISIONS:
                        model.decision_function(rows, precision=precision)
                    warn_if_one_class(engine, model)
                    fitted += 1
            _pooled_kernels(rows, kernel)
            if is_sparse(rows):
                _wide_rows(rows, y, kernel)
        _row_statistics(rows)
        _slant_bookkeeping(rows, y)
    return fitted


def _rows(n):
    X, y = make_rings(n, n_features=FEATURES, seed=0)
    X[np.abs(X) < 1.0] = 0.0  # a third of the entries left: sparse enough to stay CSR (``rows.dense_enough``)
    return X, y


def _pooled_kernels(rows, kernel):
    """Kernel blocks and products large enough for numba's thread pool (``core.kernels._worth_a_pool``), in
    each precision: a fit's rows against many support vectors or basis functions, on a machine of cores."""
    many = take_rows(rows, np.arange(POOLED_ROWS) % rows.shape[0])
    for precision in PRECISIONS:
        kernel_block(many, many[:POOLED_COLUMNS], kernel, precision=precision)
        kernel_times(many, many[:POOLED_COLUMNS], kernel, np.ones(POOLED_COLUMNS), precision=precision)


def _wide_rows(rows, y, kernel):
    """What CSR rows of many features reach: kernel blocks and products that keep Z sparse
    (``core.kernels._sparse_pair``), on numba's pool and on one thread, in each precision, and EBSVM's support set
    held by its entries (``core.ebsvm``)."""
    wide = as_rows(rows, n_features=WIDE_FEATURES)
    _pooled_kernels(wide, kernel)
    for precision in PRECISIONS:
        kernel_block(wide, wide[:8], kernel, precision=precision)
        kernel_times(wide, wide[:8], kernel, np.ones(8), precision=precision)
    with LocalEngine(wide, y, n_partitions=2) as engine:
        fit_ebsvm(engine, budget=10, lam=1e-2, kernel=kernel)


def _slant_bookkeeping(rows, y):
    """What only long slant paths reach (ijcnn1's to 1,000 support vectors): a column store that lets go of rows
    (the driver holding more than ``HELD_OTHERS`` examples) and steps applied to responses in bulk (a partition
    whose checks went past the step that another partition refuted)."""
    columns = KernelColumns(rows, KERNELS[0], COLUMN_BYTES)
    at = columns.get([0, 1], lambda fresh: take_rows(rows, np.asarray(fresh)))
    add_steps(np.zeros(len(y)), y, columns.K, at, y[:2], 0.5, first=np.zeros(len(y), np.int64))
    columns.keep_rows(np.arange(len(y)) % 2 == 0)


def _row_statistics(rows):
    """The training tasks' statistics of their rows (``core.moments``), over dense and over sparse rows."""
    if is_sparse(rows):
        lengths = np.diff(rows.indptr)
        group_moments(lengths, rows.data, np.zeros(rows.shape[0], np.int64), 1, rows.shape[1],
                      np.ones(rows.shape[0], bool), sparse=np.ones(rows.shape[0], bool), indices=rows.indices)
    else:
        group_moments(np.full(rows.shape[0], rows.shape[1]), rows.ravel(), np.zeros(rows.shape[0], np.int64), 1,
                      rows.shape[1], np.ones(rows.shape[0], bool))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    for name in ("spark_bsvm", LOGGER):  # the small fits' progress and warnings are not the point
        logging.getLogger(name).setLevel(logging.ERROR)
    start, cpu = time.perf_counter(), time.process_time()
    fitted = warm_up()
    print(f"compiled or loaded the code of {fitted} fits and their predictions in {time.perf_counter() - start:.1f} s "
          f"({time.process_time() - cpu:.1f} s CPU); numba's cache for core: {jit_cache.describe()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
