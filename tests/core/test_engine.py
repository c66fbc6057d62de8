"""LocalEngine construction, label encoding and their error messages."""

import numpy as np
import pytest

from core.engine import LocalEngine
from core.labels import decode_labels, encode_labels


def test_labels_map_to_signs_and_back():
    y, classes = encode_labels(np.array(["b", "a", "b"]))
    assert classes == ["a", "b"] and y.tolist() == [1.0, -1.0, 1.0]
    assert decode_labels(np.array([0.3, -2.0]), classes).tolist() == ["b", "a"]


def test_partitions_cover_the_rows_once():
    X = np.arange(20.0).reshape(10, 2)
    engine = LocalEngine(X, np.arange(10) % 2, n_partitions=3)
    ids = np.concatenate([p.ids for p in engine.partitions])
    assert ids.tolist() == list(range(10)) and engine.n_partitions == 3 and engine.classes == [0, 1]
    np.testing.assert_array_equal(np.vstack([p.rows for p in engine.partitions]), X)


X4 = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
Y4 = np.array([0, 1, 0, 1])
LABELS = r"binary classification needs exactly two label values, found {}; for more classes wrap the estimator " \
         r"in OneVsRest"
ONE_LABEL = r"binary classification needs exactly two label values, found 1: \[{}\]; every row has that label; " \
            r"within OneVsRest, which fits one model per class 0, 1, ..., up to the largest label, one of those " \
            r"classes has no rows: index the labels as 0 to k-1 \(StringIndexer\)"
WEIGHTS = r"weights has {} value\(s\) that are {}; weights must be positive and finite \(drop the rows of weight 0: " \
          r"they contribute nothing\)"
NOT_FINITE = "rows contain NaN or infinity: impute or drop those values first"
TOO_LARGE = r"rows contain values of magnitude up to 1e\+160, above 1e\+100: the kernels' squared norms of such rows " \
            r"overflow; rescale the features first \(e.g. standardize them\)"
RAGGED = r"rows must all hold the same number of numbers \(a 2-D array\): found rows of different lengths or " \
         r"values that are not numbers \(ValueError\)"


@pytest.mark.parametrize("kwargs, message", [  # the in-process bad-input matrix (the Spark one: test_bad_input)
    (dict(X=np.zeros((0, 2)), labels=np.array([])), "the training data is empty: there are no labels"),
    (dict(X=X4[:1], labels=Y4[:1]), ONE_LABEL.format("0")),
    (dict(labels=np.ones(4)), ONE_LABEL.format("1.0")),
    (dict(labels=np.array([0, 1, 2, 0])), LABELS.format(r"3: \[0, 1, 2\]")),
    (dict(labels=np.array([0.0, 1.0, np.nan, 0.0])), "labels contain NaN or infinite values; drop or fix those rows"),
    (dict(labels=[0, 1, None, 0]), r"labels contain 1 null value\(s\); drop or fill those rows"),
    (dict(labels=np.array([0, "yes", 0, "yes"], dtype=object)),
     r"labels mix values of the types \['int', 'str'\], which cannot be ordered \(the larger label is the positive "
     r"class\): give labels of one type"),
    (dict(labels=np.array([[0, 1], [1, 0]])), r"labels must be a 1-D array, got shape \(2, 2\)"),
    (dict(labels=np.array([0, 1, 0])), "X has 4 rows but labels has 3 values"),
    (dict(X=np.where(X4 == 1.0, np.nan, X4)), NOT_FINITE),
    (dict(X=np.where(X4 == 1.0, -np.inf, X4)), NOT_FINITE),
    (dict(X=np.where(X4 == 1.0, -1e160, X4)), TOO_LARGE),  # finite, but a fit on it stalled (NaN kernel values)
    (dict(X=np.zeros((4, 0))), r"X has 4 rows of 0 features: there is nothing to train on; give every row its "
                               r"features \(a 2-D array of n rows x p > 0 columns\)"),
    (dict(X=[[0.0, 1.0], [1.0], [1.0, 1.0], [0.0, 0.0]]), RAGGED),
    (dict(X=[[0.0, 1.0], None, [1.0, 1.0], [0.0, 0.0]]), RAGGED),
    (dict(X=np.zeros(4)), r"expected a 2-D block of rows, got an array of shape \(4,\) \(use x.reshape\(1, -1\) for a "
                          r"single row\)"),
    (dict(weights=-np.ones(4)), WEIGHTS.format(4, "negative")),
    (dict(weights=np.array([1.0, np.nan, 1.0, np.inf])), WEIGHTS.format(2, "NaN or infinite")),
    (dict(weights=np.array([1.0, 0.0, 1.0, 1.0])), WEIGHTS.format(1, "0")),
    (dict(weights=np.zeros(4)), WEIGHTS.format(4, "0")),
    (dict(weights=np.ones(3)), r"weights must hold one number per row \(4\), got shape \(3,\)"),
    (dict(n_partitions=0), "n_partitions must be between 1 and the number of rows \\(4\\), got 0"),
])
def test_bad_input_is_named_in_one_line(kwargs, message):
    args = dict(dict(X=X4, labels=Y4), **kwargs)
    with pytest.raises(ValueError, match=f"^{message}$"):
        LocalEngine(**args)


def test_a_csr_input_at_least_half_nonzero_becomes_dense_blocks():
    import scipy.sparse as sp

    X = np.arange(1.0, 13.0).reshape(6, 2)
    y = np.array([1, -1, 1, -1, 1, -1])
    half = X * np.array([[1, 0], [1, 0], [1, 0], [1, 0], [0, 1], [0, 1]])  # 6 of 12 values nonzero
    below = half * np.array([[1, 1]] * 5 + [[0, 0]])  # 5 of 12
    assert all(isinstance(p.rows, np.ndarray) for p in LocalEngine(sp.csr_matrix(half), y, n_partitions=2).partitions)
    assert all(sp.issparse(p.rows) for p in LocalEngine(sp.csr_matrix(below), y, n_partitions=2).partitions)
    stored_zeros = sp.csr_matrix((np.r_[1.0, np.zeros(5)], np.zeros(6, np.int32), np.arange(7)), shape=(6, 1))
    assert sp.issparse(LocalEngine(stored_zeros, y).partitions[0].rows)  # 6 values stored, 1 of them nonzero


def test_gamma_scale_leaves_the_validation_rows_out():
    """An engine holding rows out for validation has the ``scale_gamma`` of one on its training rows alone,
    for dense and CSR rows."""
    import scipy.sparse as sp

    rng = np.random.default_rng(2)
    X = rng.normal(1.0, 2.0, size=(40, 3)) * (rng.random((40, 3)) < 0.4)
    y = np.arange(40) % 2
    held = np.arange(40) % 5 == 0
    X[held] *= 4.0
    for rows in (X, sp.csr_matrix(X)):
        engine = LocalEngine(rows, y, n_partitions=2, validation=held)
        assert engine.scale_gamma == LocalEngine(rows[np.flatnonzero(~held)], y[~held]).scale_gamma
        assert engine.scale_gamma != LocalEngine(rows, y).scale_gamma
