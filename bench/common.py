"""Helpers shared by the bench scripts: locating and reading the benchmark files."""

import os
import sys
from pathlib import Path

import numpy as np

DATA_DIR = Path(os.environ.get("BSVM_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "data"))


def require(*parts, on_missing=sys.exit):
    """Path of a benchmark file; ``on_missing(message)`` when absent (the tests pass pytest.skip)."""
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


def print_table(header, rows):
    """Print rows of values under a header, right-aligned columns."""
    cells = [header] + [[f"{v:.4g}" if isinstance(v, float) else str(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    for k, row in enumerate(cells):
        print("  ".join(c.rjust(w) for c, w in zip(row, widths)))
        if k == 0:
            print("  ".join("-" * w for w in widths))
