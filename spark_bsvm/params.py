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

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(maxBasis=100, regParam=1.0, kappa=10, basisSelection="method2", retrain="schedule",
                         tol=1e-6, maxIter=50)

    def getMaxBasis(self):
        return self.getOrDefault(self.maxBasis)

    def getRegParam(self):
        return self.getOrDefault(self.regParam)
