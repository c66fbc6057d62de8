"""Params shared by every spark-bsvm estimator and its model (pyspark.ml style)."""

from pyspark.ml.param import Param, Params, TypeConverters
from pyspark.ml.param.shared import (HasFeaturesCol, HasLabelCol, HasMaxIter, HasPredictionCol,
                                     HasProbabilityCol, HasRawPredictionCol, HasSeed, HasThreshold, HasTol,
                                     HasWeightCol)


class _BSVMParams(HasFeaturesCol, HasLabelCol, HasWeightCol, HasPredictionCol, HasRawPredictionCol,
                  HasProbabilityCol, HasThreshold, HasTol, HasMaxIter, HasSeed):
    """Columns, kernel and solver params common to all methods."""

    kernel = Param(Params._dummy(), "kernel", "kernel function: 'rbf' exp(-gamma ||x-z||^2), 'linear' x.z "
                   "or 'poly' (gamma x.z + coef0)^degree (LIBSVM's parameterisation)", TypeConverters.toString)
    gamma = Param(Params._dummy(), "gamma", "kernel coefficient of 'rbf' and 'poly' (> 0)", TypeConverters.toFloat)
    degree = Param(Params._dummy(), "degree", "degree of the 'poly' kernel (integer >= 1)", TypeConverters.toInt)
    coef0 = Param(Params._dummy(), "coef0", "independent term of the 'poly' kernel", TypeConverters.toFloat)
    calibrationFraction = Param(Params._dummy(), "calibrationFraction", "share of the training rows held out "
                                "(randomly, by seed) to fit Platt's sigmoid for probabilityCol; 0 = no "
                                "probabilities (in [0, 0.5))", TypeConverters.toFloat)
    numPartitions = Param(Params._dummy(), "numPartitions", "partitions of the training data, at most the "
                          "application's task slots (default: all slots)", TypeConverters.toInt)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(kernel="rbf", gamma=1.0, degree=3, coef0=0.0, tol=1e-3, maxIter=20000, seed=0,
                         calibrationFraction=0.0,
                         threshold=0.0, rawPredictionCol="rawPrediction", probabilityCol="probability")

    def getKernel(self):
        return self.getOrDefault(self.kernel)

    def getGamma(self):
        return self.getOrDefault(self.gamma)

    def getDegree(self):
        return self.getOrDefault(self.degree)

    def getCoef0(self):
        return self.getOrDefault(self.coef0)


class _DualParams(_BSVMParams):
    """Params of the dual decomposition methods (C-SVC and the budget SVMs)."""

    C = Param(Params._dummy(), "C", "cost of margin violations, C in the SVM dual's box 0 <= a_i <= C w_i (> 0)",
              TypeConverters.toFloat)
    workingSetSize = Param(Params._dummy(), "workingSetSize", "examples per decomposition round at the start "
                           "(grows with the number of free support vectors, up to 4096)", TypeConverters.toInt)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(C=1.0, workingSetSize=1024)

    def getC(self):
        return self.getOrDefault(self.C)


class _BudgetParams(_DualParams):
    """Params of Dekel & Singer's budget SVMs."""

    budget = Param(Params._dummy(), "budget", "B: the loss counts only the B worst-classified examples "
                   "(integer >= 1)", TypeConverters.toInt)
    norm = Param(Params._dummy(), "norm", "'l1' (budget-L1-SVM, sum a <= B C) or 'l2' (budget-L2-SVM, "
                 "sum a <= sqrt(B) C and sum a^2 <= C^2)", TypeConverters.toString)
    prune = Param(Params._dummy(), "prune", "keep only the B largest weights after training (the paper's "
                  "section 5)", TypeConverters.toBoolean)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(budget=100, norm="l1", prune=False)


class _SlantParams(_BSVMParams):
    """Params of the slant-loss sparsifier (Cotter, Shalev-Shwartz & Srebro)."""

    referenceModelPath = Param(Params._dummy(), "referenceModelPath", "path of a saved BSVMModel (any spark-bsvm "
                               "method, trained on the same features and labels) to sparsify; its kernel and "
                               "bias are kept", TypeConverters.toString)
    eta = Param(Params._dummy(), "eta", "subgradient step size (> 0; the paper's analysis uses 1/2)",
                TypeConverters.toFloat)
    epsilon = Param(Params._dummy(), "epsilon", "stop when every eligible example's violation h_i - y_i f~(x_i) "
                    "is <= epsilon (>= 0; the paper's analysis uses 1/2)", TypeConverters.toFloat)
    maxSupport = Param(Params._dummy(), "maxSupport", "stop before the support set would exceed this size "
                       "(integer >= 1; unset: no limit)", TypeConverters.toInt)
    aggressive = Param(Params._dummy(), "aggressive", "section 6.1's variant: step on violating support vectors "
                       "before taking a new one (sparser, more steps)", TypeConverters.toBoolean)
    candidatesPerClass = Param(Params._dummy(), "candidatesPerClass", "most violating examples each partition "
                               "reports per class and round (integer >= 1)", TypeConverters.toInt)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(eta=0.5, epsilon=0.5, aggressive=False, candidatesPerClass=64, maxIter=100000)


class _L0Params(_DualParams):
    """Params of the L0-norm SVM (Huang, Zheng, King & Lyu); C is the paper's C_xi."""

    CAlpha = Param(Params._dummy(), "CAlpha", "C_alpha: weight of the reweighted penalty a^T Lambda a that "
                   "tends to the L0 norm of the coefficients; larger gives sparser models (> 0)",
                   TypeConverters.toFloat)
    margin = Param(Params._dummy(), "margin", "margin term of the reweighted problem: 'kernel' (1/2 a^T K a, "
                   "the paper's algorithm) or 'identity' (1/2 a^T a, its inversion-free variant)",
                   TypeConverters.toString)
    eps = Param(Params._dummy(), "eps", "coefficients with |a_i| < eps leave the active set, and the outer "
                "iterations stop when no coefficient changes by eps (> 0)", TypeConverters.toFloat)
    maxOuterIter = Param(Params._dummy(), "maxOuterIter", "most reweighting iterations, T_max (>= 1)",
                         TypeConverters.toInt)
    initialSet = Param(Params._dummy(), "initialSet", "initial active set: 'random' (initialSize training rows "
                       "drawn by seed; all rows when there are fewer) or 'all' (every row: each partition then "
                       "holds an n_local x n block)", TypeConverters.toString)
    initialSize = Param(Params._dummy(), "initialSize", "m0: rows in a 'random' initial active set (>= 1)",
                        TypeConverters.toInt)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(CAlpha=0.2, margin="kernel", eps=1e-4, maxOuterIter=100, initialSet="random",
                         initialSize=500, tol=1e-6)  # inner solves eps-accurate, see core.l0svm.fit_l0svm


class _EBSVMParams(_BSVMParams):
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

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(budget=100, regParam=1e-4, epochs=1, batchSize=1024, etaTheta=1.0, averageFraction=0.1)


class _SpSVMParams(_BSVMParams):
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
    initialModelPath = Param(Params._dummy(), "initialModelPath", "warm start: path of a saved BSVMModel, or of "
                             "a PipelineModel ending in one, whose support vectors are offered as the first "
                             "basis functions (same features); unset: a cold start", TypeConverters.toString)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(maxBasis=100, regParam=1.0, kappa=10, basisSelection="method2", retrain="schedule",
                         tol=1e-6, maxIter=50)

    def getMaxBasis(self):
        return self.getOrDefault(self.maxBasis)

    def getRegParam(self):
        return self.getOrDefault(self.regParam)
