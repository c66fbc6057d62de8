"""The recorded error-vs-support-size path: every size's model equals the one truncate / slant_model_at give."""

import numpy as np
import pytest
import scipy.sparse as sp

from core.engine import LocalEngine
from core.kernels import KernelSpec
from core.slant import fit_slant, slant_model_at
from core.spsvm import fit_spsvm, truncate
from core.support_path import path_mistakes, recorded_path
from core.svc import fit_csvc
from core.synthetic import make_rings

KERNEL = KernelSpec("rbf", gamma=0.5)


@pytest.fixture(scope="module")
def data():
    X, y = make_rings(160, 4, seed=11)
    return X[:120], y[:120], X[120:], y[120:]


@pytest.fixture(scope="module")
def reference(data):
    X, y, _, _ = data
    return fit_csvc(LocalEngine(X, y, n_partitions=2), C=1.0, kernel=KERNEL)


def _errors_of(models, X, y, weights):
    return np.array([weights @ (m.predict(X) != y) for m in models])


def test_spsvm_path_is_truncate_at_every_size(data):
    X, y, Xt, yt = data
    model = fit_spsvm(LocalEngine(X, y, n_partitions=2), max_basis=15, lam=0.1, kernel=KERNEL)
    path = recorded_path(model, max_points=8)
    assert path.sizes[-1] == model.n_support and len(path.sizes) <= 8 and path.sizes[0] == 1
    weights = np.random.default_rng(0).uniform(0.5, 2.0, len(yt))
    expected = _errors_of([truncate(model, int(d)) for d in path.sizes], Xt, yt, weights)
    np.testing.assert_allclose(path_mistakes(model, path, Xt, yt, weights), expected)
    np.testing.assert_allclose(path.coef[-1], model.coef)  # the last size is the model itself
    assert path.bias[-1] == pytest.approx(model.bias)


def test_slant_path_is_slant_model_at_every_size(data, reference):
    X, y, Xt, yt = data
    model = fit_slant(LocalEngine(X, y, n_partitions=2), reference, max_support=12)
    path = recorded_path(model)
    assert list(path.sizes) == list(range(1, model.n_support + 1))
    expected = _errors_of([slant_model_at(model, int(s)) for s in path.sizes], Xt, yt, np.ones(len(yt)))
    # sparse rows, a row block smaller than the model: the same counts
    np.testing.assert_allclose(path_mistakes(model, path, sp.csr_matrix(Xt), yt), expected)


def test_methods_without_a_path_have_none(reference):
    assert recorded_path(reference) is None


def test_a_pruned_model_has_no_path_and_truncating_it_says_why(data, reference):
    """Pruning keeps the largest coefficients, not the first support vectors the path added: the path, which
    truncate and slant_model_at read by position, is dropped, not misread."""
    X, y, _, _ = data
    spsvm = fit_spsvm(LocalEngine(X, y), max_basis=10, lam=0.1, kernel=KERNEL)
    slant = fit_slant(LocalEngine(X, y), reference, eta=0.5, epsilon=0.5, max_support=10)
    for model in (spsvm, slant):
        assert recorded_path(model.pruned(3)) is None
    with pytest.raises(ValueError, match="a pruned model has no path .*truncate the model before pruning"):
        truncate(spsvm.pruned(3), 2)
    with pytest.raises(ValueError, match="a pruned model holds no slant path"):
        slant_model_at(slant.pruned(3), 2)
