"""Params of the spark-bsvm estimators and models, pyspark.ml style.

Small mixins, one per param or family of params (each with its getter and the rule its values must
follow), and one params class per method, holding only the params that method uses, shared by the
method's Estimator and its Model.  Setters live beside them: ``_PredictionSetters`` for the Estimator and
the Model (pyspark's classifier bases bring the column setters), one ``_...Setters`` mixin per params
class for the Estimator only.

Every param's rule is declared once, in ``RULES`` of the class that defines it, and checked by
``check_params`` before any Spark job starts.
"""

import math

from pyspark.ml.classification import _ProbabilisticClassifierParams
from pyspark.ml.param import Param, Params, TypeConverters
from pyspark.ml.param.shared import HasSeed, HasWeightCol

from core.kernels import PRECISIONS, SCALE, KernelSpec
from core.l0svm import MARGINS
from core.selection import SELECT_RULES
from core.spsvm import RETRAINS, SELECTIONS
from core.svc import NORMS
from core.validation import check_integer, check_positive
from spark_bsvm.engine.stage import STAGE_RESTARTS
from spark_bsvm.engine.training import MODES


# ---- rules: each returns None or raises a ValueError naming the param, its value and what is allowed ----

def positive(name, value):
    check_positive(**{name: value})


def at_least(low):
    def rule(name, value):
        check_integer(low, **{name: value})
    return rule


def one_of(choices):
    def rule(name, value):
        if value not in choices:
            raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}")
    return rule


def in_range(low, high, closed_high, note=""):
    def rule(name, value):
        inside = math.isfinite(value) and low <= value and (value <= high if closed_high else value < high)
        if not inside:
            bracket = "]" if closed_high else ")"
            raise ValueError(f"{name} must be in [{low:g}, {high:g}{bracket}{note}, got {value!r}")
    return rule


def finite(name, value):
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")


def _gamma_or_scale(value):
    """The gamma param's converter: 'scale' as it is, a number as a float."""
    if value == SCALE:
        return SCALE
    try:
        return TypeConverters.toFloat(value)
    except TypeError:
        raise TypeError(f"gamma must be a number > 0 or 'scale', got {value!r}") from None


def positive_list(name, value):
    """The grid params' rule: at least one value, every value a positive finite number."""
    if not value:
        raise ValueError(f"{name} must hold at least one value (unset it for none), got {list(value)!r}")
    bad = [item for item in value if not (math.isfinite(item) and item > 0)]
    if bad:
        raise ValueError(f"{name} must hold positive finite numbers only, got {bad[0]!r}")


def class_thresholds(name, value):
    """MLlib's rule for ``thresholds``: one non-negative number per class, at most one of them 0."""
    if len(value) != 2 or not all(math.isfinite(t) and t >= 0 for t in value) or min(value) == max(value) == 0:
        raise ValueError(f"{name} must be two finite numbers >= 0, not both 0 (one per class, negative class "
                         f"first), got {list(value)!r}")


def check_params(instance):
    """Apply the rule of every param of ``instance`` that has a value (``RULES`` along its classes)."""
    rules = {}
    for cls in reversed(type(instance).__mro__):
        rules.update(vars(cls).get("RULES", {}))
    for param in instance.params:
        if param.name in rules and instance.isDefined(param) and instance.getOrDefault(param) is not None:
            rules[param.name](param.name, instance.getOrDefault(param))


# ---- params every method has --------------------------------------------------------------------------

class _BSVMParams(_ProbabilisticClassifierParams, HasSeed):
    """Columns, the decision threshold, calibration, partitions and the seed: every method's params (with
    pyspark's classifier params: featuresCol, labelCol, predictionCol, rawPredictionCol, probabilityCol and
    thresholds)."""

    threshold = Param(Params._dummy(), "threshold", "decision threshold on the decision value f(x): "
                      "predictionCol is the positive class where f(x) > threshold (a finite number; 0 is the "
                      "SVM's own rule); thresholds, when set, decides instead", TypeConverters.toFloat)
    calibrationFraction = Param(Params._dummy(), "calibrationFraction", "share of the training rows held out "
                                "(randomly, by seed) to fit Platt's sigmoid for probabilityCol; 0 = no "
                                "probabilities (in [0, 0.5))", TypeConverters.toFloat)
    numPartitions = Param(Params._dummy(), "numPartitions", "partitions of the training data, at most the "
                          "application's task slots (default: all slots); a fit holds that many slots until it "
                          "ends, so fits run side by side (CrossValidator or OneVsRest with parallelism > 1) "
                          "only with numPartitions <= slots // parallelism", TypeConverters.toInt)
    coordinatorMode = Param(Params._dummy(), "coordinatorMode", "where the solver runs: 'driver' (classic "
                            "sessions only: tasks connect to the driver; a lost task is rebuilt and the fit "
                            "resumes), 'executor' (in one training task, which the others connect to; a lost task "
                            "restarts the fit; for Spark Connect clients), or 'auto' (executor under Spark "
                            "Connect, else driver)",
                            TypeConverters.toString)
    maxStageRestarts = Param(Params._dummy(), "maxStageRestarts", "how many times a fit starts its training stage "
                             "again after a task was lost (Spark aborts the stage at a task's failure); with "
                             "coordinatorMode 'driver' the new stage resumes from the driver's model, with "
                             "'executor' the fit starts over; 0 = never (integer >= 0)", TypeConverters.toInt)
    predictionPrecision = Param(Params._dummy(), "predictionPrecision", "how transform computes the dot products "
                                "of the feature vectors with the support vectors: 'float64', or 'float32' (summed "
                                "in float32, rbf's exponentials too: less CPU, decision values moved by up to "
                                "1.2e-3 on covtype-20k with predictions unchanged, bench/bench_precision.py); "
                                "training is always float64",
                                TypeConverters.toString)

    RULES = {"threshold": finite, "calibrationFraction": in_range(0.0, 0.5, closed_high=False),
             "numPartitions": at_least(1), "seed": at_least(0), "coordinatorMode": one_of(MODES),
             "thresholds": class_thresholds, "maxStageRestarts": at_least(0),
             "predictionPrecision": one_of(PRECISIONS)}

    def set(self, param, value):
        """Set ``param`` to ``value``; None unsets it.  Stored as such, pyspark would save the None as a null,
        which its readers then fail to convert; and its readers set each saved param this way, so that
        estimators and models saved with such nulls (before spark-bsvm unset them) load."""
        if value is None:
            self.clear(param)
        else:
            super().set(param, value)

    def _set_given(self, values):
        """Set params by keyword, as the constructors and ``setParams`` do; a None (the constructors' default
        for a param without a default value) goes through ``set``, which unsets the param."""
        for name, value in values.items():
            if value is None:
                self.set(self.getParam(name), None)
        return self._set(**{name: value for name, value in values.items() if value is not None})

    def _output_columns(self, probabilities):
        """[(param name, column)] of the columns ``transform`` adds, ``probabilityCol`` only with ``probabilities``
        (a param set to "" adds none); a ValueError when two of them share a name, where one would replace the
        other (MLlib's classifiers refuse that too)."""
        names = (["probabilityCol"] if probabilities else []) + ["rawPredictionCol", "predictionCol"]
        outputs = [(name, self.getOrDefault(name)) for name in names if self.getOrDefault(name)]
        for k, (name, column) in enumerate(outputs):
            for earlier, earlier_column in outputs[:k]:
                if column == earlier_column:
                    raise ValueError(f"{earlier} and {name} are both {column!r}: transform would write one over the "
                                     "other; give each output column its own name")
        return outputs

    def _weight_col(self, dataset=None):
        """The instance weight column, or None (unset, empty, a method without ``weightCol``, or, given
        ``dataset``, a column it does not have: a model's rows to score or evaluate may come without it)."""
        column = self.getWeightCol() if self.hasParam("weightCol") and self.isDefined("weightCol") else None
        return column if column and (dataset is None or column in dataset.columns) else None

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(threshold=0.0, calibrationFraction=0.0, seed=0, rawPredictionCol="rawPrediction",
                         probabilityCol="probability", coordinatorMode="auto", maxStageRestarts=STAGE_RESTARTS,
                         predictionPrecision="float64")

    def getThreshold(self):
        return self.getOrDefault(self.threshold)

    def getCalibrationFraction(self):
        return self.getOrDefault(self.calibrationFraction)

    def getNumPartitions(self):
        """The set number of partitions, or None (all task slots)."""
        return self.getOrDefault(self.numPartitions) if self.isDefined(self.numPartitions) else None

    def getCoordinatorMode(self):
        return self.getOrDefault(self.coordinatorMode)

    def getMaxStageRestarts(self):
        return self.getOrDefault(self.maxStageRestarts)

    def getPredictionPrecision(self):
        return self.getOrDefault(self.predictionPrecision)

    def _class_thresholds(self):
        """``thresholds`` as a tuple, or None when not set."""
        value = self.getOrDefault(self.thresholds) if self.isDefined(self.thresholds) else None
        return None if value is None else tuple(value)


class _PredictionSetters:
    """Setters of the params that shape predictions, on the Estimators and the Model (pyspark's classifier
    bases set the columns and thresholds)."""

    def setThreshold(self, value):
        return self._set(threshold=value)

    def setPredictionPrecision(self, value):
        return self._set(predictionPrecision=value)


class _CommonSetters(_PredictionSetters):
    """Setters of ``_BSVMParams``' training params, on the Estimators."""

    def setSeed(self, value):
        return self._set(seed=value)

    def setCalibrationFraction(self, value):
        return self._set(calibrationFraction=value)

    def setNumPartitions(self, value):
        return self._set(numPartitions=value)

    def setCoordinatorMode(self, value):
        return self._set(coordinatorMode=value)

    def setMaxStageRestarts(self, value):
        return self._set(maxStageRestarts=value)


class _WeightParams(HasWeightCol):
    """An instance weight column, for the methods that honour one."""


class _WeightSetters:
    def setWeightCol(self, value):
        return self._set(weightCol=value)


class _KernelParams(Params):
    """The kernel, with LIBSVM's parameterisation."""

    kernel = Param(Params._dummy(), "kernel", "kernel function: 'rbf' exp(-gamma ||x-z||^2), 'linear' x.z "
                   "or 'poly' (gamma x.z + coef0)^degree (LIBSVM's parameterisation)", TypeConverters.toString)
    gamma = Param(Params._dummy(), "gamma", "kernel coefficient of 'rbf' and 'poly': a number > 0, or 'scale' "
                  "(the default, scikit-learn's: 1 / (numFeatures * Var(X)), Var(X) the unweighted variance of all "
                  "feature values of the training rows, 1 when that is 0; the fitted model records the number)",
                  _gamma_or_scale)
    degree = Param(Params._dummy(), "degree", "degree of the 'poly' kernel (integer >= 1)", TypeConverters.toInt)
    coef0 = Param(Params._dummy(), "coef0", "independent term of the 'poly' kernel", TypeConverters.toFloat)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(kernel="rbf", gamma=SCALE, degree=3, coef0=0.0)

    def getKernel(self):
        return self.getOrDefault(self.kernel)

    def getGamma(self):
        return self.getOrDefault(self.gamma)

    def getDegree(self):
        return self.getOrDefault(self.degree)

    def getCoef0(self):
        return self.getOrDefault(self.coef0)

    def kernel_spec(self):
        """The ``core.kernels.KernelSpec`` of these params (it checks them: a ValueError names the bad one)."""
        return KernelSpec(self.getKernel(), gamma=self.getGamma(), degree=self.getDegree(), coef0=self.getCoef0())


class _KernelSetters:
    def setKernel(self, value):
        return self._set(kernel=value)

    def setGamma(self, value):
        return self._set(gamma=value)

    def setDegree(self, value):
        return self._set(degree=value)

    def setCoef0(self, value):
        return self._set(coef0=value)


# ---- validation inside the fit, and a grid of settings in one fit (SpSVM-2, slant, EBSVM) ----------------

class _ValidationParams(Params):
    """Validation rows held beside the training rows, and what the fit keeps of its validated path."""

    validationIndicatorCol = Param(Params._dummy(), "validationIndicatorCol", "boolean column marking the rows "
                                   "held out for validation (true) instead of trained on: the fit records "
                                   "their error (the weighted share that the sign of f(x) misclassifies: threshold "
                                   "and thresholds, which a model may change after the fit, play no part) at every "
                                   "support size (or checkpoint) it passes; unset: none",
                                   TypeConverters.toString)
    validationFraction = Param(Params._dummy(), "validationFraction", "share of the training rows held out for "
                               "validation, drawn by seed (Spark's rand), when validationIndicatorCol is unset; "
                               "0 = none (in [0, 1))", TypeConverters.toFloat)
    selectSupportSize = Param(Params._dummy(), "selectSupportSize", "what the model keeps of its path: 'end' "
                              "(the whole fit), 'best' (the support size or checkpoint of the smallest "
                              "validation error) or 'withinTolerance' (the smallest within selectTolerance of "
                              "that error); the last two need validation rows", TypeConverters.toString)
    selectTolerance = Param(Params._dummy(), "selectTolerance", "for selectSupportSize='withinTolerance': the "
                            "validation error (a share, e.g. 0.005) the model may lose against the best (>= 0)",
                            TypeConverters.toFloat)

    RULES = {"validationFraction": in_range(0.0, 1.0, closed_high=False), "selectSupportSize": one_of(SELECT_RULES),
             "selectTolerance": in_range(0.0, math.inf, closed_high=False)}

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(validationFraction=0.0, selectSupportSize="end", selectTolerance=0.0)

    def getValidationIndicatorCol(self):
        """The set indicator column, or None."""
        return self.getOrDefault(self.validationIndicatorCol) if self.isDefined(self.validationIndicatorCol) \
            else None

    def getValidationFraction(self):
        return self.getOrDefault(self.validationFraction)

    def getSelectSupportSize(self):
        return self.getOrDefault(self.selectSupportSize)

    def getSelectTolerance(self):
        return self.getOrDefault(self.selectTolerance)


class _ValidationSetters:
    def setValidationIndicatorCol(self, value):
        return self._set(validationIndicatorCol=value)

    def setValidationFraction(self, value):
        return self._set(validationFraction=value)

    def setSelectSupportSize(self, value):
        return self._set(selectSupportSize=value)

    def setSelectTolerance(self, value):
        return self._set(selectTolerance=value)


GRID_PARAMS = {"gammaGrid": "gamma", "regParamGrid": "regParam", "etaGrid": "eta"}  # each grid: the param it tries


class _GridParams(Params):
    """A grid of (gamma, regParam) settings fitted one after another in the same training stage."""

    gammaGrid = Param(Params._dummy(), "gammaGrid", "kernel gammas to try (each > 0; rbf and poly kernels) in "
                      "one fit, with each value of regParamGrid; the model is the setting of the smallest "
                      "validation error (needs validation rows); set, it replaces gamma; unset: gamma alone",
                      TypeConverters.toListFloat)
    regParamGrid = Param(Params._dummy(), "regParamGrid", "regParam values to try (each > 0) in one fit, with "
                         "each value of gammaGrid; set, it replaces regParam; unset: regParam alone",
                         TypeConverters.toListFloat)

    RULES = {"gammaGrid": positive_list, "regParamGrid": positive_list}

    def getGammaGrid(self):
        """The set gammas, or None."""
        return self.getOrDefault(self.gammaGrid) if self.isDefined(self.gammaGrid) else None

    def getRegParamGrid(self):
        """The set regParam values, or None."""
        return self.getOrDefault(self.regParamGrid) if self.isDefined(self.regParamGrid) else None


class _GridSetters:
    def setGammaGrid(self, value):
        return self._set(gammaGrid=value)

    def setRegParamGrid(self, value):
        return self._set(regParamGrid=value)


# ---- the dual decomposition (C-SVC, budget SVMs, the L0-norm SVM's inner solves) ------------------------

class _DualSolverParams(Params):
    """C and the decomposition solver's settings."""

    C = Param(Params._dummy(), "C", "cost of margin violations (> 0): the dual's box 0 <= a_i <= C w_i "
              "(C-SVC, budget-L1, whose budget row is sum a_i <= budget C); for budget-L2 the ball "
              "sum a_i^2 <= C^2 with sum a_i <= sqrt(budget) C",
              TypeConverters.toFloat)
    tol = Param(Params._dummy(), "tol", "stop when the largest KKT violation of the dual is below tol (> 0)",
                TypeConverters.toFloat)
    maxIter = Param(Params._dummy(), "maxIter", "most decomposition rounds of a dual solve (integer >= 1)",
                    TypeConverters.toInt)
    workingSetSize = Param(Params._dummy(), "workingSetSize", "examples per decomposition round at the start "
                           "(grows with the number of free support vectors, up to 8192 or this size if "
                           "larger; integer >= 1)",
                           TypeConverters.toInt)

    RULES = {"C": positive, "tol": positive, "maxIter": at_least(1), "workingSetSize": at_least(1)}

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(C=1.0, tol=1e-3, maxIter=20000, workingSetSize=1024)

    def getC(self):
        return self.getOrDefault(self.C)

    def getTol(self):
        return self.getOrDefault(self.tol)

    def getMaxIter(self):
        return self.getOrDefault(self.maxIter)

    def getWorkingSetSize(self):
        return self.getOrDefault(self.workingSetSize)


class _DualSolverSetters:
    def setC(self, value):
        return self._set(C=value)

    def setTol(self, value):
        return self._set(tol=value)

    def setMaxIter(self, value):
        return self._set(maxIter=value)

    def setWorkingSetSize(self, value):
        return self._set(workingSetSize=value)


class _CSVCParams(_BSVMParams, _WeightParams, _KernelParams, _DualSolverParams):
    """Params of the C-SVC."""


class _CSVCSetters(_CommonSetters, _WeightSetters, _KernelSetters, _DualSolverSetters):
    pass


class _BudgetSVMParams(_BSVMParams, _WeightParams, _KernelParams, _DualSolverParams):
    """Params of Dekel & Singer's budget SVMs."""

    budget = Param(Params._dummy(), "budget", "B: the loss counts only the B worst-classified examples "
                   "(integer >= 1)", TypeConverters.toInt)
    norm = Param(Params._dummy(), "norm", "'l1' (budget-L1-SVM, sum a <= B C) or 'l2' (budget-L2-SVM, "
                 "sum a <= sqrt(B) C and sum a^2 <= C^2)", TypeConverters.toString)
    prune = Param(Params._dummy(), "prune", "keep only the B largest weights after training (the paper's "
                  "section 5)", TypeConverters.toBoolean)

    RULES = {"budget": at_least(1), "norm": one_of(NORMS)}

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(budget=100, norm="l1", prune=False)

    def getBudget(self):
        return self.getOrDefault(self.budget)

    def getNorm(self):
        return self.getOrDefault(self.norm)

    def getPrune(self):
        return self.getOrDefault(self.prune)


class _BudgetSVMSetters(_CSVCSetters):
    def setBudget(self, value):
        return self._set(budget=value)

    def setNorm(self, value):
        return self._set(norm=value)

    def setPrune(self, value):
        return self._set(prune=value)


class _L0SVMParams(_BSVMParams, _WeightParams, _KernelParams, _DualSolverParams):
    """Params of the L0-norm SVM (Huang, Zheng, King & Lyu); C is the paper's C_xi."""

    CAlpha = Param(Params._dummy(), "CAlpha", "C_alpha: weight of the reweighted penalty a^T Lambda a that "
                   "tends to the L0 norm of the coefficients; larger gives sparser models (> 0)",
                   TypeConverters.toFloat)
    margin = Param(Params._dummy(), "margin", "margin term of the reweighted problem: 'kernel' (1/2 a^T K a, "
                   "the paper's algorithm) or 'identity' (1/2 a^T a, its inversion-free variant)",
                   TypeConverters.toString)
    eps = Param(Params._dummy(), "eps", "coefficients with |a_i| < eps leave the active set, and the outer "
                "iterations stop when no coefficient changes by eps (> 0)", TypeConverters.toFloat)
    maxOuterIter = Param(Params._dummy(), "maxOuterIter", "most reweighting iterations, T_max (integer >= 1)",
                         TypeConverters.toInt)
    initialSet = Param(Params._dummy(), "initialSet", "initial active set: 'random' (initialSize training rows "
                       "drawn by seed; all rows when there are fewer) or 'all' (every row: each partition then "
                       "holds an n_local x n block)", TypeConverters.toString)
    initialSize = Param(Params._dummy(), "initialSize", "m0: rows in a 'random' initial active set (integer >= 1)",
                        TypeConverters.toInt)

    RULES = {"CAlpha": positive, "eps": positive, "maxOuterIter": at_least(1), "initialSize": at_least(1),
             "margin": one_of(MARGINS), "initialSet": one_of(("random", "all"))}

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(CAlpha=0.2, margin="kernel", eps=1e-4, maxOuterIter=100, initialSet="random",
                         initialSize=500, tol=1e-6)  # inner solves eps-accurate, see core.l0svm.fit_l0svm

    def getCAlpha(self):
        return self.getOrDefault(self.CAlpha)

    def getMargin(self):
        return self.getOrDefault(self.margin)

    def getEps(self):
        return self.getOrDefault(self.eps)

    def getMaxOuterIter(self):
        return self.getOrDefault(self.maxOuterIter)

    def getInitialSet(self):
        return self.getOrDefault(self.initialSet)

    def getInitialSize(self):
        return self.getOrDefault(self.initialSize)


class _L0SVMSetters(_CSVCSetters):
    def setCAlpha(self, value):
        return self._set(CAlpha=value)

    def setMargin(self, value):
        return self._set(margin=value)

    def setEps(self, value):
        return self._set(eps=value)

    def setMaxOuterIter(self, value):
        return self._set(maxOuterIter=value)

    def setInitialSet(self, value):
        return self._set(initialSet=value)

    def setInitialSize(self, value):
        return self._set(initialSize=value)


# ---- the slant-loss sparsifier -------------------------------------------------------------------------

class _SlantParams(_BSVMParams, _ValidationParams):
    """Params of the slant-loss sparsifier (Cotter, Shalev-Shwartz & Srebro); the kernel is the reference's."""

    referenceModelPath = Param(Params._dummy(), "referenceModelPath", "path of a saved BSVMModel (any spark-bsvm "
                               "method, trained on the same features and labels), or of a PipelineModel ending "
                               "in one, to sparsify; its kernel and bias are kept", TypeConverters.toString)
    eta = Param(Params._dummy(), "eta", "subgradient step size (> 0; the paper's analysis uses 1/2)",
                TypeConverters.toFloat)
    epsilon = Param(Params._dummy(), "epsilon", "stop when every eligible example's violation h_i - y_i f~(x_i) "
                    "is <= epsilon (>= 0; the paper's analysis uses 1/2)", TypeConverters.toFloat)
    maxSupport = Param(Params._dummy(), "maxSupport", "stop before the support set would exceed this size "
                       "(integer >= 1; unset: no limit)", TypeConverters.toInt)
    aggressive = Param(Params._dummy(), "aggressive", "section 6.1's variant: step on violating support vectors "
                       "before taking a new one (sparser, more steps)", TypeConverters.toBoolean)
    maxIter = Param(Params._dummy(), "maxIter", "most subgradient steps (integer >= 1)", TypeConverters.toInt)
    candidatesPerClass = Param(Params._dummy(), "candidatesPerClass", "most violating examples each partition "
                               "reports per class in the first round, which the driver's speculative steps start "
                               "from (integer >= 1; unset: each partition's share of the 4,096 examples the "
                               "driver holds, over its two classes, at least 64: 1,024 on two partitions)",
                               TypeConverters.toInt)
    etaGrid = Param(Params._dummy(), "etaGrid", "step sizes to try (each > 0) in one fit, one slant path each; "
                    "the model is the path of the smallest validation error at the size selectSupportSize keeps "
                    "(needs validation rows), and eta reports its step size; unset: eta alone",
                    TypeConverters.toListFloat)

    RULES = {"eta": positive, "epsilon": in_range(0.0, math.inf, closed_high=False), "maxSupport": at_least(1),
             "maxIter": at_least(1), "candidatesPerClass": at_least(1), "etaGrid": positive_list}

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(eta=0.5, epsilon=0.5, aggressive=False, maxIter=100000)

    def getReferenceModelPath(self):
        return self.getOrDefault(self.referenceModelPath) if self.isDefined(self.referenceModelPath) else None

    def getEta(self):
        return self.getOrDefault(self.eta)

    def getEpsilon(self):
        return self.getOrDefault(self.epsilon)

    def getMaxSupport(self):
        return self.getOrDefault(self.maxSupport) if self.isDefined(self.maxSupport) else None

    def getAggressive(self):
        return self.getOrDefault(self.aggressive)

    def getMaxIter(self):
        return self.getOrDefault(self.maxIter)

    def getCandidatesPerClass(self):
        """The set number, or None (the driver's share: ``core.slant._first_report``)."""
        return self.getOrDefault(self.candidatesPerClass) if self.isDefined(self.candidatesPerClass) else None

    def getEtaGrid(self):
        """The set step sizes, or None."""
        return self.getOrDefault(self.etaGrid) if self.isDefined(self.etaGrid) else None


class _SlantSetters(_CommonSetters, _ValidationSetters):
    def setReferenceModelPath(self, value):
        return self._set(referenceModelPath=value)

    def setEta(self, value):
        return self._set(eta=value)

    def setEpsilon(self, value):
        return self._set(epsilon=value)

    def setMaxSupport(self, value):
        return self._set(maxSupport=value)

    def setAggressive(self, value):
        return self._set(aggressive=value)

    def setMaxIter(self, value):
        return self._set(maxIter=value)

    def setCandidatesPerClass(self, value):
        return self._set(candidatesPerClass=value)

    def setEtaGrid(self, value):
        return self._set(etaGrid=value)


# ---- the elastic budget SVM ---------------------------------------------------------------------------

class _EBSVMParams(_BSVMParams, _WeightParams, _KernelParams, _ValidationParams, _GridParams):
    """Params of the elastic budget SVM (stochastic subgradient steps, threshold theta held at the budget)."""

    budget = Param(Params._dummy(), "budget", "B: the model keeps at most B support vectors; a threshold theta "
                   "on |a| holds their number near B during training (integer >= 1)", TypeConverters.toInt)
    regParam = Param(Params._dummy(), "regParam", "lambda of the primal lambda/2 ||a||^2 + sum_i hinge_i; the "
                     "step at example t is 1/(lambda t) (> 0)", TypeConverters.toFloat)
    epochs = Param(Params._dummy(), "epochs", "passes over the training data, each in a new random order "
                   "(integer >= 1)", TypeConverters.toInt)
    batchSize = Param(Params._dummy(), "batchSize", "rows the partitions send to the driver per round; the steps "
                      "stay one example at a time (integer >= 1)", TypeConverters.toInt)
    etaTheta = Param(Params._dummy(), "etaTheta", "step of theta (eq. 3) relative to the coefficients' step "
                     "1/(lambda t) (> 0)", TypeConverters.toFloat)
    averageFraction = Param(Params._dummy(), "averageFraction", "return the coefficients averaged over this "
                            "fraction of the steps, the last ones; 0: the last iterate (in [0, 1])",
                            TypeConverters.toFloat)
    checkpoints = Param(Params._dummy(), "checkpoints", "with validation rows: models scored on them, evenly "
                        "spaced over the steps, among which selectSupportSize chooses (integer >= 1; unset: one "
                        "per epoch)", TypeConverters.toInt)

    RULES = {"budget": at_least(1), "regParam": positive, "epochs": at_least(1), "batchSize": at_least(1),
             "etaTheta": positive, "averageFraction": in_range(0.0, 1.0, closed_high=True, note=" (0: the last "
                                                                                         "iterate)"),
             "checkpoints": at_least(1)}

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(budget=100, regParam=1e-4, epochs=1, batchSize=1024, etaTheta=1.0, averageFraction=0.1)

    def getBudget(self):
        return self.getOrDefault(self.budget)

    def getRegParam(self):
        return self.getOrDefault(self.regParam)

    def getEpochs(self):
        return self.getOrDefault(self.epochs)

    def getBatchSize(self):
        return self.getOrDefault(self.batchSize)

    def getEtaTheta(self):
        return self.getOrDefault(self.etaTheta)

    def getAverageFraction(self):
        return self.getOrDefault(self.averageFraction)

    def getCheckpoints(self):
        """The set number of checkpoints, or None (one per epoch)."""
        return self.getOrDefault(self.checkpoints) if self.isDefined(self.checkpoints) else None


class _EBSVMSetters(_CommonSetters, _WeightSetters, _KernelSetters, _ValidationSetters, _GridSetters):
    def setBudget(self, value):
        return self._set(budget=value)

    def setRegParam(self, value):
        return self._set(regParam=value)

    def setEpochs(self, value):
        return self._set(epochs=value)

    def setBatchSize(self, value):
        return self._set(batchSize=value)

    def setEtaTheta(self, value):
        return self._set(etaTheta=value)

    def setAverageFraction(self, value):
        return self._set(averageFraction=value)

    def setCheckpoints(self, value):
        return self._set(checkpoints=value)


# ---- SpSVM-2 ------------------------------------------------------------------------------------------

class _SpSVMParams(_BSVMParams, _WeightParams, _KernelParams, _ValidationParams, _GridParams):
    """Params of SpSVM-2 (Keerthi, Chapelle & DeCoste): a basis grown greedily to maxBasis."""

    maxBasis = Param(Params._dummy(), "maxBasis", "d_max: the most basis functions (training examples) the "
                     "model expands in (integer >= 1)", TypeConverters.toInt)
    regParam = Param(Params._dummy(), "regParam", "lambda of the primal lambda/2 ||w||^2 + 1/2 sum_i w_i "
                     "max(0, 1 - y_i f(x_i))^2 (> 0); about 1/C of a C-SVC", TypeConverters.toFloat)
    kappa = Param(Params._dummy(), "kappa", "candidates scored for each new basis function (integer >= 1)",
                  TypeConverters.toInt)
    basisSelection = Param(Params._dummy(), "basisSelection", "'method2' (score each candidate by a 1-D "
                           "minimisation, the paper's SpSVM-2) or 'method1' (a full Newton solve per "
                           "candidate, kappa times slower)", TypeConverters.toString)
    retrain = Param(Params._dummy(), "retrain", "when to re-optimise all coefficients: 'schedule' (at "
                    "|J| = floor(2^(p/4)) and at the end) or 'always'", TypeConverters.toString)
    tol = Param(Params._dummy(), "tol", "stop early when, at a re-optimisation, the objective fell by less than "
                "this share of it per basis function added since the previous one (>= 0; 0: never)",
                TypeConverters.toFloat)
    maxIter = Param(Params._dummy(), "maxIter", "most Newton iterations of each re-optimisation (integer >= 1)",
                    TypeConverters.toInt)
    initialModelPath = Param(Params._dummy(), "initialModelPath", "warm start: path of a saved BSVMModel, or of "
                             "a PipelineModel ending in one, whose support vectors are offered as the first "
                             "basis functions (same features); unset: a cold start", TypeConverters.toString)

    RULES = {"maxBasis": at_least(1), "regParam": positive, "kappa": at_least(1),
             "basisSelection": one_of(SELECTIONS), "retrain": one_of(RETRAINS),
             "tol": in_range(0.0, math.inf, closed_high=False), "maxIter": at_least(1)}

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(maxBasis=100, regParam=1.0, kappa=10, basisSelection="method2", retrain="schedule",
                         tol=1e-6, maxIter=50)

    def getMaxBasis(self):
        return self.getOrDefault(self.maxBasis)

    def getRegParam(self):
        return self.getOrDefault(self.regParam)

    def getKappa(self):
        return self.getOrDefault(self.kappa)

    def getBasisSelection(self):
        return self.getOrDefault(self.basisSelection)

    def getRetrain(self):
        return self.getOrDefault(self.retrain)

    def getTol(self):
        return self.getOrDefault(self.tol)

    def getMaxIter(self):
        return self.getOrDefault(self.maxIter)

    def getInitialModelPath(self):
        return self.getOrDefault(self.initialModelPath) if self.isDefined(self.initialModelPath) else None


class _SpSVMSetters(_CommonSetters, _WeightSetters, _KernelSetters, _ValidationSetters, _GridSetters):
    def setMaxBasis(self, value):
        return self._set(maxBasis=value)

    def setRegParam(self, value):
        return self._set(regParam=value)

    def setKappa(self, value):
        return self._set(kappa=value)

    def setBasisSelection(self, value):
        return self._set(basisSelection=value)

    def setRetrain(self, value):
        return self._set(retrain=value)

    def setTol(self, value):
        return self._set(tol=value)

    def setMaxIter(self, value):
        return self._set(maxIter=value)

    def setInitialModelPath(self, value):
        return self._set(initialModelPath=value)
