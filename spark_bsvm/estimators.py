"""The public estimators: thin classes over the shared base, one per method."""

from pyspark import keyword_only

from core.spsvm import fit_spsvm
from core.svc import fit_budget_svm, fit_csvc
from spark_bsvm.estimator import _BSVMEstimator, positive
from spark_bsvm.params import _BudgetParams, _DualParams, _SpSVMParams


class CSVC(_BSVMEstimator, _DualParams):
    """LIBSVM's C-SVC on Spark, the reference method.

    Minimises the standard SVM dual by decomposition: each round the
    partitions return their most violating examples, the driver solves the
    working set with a second-order SMO.  Honours ``weightCol`` (the box
    becomes C w_i, as LIBSVM's instance weights).

    >>> model = CSVC(C=10.0, gamma=1.0).fit(train_df)   # doctest: +SKIP
    >>> model.transform(test_df).select("prediction")  # doctest: +SKIP
    """

    @keyword_only
    def __init__(self, *, featuresCol="features", labelCol="label", weightCol=None, predictionCol="prediction",
                 rawPredictionCol="rawPrediction", kernel="rbf", gamma=1.0, degree=3, coef0=0.0, C=1.0,
                 tol=1e-3, maxIter=20000, workingSetSize=1024, numPartitions=None, threshold=0.0, seed=0,
                 probabilityCol="probability", calibrationFraction=0.0):
        super().__init__()
        self._set(**self._input_kwargs)

    def setC(self, value):
        return self._set(C=value)

    def _train(self, engine, kernel):
        return fit_csvc(engine, C=positive("C", self.getC()), kernel=kernel, tol=self.getTol(),
                        working_set_size=self.getOrDefault(self.workingSetSize), max_rounds=self.getMaxIter())


class BudgetSVM(_BSVMEstimator, _BudgetParams):
    """Dekel & Singer's budget-L1 / budget-L2 SVM: the loss counts only the B worst examples.

    ``norm='l1'``: the dual adds sum a_i <= B C; ``norm='l2'``: sum a_i <=
    sqrt(B) C and sum a_i^2 <= C^2.  Every support vector has a margin no
    larger than the B-th smallest (Theorem 2); ``prune=True`` keeps only
    the B largest weights (section 5).  The paper scales C as 10 / B (L1)
    and 10 / sqrt(B) (L2).  Honours ``weightCol`` for L1 only.
    """

    @keyword_only
    def __init__(self, *, featuresCol="features", labelCol="label", weightCol=None, predictionCol="prediction",
                 rawPredictionCol="rawPrediction", kernel="rbf", gamma=1.0, degree=3, coef0=0.0, C=1.0,
                 budget=100, norm="l1", prune=False, tol=1e-3, maxIter=20000, workingSetSize=1024,
                 numPartitions=None, threshold=0.0, seed=0,
                 probabilityCol="probability", calibrationFraction=0.0):
        super().__init__()
        self._set(**self._input_kwargs)

    def setBudget(self, value):
        return self._set(budget=value)

    def _validate_params(self):
        super()._validate_params()
        if self.getOrDefault(self.norm) == "l2" and self.isDefined(self.weightCol) and self.getWeightCol():
            raise ValueError("weightCol is not supported by the budget-L2 SVM (its dual has no per-example "
                             "box); unset weightCol or use norm='l1'")

    def _train(self, engine, kernel):
        return fit_budget_svm(engine, budget=positive("budget", self.getOrDefault(self.budget)),
                              C=positive("C", self.getC()), norm=self.getOrDefault(self.norm), kernel=kernel,
                              tol=self.getTol(), working_set_size=self.getOrDefault(self.workingSetSize),
                              max_rounds=self.getMaxIter(), prune=self.getOrDefault(self.prune))


class SpSVM(_BSVMEstimator, _SpSVMParams):
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

    >>> model = SpSVM(maxBasis=300, regParam=1 / 16, gamma=1.0).fit(train_df)   # doctest: +SKIP
    """

    @keyword_only
    def __init__(self, *, featuresCol="features", labelCol="label", weightCol=None, predictionCol="prediction",
                 rawPredictionCol="rawPrediction", kernel="rbf", gamma=1.0, degree=3, coef0=0.0, maxBasis=100,
                 regParam=1.0, kappa=10, basisSelection="method2", retrain="schedule", tol=1e-6, maxIter=50,
                 numPartitions=None, threshold=0.0, seed=0, probabilityCol="probability",
                 calibrationFraction=0.0):
        super().__init__()
        self._set(**self._input_kwargs)

    def setMaxBasis(self, value):
        return self._set(maxBasis=value)

    def setRegParam(self, value):
        return self._set(regParam=value)

    def _train(self, engine, kernel):
        return fit_spsvm(engine, max_basis=self.getMaxBasis(), lam=positive("regParam", self.getRegParam()),
                         kernel=kernel, kappa=self.getOrDefault(self.kappa), seed=self.getOrDefault(self.seed),
                         selection=self.getOrDefault(self.basisSelection),
                         retrain=self.getOrDefault(self.retrain), tol=self.getTol(), max_newton=self.getMaxIter())
