"""The kernel-expansion model: decision function, labels, pruning, save/load."""

import io
import json

import numpy as np
import pytest
import scipy.sparse as sp

from core.kernels import KernelSpec
from core.model import KernelExpansion
from tests.naive import naive_kernel


def _model(sparse=False, classes=("no", "yes"), kernel=KernelSpec("rbf", gamma=0.4), n_sv=7, p=5, seed=0):
    rng = np.random.default_rng(seed)
    sv = rng.standard_normal((n_sv, p))
    if sparse:
        sv[rng.random(sv.shape) < 0.6] = 0.0
        sv = sp.csr_matrix(sv)
    return KernelExpansion(sv, rng.standard_normal(n_sv), 0.3, kernel, list(classes), p,
                           {"method": "test", "params": {"C": 1.0}}, np.arange(n_sv) * 3)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("kernel", [KernelSpec("rbf", gamma=0.4), KernelSpec("linear"),
                                    KernelSpec("poly", gamma=0.5, degree=3, coef0=1.0)])
def test_decision_function_matches_naive(sparse, kernel):
    model = _model(sparse, kernel=kernel)
    X = np.random.default_rng(1).standard_normal((5000, 5))  # more than one batch
    sv = model.support_vectors.toarray() if sparse else model.support_vectors
    expected = naive_kernel(X[:50], sv, kernel) @ model.coef + 0.3
    np.testing.assert_allclose(model.decision_function(X)[:50], expected, atol=1e-12)
    assert model.decision_function(sp.csr_matrix(X[:50])) == pytest.approx(expected, abs=1e-12)


def test_predict_returns_original_labels():
    model = _model(classes=["no", "yes"])
    X = np.random.default_rng(2).standard_normal((40, 5))
    f = model.decision_function(X)
    assert model.predict(X).tolist() == np.where(f > 0, "yes", "no").tolist()


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("classes", [["no", "yes"], [0.0, 1.0], [-1, 3]])
def test_save_load_round_trip(tmp_path, sparse, classes):
    model = _model(sparse, classes=classes)
    path = tmp_path / "m.npz"
    model.save(path)
    back = KernelExpansion.load(path)
    X = np.random.default_rng(3).standard_normal((100, 5))
    assert np.array_equal(back.decision_function(X), model.decision_function(X))
    assert back.predict(X).tolist() == model.predict(X).tolist()
    assert back.classes == list(classes) and back.kernel == model.kernel
    assert back.metadata == model.metadata and np.array_equal(back.support_ids, model.support_ids)
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind


def _recorded_path(n=300):
    """Metadata as a fit records it: long lists of each kind, short and mixed lists, nesting."""
    rng = np.random.default_rng(4)
    return {"method": "test", "steps": rng.integers(0, 10**6, n).tolist(),
            "path": {"coef": rng.standard_normal(n * (n + 1) // 2).tolist(), "retrained": [True, False] * (n // 2),
                     "size": list(range(1, n + 1)), "short": [0.5, 1.5], "mixed": [1, 2.5] * 10,
                     "huge": [2**70] * 20, "nested": [[0.25] * 20, {"x": [7] * 20}]}}


def test_save_load_keeps_a_recorded_path_in_arrays():
    model = _model()
    model.metadata = _recorded_path()
    payload = model.to_bytes()
    back = KernelExpansion.from_bytes(payload)
    assert back.metadata == model.metadata
    assert [type(v) for v in back.metadata["path"]["retrained"][:2]] == [bool, bool]
    assert type(back.metadata["path"]["size"][0]) is int and type(back.metadata["path"]["coef"][0]) is float
    # 45,150 floats, 300 ints twice and 300 bools: ~8 bytes a number, where the JSON header took ~76
    assert len(payload) < 8 * 45_150 + 2 * 8 * 300 + 300 + 20_000
    with np.load(io.BytesIO(payload)) as archive:
        assert archive["header"].nbytes < 10_000


def test_numpy_scalars_and_arrays_in_the_metadata_are_saved_as_python_values():
    """A parameter from ``np.logspace``, a flag from comparing numpy floats: JSON alone cannot write them."""
    model = _model()
    model.metadata = {"params": {"C": np.float32(0.5), "budget": np.int64(20)}, "converged": np.bool_(False),
                      "sizes": np.arange(20), "grid": [np.float64(0.1), np.float64(1.0)]}
    back = KernelExpansion.from_bytes(model.to_bytes())
    assert back.metadata == {"params": {"C": 0.5, "budget": 20}, "converged": False, "sizes": list(range(20)),
                             "grid": [0.1, 1.0]}
    assert type(back.metadata["converged"]) is bool and type(back.metadata["params"]["budget"]) is int


def test_reads_format_1():
    """A model saved before the metadata's arrays (format 1: all of it in the JSON header) loads as it was."""
    model = _model(sparse=True)
    model.metadata = _recorded_path(40)
    header = {"format_version": 1, "bias": model.bias, "kernel": model.kernel.to_dict(), "classes": model.classes,
              "n_features": model.n_features, "metadata": model.metadata, "sparse": True}
    sv = model.support_vectors
    buf = io.BytesIO()
    np.savez(buf, header=np.array(json.dumps(header)), coef=model.coef, support_ids=model.support_ids,
             sv_data=sv.data, sv_indices=sv.indices, sv_indptr=sv.indptr)
    back = KernelExpansion.from_bytes(buf.getvalue())
    X = np.random.default_rng(5).standard_normal((30, 5))
    assert np.array_equal(back.decision_function(X), model.decision_function(X))
    assert back.metadata == model.metadata and back.classes == model.classes


def test_refuses_a_newer_format():
    buf = io.BytesIO()
    np.savez(buf, header=np.array(json.dumps({"format_version": 99})))
    with pytest.raises(ValueError, match=r"unsupported model format version 99: this spark-bsvm reads versions "
                                         r"\(1, 2\)"):
        KernelExpansion.from_bytes(buf.getvalue())


def test_pruned_keeps_the_largest_coefficients():
    model = _model(n_sv=10)
    pruned = model.pruned(4)
    keep = np.sort(np.argsort(-np.abs(model.coef))[:4])
    np.testing.assert_array_equal(pruned.coef, model.coef[keep])
    np.testing.assert_array_equal(pruned.support_ids, model.support_ids[keep])
    assert pruned.bias == model.bias and pruned.metadata["pruned_to"] == 4
    assert model.pruned(50) is model


def test_pruned_drops_the_recorded_path_of_the_unpruned_support_vectors():
    model = _model(n_sv=10)
    model.metadata = dict(_recorded_path(10), params={"C": 1.0})
    pruned = model.pruned(4)
    assert pruned.metadata == {"method": "test", "params": {"C": 1.0}, "pruned_to": 4}
    with pytest.raises(ValueError, match="an integer >= 0, got 2.5"):
        model.pruned(2.5)


def test_a_pruned_model_is_not_calibrated_as_the_unpruned_one_was():
    model = _model(n_sv=10)
    model.metadata["platt"] = [-2.0, 0.1]  # Platt's sigmoid fitted on the 10-vector model's decision values
    pruned = model.pruned(4)
    assert "platt" not in pruned.metadata and model.metadata["platt"] == [-2.0, 0.1]
    assert model.pruned(10).metadata["platt"] == [-2.0, 0.1]  # the model itself: its calibration holds


def test_rejects_inconsistent_parts():
    with pytest.raises(ValueError, match="support vectors but"):
        KernelExpansion(np.zeros((3, 2)), np.zeros(2), 0.0, KernelSpec(), [0, 1], 2)
    with pytest.raises(ValueError, match="two class values"):
        KernelExpansion(np.zeros((2, 2)), np.zeros(2), 0.0, KernelSpec(), [0, 1, 2], 2)
    with pytest.raises(ValueError):
        _model().decision_function(np.zeros((3, 4)))  # wrong number of features
