"""The shared argument checks, and the training functions' integer arguments refused by name."""

import numpy as np
import pytest

from core.engine import LocalEngine
from core.kernels import KernelSpec
from core.l0svm import fit_l0svm
from core.svc import fit_csvc
from core.synthetic import make_rings
from core.validation import check_integer


def test_check_integer_takes_integral_numbers_and_names_the_first_other_value():
    assert check_integer(1, a=3, b=np.int64(4), c=1e3) == [3, 4, 1000]
    assert [type(v) for v in check_integer(0, a=np.int32(0), b=2.0)] == [int, int]
    for bad in (0, 2.5, True, np.bool_(True), "3", None, float("nan"), float("inf"), [1]):
        with pytest.raises(ValueError, match=rf"^b must be an integer >= 1, got {bad!r}$".replace("[", r"\[")):
            check_integer(1, a=1, b=bad)


@pytest.mark.parametrize("arguments, message", [
    ({"max_rounds": -1}, "max_rounds must be an integer >= 0, got -1"),  # was an UnboundLocalError
    ({"working_set_size": 0}, "working_set_size must be an integer >= 1, got 0"),
    ({"working_set_size": 100.5}, "working_set_size must be an integer >= 1, got 100.5"),  # was numpy's TypeError
])
def test_the_dual_solver_s_integer_arguments_are_named(arguments, message):
    X, y = make_rings(60, 4, seed=0)
    with pytest.raises(ValueError, match=f"^{message}$"):
        fit_csvc(LocalEngine(X, y), kernel=KernelSpec("rbf", gamma=0.5), **arguments)


def test_an_integral_float_is_an_integer_everywhere():
    """m0 = 3.0 was refused by the L0-norm SVM alone, where the other fits took integral floats."""
    X, y = make_rings(80, 4, seed=1)
    model = fit_l0svm(LocalEngine(X, y), kernel=KernelSpec("rbf", gamma=0.5), m0=20.0, max_outer=3.0)
    assert model.n_support <= 20
