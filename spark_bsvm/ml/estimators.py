"""The public estimators and their models: thin classes over the shared base, one pair per method.

Each estimator names its params class, its setters, its model class and one ``CoreCall``: the
``core`` training function and the table from its Spark params to that function's arguments.
"""

from pyspark import keyword_only

from core.ebsvm import fit_ebsvm
from core.l0svm import fit_l0svm
from core.slant import check_reference, fit_slant
from core.spsvm import fit_spsvm
from core.svc import fit_budget_svm, fit_csvc
from spark_bsvm.ml.base import CoreCall, _BSVMEstimator
from spark_bsvm.ml.model import BSVMModel
from spark_bsvm.ml.params import (_BudgetSVMParams, _BudgetSVMSetters, _CSVCParams, _CSVCSetters, _EBSVMParams,
                                  _EBSVMSetters, _KernelParams, _L0SVMParams, _L0SVMSetters, _SlantParams,
                                  _SlantSetters, _SpSVMParams, _SpSVMSetters)

_DUAL_SOLVER = {"C": "C", "tol": "tol", "maxIter": "max_rounds", "workingSetSize": "working_set_size"}
_SELECTION = {"selectSupportSize": "select", "selectTolerance": "tolerance"}


class CSVCModel(BSVMModel, _CSVCParams):
    """A C-SVC trained by ``CSVC``: its kernel expansion and params."""


class CSVC(_BSVMEstimator, _CSVCParams, _CSVCSetters):
    """LIBSVM's C-SVC on Spark, the reference method.

    Minimises the standard SVM dual by decomposition: each round the
    partitions return their most violating examples, the driver solves the
    working set with a second-order SMO.  Honours ``weightCol`` (the box
    becomes C w_i, as LIBSVM's instance weights).

    Defaults: C = 1 and tol = 1e-3 are LIBSVM's; gamma = "scale" is
    scikit-learn's (1 / (numFeatures Var(X)); LIBSVM's own is 1 / numFeatures).

    >>> model = CSVC(C=10.0, gamma=1.0).fit(train_df)   # doctest: +SKIP
    >>> model.transform(test_df).select("prediction")  # doctest: +SKIP
    """

    core = CoreCall(fit_csvc, _DUAL_SOLVER)
    model_class = CSVCModel

    @keyword_only
    def __init__(self, *, featuresCol="features", labelCol="label", weightCol=None, kernel="rbf", gamma="scale",
                 degree=3, coef0=0.0, C=1.0, tol=1e-3, maxIter=20000, workingSetSize=1024, predictionCol="prediction",
                 rawPredictionCol="rawPrediction", probabilityCol="probability", threshold=0.0, thresholds=None,
                 predictionPrecision="float64", seed=0, calibrationFraction=0.0, numPartitions=None,
                 coordinatorMode="auto", maxStageRestarts=15):
        super().__init__()
        self._set_given(self._input_kwargs)


class BudgetSVMModel(BSVMModel, _BudgetSVMParams):
    """A budget SVM trained by ``BudgetSVM``."""


class BudgetSVM(_BSVMEstimator, _BudgetSVMParams, _BudgetSVMSetters):
    """Dekel & Singer's budget-L1 / budget-L2 SVM: the loss counts only the B worst examples.

    ``norm='l1'``: the dual adds sum a_i <= B C; ``norm='l2'``: sum a_i <=
    sqrt(B) C and sum a_i^2 <= C^2.  Every support vector has a margin no
    larger than the B-th smallest (Theorem 2); ``prune=True`` keeps only
    the B largest weights (section 5).  Honours ``weightCol`` for L1 only.

    Defaults and the paper: C = 1, budget = 100 and gamma = "scale"
    (scikit-learn's) are ours.  The paper's section 5 sets C = 10 / B (L1)
    or 10 / sqrt(B) (L2) for B = 20, 40, ..., 1000 and compares the models
    pruned to B (``prune=True``); ``bench/bench_budget_pruning.py`` follows it.
    """

    core = CoreCall(fit_budget_svm, dict(_DUAL_SOLVER, budget="budget", norm="norm", prune="prune"))
    model_class = BudgetSVMModel

    @keyword_only
    def __init__(self, *, featuresCol="features", labelCol="label", weightCol=None, kernel="rbf", gamma="scale",
                 degree=3, coef0=0.0, C=1.0, budget=100, norm="l1", prune=False, tol=1e-3, maxIter=20000,
                 workingSetSize=1024, predictionCol="prediction", rawPredictionCol="rawPrediction",
                 probabilityCol="probability", threshold=0.0, thresholds=None, predictionPrecision="float64", seed=0,
                 calibrationFraction=0.0, numPartitions=None, coordinatorMode="auto", maxStageRestarts=15):
        super().__init__()
        self._set_given(self._input_kwargs)

    def _check(self):
        super()._check()
        if self.getNorm() == "l2" and self._weight_col():
            raise ValueError("weightCol is not supported by the budget-L2 SVM (its dual has no per-example "
                             "box); unset weightCol or use norm='l1'")


def load_expansion(path, param):
    """The ``KernelExpansion`` saved at ``path``: a ``BSVMModel``, or a ``PipelineModel`` whose last stage is
    one (as the jobs and the registry save them); a ValueError naming ``param`` otherwise."""
    from pyspark.ml import PipelineModel

    try:
        return BSVMModel.load(path).expansion
    except Exception as exc:
        problem = exc
    try:
        last = PipelineModel.load(path).stages[-1]
    except Exception:
        last = None
    if isinstance(last, BSVMModel):
        return last.expansion
    raise ValueError(f"cannot read a BSVMModel (or a PipelineModel ending in one) at {param}={path!r}: {problem}")


class SlantSparsifierModel(BSVMModel, _SlantParams, _KernelParams):
    """A sparse model made by ``SlantSparsifier``.  It keeps its reference's kernel, which its kernel params
    report (the estimator has none: it takes the kernel from the reference)."""


class SlantSparsifier(_BSVMEstimator, _SlantParams, _SlantSetters):
    """Cotter, Shalev-Shwartz & Srebro's slant-loss sparsifier: a sparse SVM from a trained reference.

    Sparsifies the model saved at ``referenceModelPath`` (a ``BSVMModel`` of any method, trained on
    the same features and labels): subgradient steps w~ += eta y_k phi(x_k) on the most violated
    example of max_i h_i - y_i <w~, phi(x_i)>, h_i = min(1, y_i f(x_i)) - y_i b, until every
    violation is <= ``epsilon``, the support set reaches ``maxSupport`` or ``maxIter`` steps were
    taken.  ``aggressive=True`` re-steps on violating support vectors before adding new ones.  The
    model keeps the reference's kernel and bias (its kernel params report them; this estimator's
    are not used) and records the whole path: ``core.slant.slant_model_at(model.expansion, k)`` is
    the model with k support vectors, so one fit serves every support size.

    The reference is a path, not a model object, because pyspark.ml params hold plain values: the
    estimator can then be copied, saved and loaded, put in a Pipeline and tuned by CrossValidator
    like any other.  ``weightCol`` is not supported.

    Defaults and the paper: eta = epsilon = 1/2 are the values of its analysis; its experiments pick
    eta from 4^-4 ... 4^2 (and, aggressive, epsilon from 2^-4 ... 1) on a validation set per support
    size.  ``etaGrid`` does that inside one fit: with validation rows, one path per step size in the same
    training stage, and the model is the path whose kept size (``selectSupportSize``; with ``maxSupport``
    and "end", that size) has the smallest validation error; ``getEta()`` of the model reports its step size
    and ``model.summary.validationGrid`` every path's.  At small support sizes that choice matters (see
    "Small support sets" in ``core.slant``).  The kernel is the reference's.

    >>> CSVC(C=10.0).fit(train_df).write().save("/models/csvc")          # doctest: +SKIP
    >>> sparse = SlantSparsifier(referenceModelPath="/models/csvc", aggressive=True,
    ...                          maxSupport=300).fit(train_df)           # doctest: +SKIP
    """

    core = CoreCall(fit_slant, {"eta": "eta", "epsilon": "epsilon", "maxSupport": "max_support", "maxIter": "max_steps",
                           "aggressive": "aggressive", "candidatesPerClass": "candidates_per_class", **_SELECTION})
    model_class = SlantSparsifierModel

    @keyword_only
    def __init__(self, *, referenceModelPath=None, featuresCol="features", labelCol="label", eta=0.5, epsilon=0.5,
                 maxSupport=None, aggressive=False, maxIter=100000, candidatesPerClass=None, predictionCol="prediction",
                 rawPredictionCol="rawPrediction", probabilityCol="probability", threshold=0.0, thresholds=None,
                 predictionPrecision="float64", seed=0, calibrationFraction=0.0, numPartitions=None,
                 coordinatorMode="auto", maxStageRestarts=15, validationIndicatorCol=None, validationFraction=0.0,
                 selectSupportSize="end", selectTolerance=0.0, etaGrid=None):
        super().__init__()
        self._set_given(self._input_kwargs)

    def _check(self):
        super()._check()
        if not self.getReferenceModelPath():
            raise ValueError("referenceModelPath is not set: save a fitted BSVMModel with "
                             "model.write().save(path) and pass that path")

    def _driver_inputs(self):
        return {"reference": load_expansion(self.getReferenceModelPath(), "referenceModelPath")}

    def _check_data(self, inputs, n_features, classes):
        check_reference(inputs["reference"], n_features, classes)


class L0SVMModel(BSVMModel, _L0SVMParams):
    """An L0-norm SVM trained by ``L0SVM``."""


class L0SVM(_BSVMEstimator, _L0SVMParams, _L0SVMSetters):
    """Huang, Zheng, King & Lyu's L0-norm SVM: a few prototype rows instead of all margin violators.

    Iteratively reweights a penalty C_alpha a^T Lambda a (Lambda = diag(|a|^-2),
    which tends to the L0 norm of the coefficients) on top of a C-SVC loss
    with cost C (the paper's C_xi); each iteration is a linear SVM over
    explicit features of the active rows, solved by the same decomposition
    as CSVC, and drops the rows whose coefficient fell below eps.
    See ``core.l0svm`` for the algorithm and the initial active set.

    Defaults and the paper: C = 1 and CAlpha = 0.2 are the paper's Ripley
    setting (there with a Gaussian of width 0.5; about 4 support vectors);
    gamma = "scale" (scikit-learn's), the random initial set of
    initialSize rows, eps, maxOuterIter and tol are ours.  Its Table 4
    chooses the width, C and CAlpha by cross-validation within 10-fold CV
    (5-fold for twonorm).

    >>> model = L0SVM(C=1.0, CAlpha=0.2, gamma=4.0).fit(train_df)   # doctest: +SKIP
    >>> model.numSupportVectors                                     # doctest: +SKIP
    """

    core = CoreCall(fit_l0svm, dict(_DUAL_SOLVER, C="C_xi", CAlpha="C_alpha", margin="margin", eps="eps",
                                   maxOuterIter="max_outer", initialSet="initial", initialSize="m0", seed="seed"))
    model_class = L0SVMModel

    @keyword_only
    def __init__(self, *, featuresCol="features", labelCol="label", weightCol=None, kernel="rbf", gamma="scale",
                 degree=3, coef0=0.0, C=1.0, CAlpha=0.2, margin="kernel", eps=1e-4, maxOuterIter=100,
                 initialSet="random", initialSize=500, tol=1e-6, maxIter=20000, workingSetSize=1024,
                 predictionCol="prediction", rawPredictionCol="rawPrediction", probabilityCol="probability",
                 threshold=0.0, thresholds=None, predictionPrecision="float64", seed=0, calibrationFraction=0.0,
                 numPartitions=None, coordinatorMode="auto", maxStageRestarts=15):
        super().__init__()
        self._set_given(self._input_kwargs)


class ElasticBudgetSVMModel(BSVMModel, _EBSVMParams):
    """An elastic budget SVM trained by ``ElasticBudgetSVM``."""


class ElasticBudgetSVM(_BSVMEstimator, _EBSVMParams, _EBSVMSetters):
    """The elastic budget SVM: a primal kernel SVM with at most ``budget`` support vectors.

    Stochastic subgradient steps (step 1/(regParam t), one example at a
    time, no bias) on lambda/2 ||a||^2 + sum_i hinge_i; a threshold theta on
    |a| follows eq. 3 so that the number of support vectors stays near the
    budget, and after each step the support vector of smallest |a| below
    theta is removed.  The partitions serve shuffled mini-batches (seeded:
    same ``seed``, same model); the driver runs the steps and holds only the
    support vectors.  Honours ``weightCol`` (w_i scales example i's hinge).

    Defaults and the paper: budget, regParam, epochs, etaTheta and gamma =
    "scale" (scikit-learn's) are ours.  The paper standardises the features,
    chooses lambda and the kernel width by a nested 3-2-fold CV over 13
    log-spaced values from 1e-3 to 1e9, and sets B to the best model's
    support size (Table 1) or to 10.

    >>> model = ElasticBudgetSVM(budget=200, regParam=1e-5, gamma=0.1, epochs=2).fit(train_df)  # doctest: +SKIP
    """

    core = CoreCall(fit_ebsvm, {"budget": "budget", "regParam": "lam", "epochs": "epochs", "batchSize": "batch_size",
                           "etaTheta": "eta_theta", "averageFraction": "average_fraction", "seed": "seed",
                           "checkpoints": "checkpoints", **_SELECTION})
    model_class = ElasticBudgetSVMModel

    @keyword_only
    def __init__(self, *, featuresCol="features", labelCol="label", weightCol=None, kernel="rbf", gamma="scale",
                 degree=3, coef0=0.0, budget=100, regParam=1e-4, epochs=1, batchSize=1024, etaTheta=1.0,
                 averageFraction=0.1, predictionCol="prediction", rawPredictionCol="rawPrediction",
                 probabilityCol="probability", threshold=0.0, thresholds=None, predictionPrecision="float64", seed=0,
                 calibrationFraction=0.0, numPartitions=None, coordinatorMode="auto", maxStageRestarts=15,
                 checkpoints=None, validationIndicatorCol=None, validationFraction=0.0, selectSupportSize="end",
                 selectTolerance=0.0, gammaGrid=None, regParamGrid=None):
        super().__init__()
        self._set_given(self._input_kwargs)


class SpSVMModel(BSVMModel, _SpSVMParams):
    """An SpSVM-2 model trained by ``SpSVM``."""


class SpSVM(_BSVMEstimator, _SpSVMParams, _SpSVMSetters):
    """SpSVM-2 of Keerthi, Chapelle & DeCoste: an L2-loss SVM over at most ``maxBasis`` basis functions.

    Grows the basis one training example at a time: each step scores ``kappa`` seeded random
    candidates by the exact decrease of the primal objective they allow alone (Method 2, or a
    full re-fit per candidate with ``basisSelection='method1'``), adds the best, and re-optimises
    all coefficients by Newton's method on the schedule ``retrain``.  The model expands in the
    kernel 1 + K (the bias is a regularised coordinate).  ``tol`` stops early when the
    objective's relative decrease per basis function between two re-optimisations falls below it; ``maxIter`` bounds the
    Newton iterations of each re-optimisation.  ``trainingSummary['path']`` holds the
    objective (and coefficients) at every basis size, so d can be chosen by validation with
    ``core.spsvm.truncate``.  Honours ``weightCol`` (w_i scales example i's loss).
    ``initialModelPath`` warm-starts the fit from a saved model's support vectors (offered first,
    in order; the basis then grows from the training rows): scheduled retraining on new data
    starts where the current model is.

    Defaults and the paper: kappa = 10 and the retraining schedule (at
    |J| = floor(2^(p/4))) follow section 6, the setting of its large-data
    experiments; tol = 1e-6 (an early stop), maxBasis = 100, regParam = 1 and
    gamma = "scale" (scikit-learn's) are ours.  Table 1 (Raetsch's sets)
    used kappa = 25, maxBasis = 25 (8 for Titanic), retraining after every
    basis function (the schedule comes later, in section 6.1) and no early
    stop, with gamma and lambda (regParam) chosen by 3-fold CV over 2^-7 ...
    2^7 and the basis size by the CV error along the path: to reproduce it,
    ``SpSVM(kappa=25, maxBasis=25, retrain="always", tol=0.0, ...)`` and
    ``model.evaluate(df).errorBySupportSize`` on each fold.  (kappa = 59,
    from Smola & Schoelkopf, is the paper's setting of its Figures 1-2.)

    >>> model = SpSVM(maxBasis=300, regParam=1 / 16, gamma=1.0).fit(train_df)   # doctest: +SKIP
    """

    core = CoreCall(fit_spsvm, {"maxBasis": "max_basis", "regParam": "lam", "kappa": "kappa", "seed": "seed",
                           "basisSelection": "selection", "retrain": "retrain", "tol": "tol",
                           "maxIter": "max_newton", **_SELECTION})
    model_class = SpSVMModel

    @keyword_only
    def __init__(self, *, featuresCol="features", labelCol="label", weightCol=None, kernel="rbf", gamma="scale",
                 degree=3, coef0=0.0, maxBasis=100, regParam=1.0, kappa=10, basisSelection="method2",
                 retrain="schedule", tol=1e-6, maxIter=50, initialModelPath=None, predictionCol="prediction",
                 rawPredictionCol="rawPrediction", probabilityCol="probability", threshold=0.0, thresholds=None,
                 predictionPrecision="float64", seed=0, calibrationFraction=0.0, numPartitions=None,
                 coordinatorMode="auto", maxStageRestarts=15, validationIndicatorCol=None, validationFraction=0.0,
                 selectSupportSize="end", selectTolerance=0.0, gammaGrid=None, regParamGrid=None):
        super().__init__()
        self._set_given(self._input_kwargs)

    def _driver_inputs(self):
        path = self.getInitialModelPath()
        return {"initial_basis": load_expansion(path, "initialModelPath").support_vectors} if path else {}

    def _check_data(self, inputs, n_features, classes):
        basis = inputs.get("initial_basis")
        if basis is not None and basis.shape[1] != n_features:
            raise ValueError(f"the model at initialModelPath has {basis.shape[1]} features but the data has "
                             f"{n_features}: warm-start from a model trained on the same features")
