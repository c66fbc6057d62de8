"""The public estimators: thin classes over the shared base, one per method."""

from pyspark import keyword_only

from core.ebsvm import fit_ebsvm
from core.svc import fit_budget_svm, fit_csvc
from spark_bsvm.estimator import _BSVMEstimator, positive
from spark_bsvm.params import _BudgetParams, _DualParams, _EBSVMParams


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


class ElasticBudgetSVM(_BSVMEstimator, _EBSVMParams):
    """The elastic budget SVM: a primal kernel SVM with at most ``budget`` support vectors.

    Stochastic subgradient steps (step 1/(regParam t), one example at a
    time, no bias) on lambda/2 ||a||^2 + sum_i hinge_i; a threshold theta on
    |a| follows eq. 3 so that the number of support vectors stays near the
    budget, and after each step the support vector of smallest |a| below
    theta is removed.  The partitions serve shuffled mini-batches (seeded:
    same ``seed``, same model); the driver runs the steps and holds only the
    support vectors.  Honours ``weightCol`` (w_i scales example i's hinge).

    >>> model = ElasticBudgetSVM(budget=200, regParam=1e-5, gamma=0.1, epochs=2).fit(train_df)  # doctest: +SKIP
    """

    @keyword_only
    def __init__(self, *, featuresCol="features", labelCol="label", weightCol=None, predictionCol="prediction",
                 rawPredictionCol="rawPrediction", kernel="rbf", gamma=1.0, degree=3, coef0=0.0, budget=100,
                 regParam=1e-4, epochs=1, batchSize=1024, etaTheta=1.0, average=True, numPartitions=None,
                 threshold=0.0, seed=0, probabilityCol="probability", calibrationFraction=0.0):
        super().__init__()
        self._set(**self._input_kwargs)

    def setBudget(self, value):
        return self._set(budget=value)

    def setRegParam(self, value):
        return self._set(regParam=value)

    def _validate_params(self):
        super()._validate_params()
        for name in ("budget", "epochs", "batchSize"):
            if self.getOrDefault(name) < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {self.getOrDefault(name)}")
        for name in ("regParam", "etaTheta"):
            positive(name, self.getOrDefault(name))

    def _train(self, engine, kernel):
        get = self.getOrDefault
        return fit_ebsvm(engine, budget=get(self.budget), lam=get(self.regParam), kernel=kernel,
                         epochs=get(self.epochs), batch_size=get(self.batchSize), eta_theta=get(self.etaTheta),
                         average=get(self.average), seed=get(self.seed))
