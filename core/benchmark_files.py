"""The benchmark files of ``BSVM_DATA_DIR`` (default ``../shared/data``) as numpy blocks, for tests and benches.

Nothing in the library reads them.  The LIBSVM format is read with scikit-learn's reader (an extra of
the ``test`` and ``bench`` installs); ``on_missing(message)`` runs when a file is absent: ``sys.exit``
for the bench scripts, ``pytest.skip`` for the tests.
"""

import os
import sys
from pathlib import Path

import numpy as np

DATA_DIR = Path(os.environ.get("BSVM_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "data"))


def require(*parts, on_missing=sys.exit):
    """Path of a benchmark file; ``on_missing(message)`` when absent."""
    path = DATA_DIR.joinpath(*parts)
    if not path.exists():
        on_missing(f"benchmark file {path} not found: set BSVM_DATA_DIR to the folder holding the data sets")
    return path


def load_libsvm(*parts, n_features, on_missing=sys.exit):
    """A LIBSVM-format file as (CSR matrix, labels), read with scikit-learn's reader."""
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(str(require(*parts, on_missing=on_missing)), n_features=n_features)
    return X.tocsr(), y


def load_ripley(on_missing=sys.exit):
    """Ripley's synthetic set: (X_train, y_train, X_test, y_test), labels 0/1."""
    train = np.loadtxt(require("ripley", "synth.tr", on_missing=on_missing), skiprows=1)
    test = np.loadtxt(require("ripley", "synth.te", on_missing=on_missing), skiprows=1)
    return train[:, :2], train[:, 2], test[:, :2], test[:, 2]


def load_covtype_20k(n_train=15_000, on_missing=sys.exit):
    """The 20,000-row covtype subsample, the first ``n_train`` rows to train and the rest to test:
    (X_train, y_train, X_test, y_test), features scaled to [0, 1], labels +-1 (class 1 is +1)."""
    table = np.loadtxt(require("covtype", "covtype.binary.scale.subsample20k.csv", on_missing=on_missing),
                       delimiter=",")
    X, y = table[:, 1:], np.where(table[:, 0] == 1, 1.0, -1.0)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def ripley_subsets(n_train, subsets=20, size=100, seed=0):
    """Index arrays of Huang et al.'s Table 1 protocol: ``subsets`` random ``size``-row subsets of synth.tr."""
    rng = np.random.default_rng(seed)
    return [rng.choice(n_train, size, replace=False) for _ in range(subsets)]


def shuttle_problems(n_problems, n_train=1000, n_test=4000, seed=0, on_missing=sys.exit):
    """Random train/test draws of Statlog shuttle, class 1 vs rest, scaled to unit average norm
    (Dekel & Singer's section 5 protocol): (X, y, X_test, y_test) per draw, labels +-1."""
    table = np.loadtxt(require("shuttle", "shuttle.trn", on_missing=on_missing))
    X = table[:, :-1] / np.abs(table[:, :-1]).max(axis=0)
    y = np.where(table[:, -1] == 1, 1.0, -1.0)
    rng = np.random.default_rng(seed)
    for _ in range(n_problems):
        idx = rng.permutation(y.size)
        tr, te = idx[:n_train], idx[n_train:n_train + n_test]
        scale = np.sqrt((X[tr] ** 2).sum(axis=1)).mean()
        yield X[tr] / scale, y[tr], X[te] / scale, y[te]
