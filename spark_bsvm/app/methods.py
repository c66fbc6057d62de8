"""The one table from a config's ``method = "..."`` to an estimator class and its fixed params.

Adding a method to the jobs is one entry in ``METHODS``:

    "budget_l2": Method(BudgetSVM, {"norm": "l2"}, "Dekel & Singer's budget-L2 SVM"),

``[model.params]`` of a config are that estimator's params by their Spark
ML names (``budget``, ``C``, ``gamma``, ...); a table named after a method,
``[model.params.spsvm]``, holds params only that method gets (over the
plain keys), so one config can keep several methods' tuned params and
``--set model.method=...`` picks one.  ``fixed`` params come from the
method name and may not be overridden.  ``warm_start`` is the hook of
``jobs/retrain.py``: ``warm_start(estimator, model_path)`` returns an
estimator that starts from the support set of the model saved at
``model_path`` (the registry's current version), or ``None`` when the
method cannot start from a support set.
"""

from dataclasses import dataclass, field
from typing import Callable, Optional

from spark_bsvm.ml.estimators import CSVC, BudgetSVM, ElasticBudgetSVM, L0SVM, SlantSparsifier, SpSVM


@dataclass(frozen=True)
class Method:
    """An estimator class, the params its method name fixes, a one-line description, the warm-start hook."""

    estimator: type
    fixed: dict = field(default_factory=dict)
    doc: str = ""
    warm_start: Optional[Callable] = None


# SpSVM-2 warm-starts by offering the current support vectors as its first basis functions.  The dual
# methods cannot: their state is one multiplier per training example, and a new training set shares no
# example ids with the current model's support set.
METHODS = {
    "csvc": Method(CSVC, {}, "LIBSVM's C-SVC (the reference; support size grows with the data)"),
    "budget_l1": Method(BudgetSVM, {"norm": "l1"}, "Dekel & Singer's budget-L1 SVM (sum a <= B C)"),
    "budget_l2": Method(BudgetSVM, {"norm": "l2"}, "Dekel & Singer's budget-L2 SVM"),
    "spsvm": Method(SpSVM, {}, "Keerthi, Chapelle & DeCoste's SpSVM-2: a greedily grown basis of maxBasis rows",
                    warm_start=lambda estimator, model_path: estimator.setInitialModelPath(model_path)),
    "slant": Method(SlantSparsifier, {}, "Cotter et al.'s slant-loss sparsifier of the model at "
                    "[model.params] referenceModelPath"),
    "ebsvm": Method(ElasticBudgetSVM, {}, "the elastic budget SVM: SGD holding at most B support vectors"),
    "l0svm": Method(L0SVM, {}, "Huang et al.'s L0-norm SVM: reweighted SVMs toward few prototypes"),
}


def method_names():
    """The method names a config may use, sorted."""
    return sorted(METHODS)


def lookup(name):
    """The ``Method`` of ``name``, or a ValueError listing the known names."""
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r}; [model] method must be one of {method_names()}")
    return METHODS[name]


def method_params(name, params):
    """The params method ``name`` takes from ``[model.params]``: the plain keys, then its own table.

    Tables of other methods are left out; a table not named after a method is a ValueError.
    """
    lookup(name)
    tables = sorted(key for key, value in params.items() if isinstance(value, dict))
    strays = [key for key in tables if key not in METHODS]
    if strays:
        raise ValueError(f"[model.params.{strays[0]}] is not a method; tables in [model.params] hold one "
                         f"method's params and are named after it: {method_names()}")
    return dict({key: value for key, value in params.items() if key not in tables}, **params.get(name, {}))


def build_estimator(name, params, features_col="features", label_col="label"):
    """A configured estimator of method ``name`` with ``params`` (Spark ML param names -> values;
    the raw ``[model.params]``, see ``method_params``)."""
    method = lookup(name)
    own = params.get(name, {})
    params = method_params(name, params)
    estimator = method.estimator()
    fixed = sorted(set(params) & set(method.fixed))
    if fixed:
        raise ValueError(f"[model.params] {fixed} are fixed by method {name!r} ({method.fixed}); remove them "
                         "or choose another method")
    known = {p.name for p in estimator.params}
    unknown = sorted(set(params) - known)
    if unknown:
        raise ValueError(f"[model.params] {unknown} are not params of {method.estimator.__name__} (method "
                         f"{name!r}){_shared_keys_hint(unknown, own)}; its params are {sorted(known)}")
    values = dict(params, **method.fixed, featuresCol=features_col, labelCol=label_col)
    for key, value in values.items():
        try:
            estimator._set(**{key: value})
        except (TypeError, ValueError) as exc:
            raise ValueError(f"[model.params] {key} = {value!r} is not accepted by {method.estimator.__name__}: "
                             f"{exc}") from None
    return estimator


def _shared_keys_hint(unknown, own):
    """The fix for the ``unknown`` params that came from the plain ``[model.params]`` keys (not the method's own
    table ``own``) and that another method takes: a config tuned for that method, switched with --set
    model.method=..., gives them to every method."""
    shared = [key for key in unknown if key not in own and any(
        method.estimator().hasParam(key) for method in METHODS.values())]
    if not shared:
        return ""
    takers = sorted(n for n, m in METHODS.items() if all(m.estimator().hasParam(key) for key in shared))
    return (f": {shared} in the plain [model.params] go to every method; move them into [model.params.<method>] "
            f"tables of the methods that take them ({', '.join(takers)})")


def check_model(model_config):
    """A ValueError naming the problem and the fix when the ``[model]`` section cannot give a fit: an unknown
    method, or params its estimator refuses alone or together (``selectSupportSize = "best"`` without validation
    rows, say).  The estimator's checks need no data: the jobs run them before Spark starts and the data are
    read, as the fit itself would only after both."""
    build_estimator(model_config["method"], model_config["params"])._check()


def check_warm_start(name):
    """A ValueError with the fix unless method ``name`` has a warm-start hook."""
    if lookup(name).warm_start is None:
        able = sorted(n for n, m in METHODS.items() if m.warm_start is not None)
        raise ValueError(f"[retrain] warm_start = true, but method {name!r} cannot start from a support set "
                         f"(methods that can: {able or 'none yet'}); set warm_start = false")


def warm_started(name, estimator, model_path):
    """``estimator`` set to start from the model saved at ``model_path`` via the method's hook, or a
    ValueError if it has none."""
    check_warm_start(name)
    return lookup(name).warm_start(estimator, model_path)
