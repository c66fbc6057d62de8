"""LocalEngine construction, label encoding and their error messages."""

import numpy as np
import pytest

from core.engine import LocalEngine
from core.labels import decode_labels, encode_labels


def test_labels_map_to_signs_and_back():
    y, classes = encode_labels(np.array(["b", "a", "b"]))
    assert classes == ["a", "b"] and y.tolist() == [1.0, -1.0, 1.0]
    assert decode_labels(np.array([0.3, -2.0]), classes).tolist() == ["b", "a"]


@pytest.mark.parametrize("labels, message", [
    (np.array([1, 1, 1]), r"exactly two label values, found 1: \[1\]"),
    (np.array([0, 1, 2]), r"found 3: \[0, 1, 2\]; for more classes wrap the estimator in OneVsRest"),
    (np.array([0.0, np.nan]), "NaN or infinite"),
    (np.array([]), "empty"),
])
def test_bad_labels_are_named(labels, message):
    with pytest.raises(ValueError, match=message):
        encode_labels(labels)


def test_partitions_cover_the_rows_once():
    X = np.arange(20.0).reshape(10, 2)
    engine = LocalEngine(X, np.arange(10) % 2, n_partitions=3)
    ids = np.concatenate([p.ids for p in engine.partitions])
    assert ids.tolist() == list(range(10)) and engine.n_partitions == 3 and engine.classes == [0, 1]
    np.testing.assert_array_equal(np.vstack([p.rows for p in engine.partitions]), X)


@pytest.mark.parametrize("kwargs, message", [
    (dict(n_partitions=0), "n_partitions must be between 1"),
    (dict(weights=-np.ones(4)), "weights must be"),
    (dict(labels=np.array([0, 1, 0])), "X has 4 rows but labels has 3"),
])
def test_engine_rejects_bad_input(kwargs, message):
    args = dict(X=np.zeros((4, 2)), labels=np.array([0, 1, 0, 1]))
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        LocalEngine(**args)
