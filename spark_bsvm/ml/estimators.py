"""The public estimators: thin classes over the shared base, one per method."""

from pyspark import keyword_only

from core.ebsvm import fit_ebsvm
from core.l0svm import MARGINS, fit_l0svm
from core.slant import fit_slant
from core.spsvm import fit_spsvm
from core.svc import fit_budget_svm, fit_csvc
from spark_bsvm.ml.base import _BSVMEstimator, positive
from spark_bsvm.ml.model import BSVMModel
from spark_bsvm.ml.params import _BudgetParams, _DualParams, _EBSVMParams, _L0Params, _SlantParams, _SpSVMParams


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


class SlantSparsifier(_BSVMEstimator, _SlantParams):
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

    >>> CSVC(C=10.0).fit(train_df).write().save("/models/csvc")          # doctest: +SKIP
    >>> sparse = SlantSparsifier(referenceModelPath="/models/csvc", aggressive=True,
    ...                          maxSupport=300).fit(train_df)           # doctest: +SKIP
    """

    @keyword_only
    def __init__(self, *, referenceModelPath=None, featuresCol="features", labelCol="label",
                 predictionCol="prediction", rawPredictionCol="rawPrediction", eta=0.5, epsilon=0.5, maxSupport=None,
                 aggressive=False, maxIter=100000, candidatesPerClass=64, numPartitions=None, threshold=0.0, seed=0,
                 probabilityCol="probability", calibrationFraction=0.0):
        super().__init__()
        self._set(**self._input_kwargs)

    def setReferenceModelPath(self, value):
        return self._set(referenceModelPath=value)

    def _validate_params(self):
        super()._validate_params()
        if not self.isDefined(self.referenceModelPath) or not self.getOrDefault(self.referenceModelPath):
            raise ValueError("referenceModelPath is not set: save a fitted BSVMModel with "
                             "model.write().save(path) and pass that path")
        if self.getMaxIter() < 1:
            raise ValueError(f"maxIter (the most subgradient steps) must be >= 1, got {self.getMaxIter()}")
        if self.isDefined(self.weightCol) and self.getWeightCol():
            raise ValueError("weightCol is not supported by the slant sparsifier (its steps have no per-example "
                             "weight); unset weightCol")

    def _driver_inputs(self):
        return {"reference": load_expansion(self.getOrDefault(self.referenceModelPath), "referenceModelPath")}

    def _train(self, engine, kernel, reference):
        get = self.getOrDefault
        max_support = get(self.maxSupport) if self.isDefined(self.maxSupport) else None
        return fit_slant(engine, reference, eta=get(self.eta), epsilon=get(self.epsilon),
                         max_support=max_support, max_steps=self.getMaxIter(), aggressive=get(self.aggressive),
                         candidates_per_class=get(self.candidatesPerClass))


class L0SVM(_BSVMEstimator, _L0Params):
    """Huang, Zheng, King & Lyu's L0-norm SVM: a few prototype rows instead of all margin violators.

    Iteratively reweights a penalty C_alpha a^T Lambda a (Lambda = diag(|a|^-2),
    which tends to the L0 norm of the coefficients) on top of a C-SVC loss
    with cost C (the paper's C_xi); each iteration is a linear SVM over
    explicit features of the active rows, solved by the same decomposition
    as CSVC, and drops the rows whose coefficient fell below eps.  The
    paper uses C = 1, CAlpha = 0.2 on Ripley (about 4 support vectors).
    See ``core.l0svm`` for the algorithm and the initial active set.

    >>> model = L0SVM(C=1.0, CAlpha=0.2, gamma=4.0).fit(train_df)   # doctest: +SKIP
    >>> model.numSupportVectors                                     # doctest: +SKIP
    """

    @keyword_only
    def __init__(self, *, featuresCol="features", labelCol="label", weightCol=None, predictionCol="prediction",
                 rawPredictionCol="rawPrediction", kernel="rbf", gamma=1.0, degree=3, coef0=0.0, C=1.0,
                 CAlpha=0.2, margin="kernel", eps=1e-4, maxOuterIter=100, initialSet="random", initialSize=500,
                 tol=1e-6, maxIter=20000, workingSetSize=1024, numPartitions=None, threshold=0.0, seed=0,
                 probabilityCol="probability", calibrationFraction=0.0):
        super().__init__()
        self._set(**self._input_kwargs)

    def setCAlpha(self, value):
        return self._set(CAlpha=value)

    def _validate_params(self):
        super()._validate_params()
        for name in ("CAlpha", "eps"):
            positive(name, self.getOrDefault(name))
        for name in ("maxOuterIter", "initialSize"):
            if self.getOrDefault(name) < 1:
                raise ValueError(f"{name} must be >= 1, got {self.getOrDefault(name)}")
        if self.getOrDefault(self.margin) not in MARGINS:
            raise ValueError(f"margin must be one of {MARGINS}, got {self.getOrDefault(self.margin)!r}")
        if self.getOrDefault(self.initialSet) not in ("random", "all"):
            raise ValueError(f"initialSet must be 'random' or 'all', got {self.getOrDefault(self.initialSet)!r}")

    def _train(self, engine, kernel):
        get = self.getOrDefault
        return fit_l0svm(engine, C_xi=positive("C", get(self.C)), C_alpha=get(self.CAlpha),
                         kernel=kernel, margin=get(self.margin), eps=get(self.eps),
                         max_outer=get(self.maxOuterIter), initial=get(self.initialSet), m0=get(self.initialSize),
                         seed=get(self.seed), tol=self.getTol(), working_set_size=get(self.workingSetSize),
                         max_rounds=self.getMaxIter())


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
                 regParam=1e-4, epochs=1, batchSize=1024, etaTheta=1.0, averageFraction=0.1, numPartitions=None,
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
        if not 0.0 <= self.getOrDefault(self.averageFraction) <= 1.0:
            raise ValueError(f"averageFraction must be in [0, 1] (0: the last iterate), "
                             f"got {self.getOrDefault(self.averageFraction)}")

    def _train(self, engine, kernel):
        get = self.getOrDefault
        return fit_ebsvm(engine, budget=get(self.budget), lam=get(self.regParam), kernel=kernel,
                         epochs=get(self.epochs), batch_size=get(self.batchSize), eta_theta=get(self.etaTheta),
                         average_fraction=get(self.averageFraction), seed=get(self.seed))


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
    ``initialModelPath`` warm-starts the fit from a saved model's support vectors (offered first,
    in order; the basis then grows from the training rows): scheduled retraining on new data
    starts where the current model is.

    >>> model = SpSVM(maxBasis=300, regParam=1 / 16, gamma=1.0).fit(train_df)   # doctest: +SKIP
    """

    @keyword_only
    def __init__(self, *, featuresCol="features", labelCol="label", weightCol=None, predictionCol="prediction",
                 rawPredictionCol="rawPrediction", kernel="rbf", gamma=1.0, degree=3, coef0=0.0, maxBasis=100,
                 regParam=1.0, kappa=10, basisSelection="method2", retrain="schedule", tol=1e-6, maxIter=50,
                 numPartitions=None, threshold=0.0, seed=0, probabilityCol="probability",
                 calibrationFraction=0.0, initialModelPath=None):
        super().__init__()
        self._set(**self._input_kwargs)

    def setMaxBasis(self, value):
        return self._set(maxBasis=value)

    def setRegParam(self, value):
        return self._set(regParam=value)

    def setInitialModelPath(self, value):
        return self._set(initialModelPath=value)

    def _driver_inputs(self):
        path = self.getOrDefault(self.initialModelPath) if self.isDefined(self.initialModelPath) else None
        return {"initial_basis": load_expansion(path, "initialModelPath").support_vectors} if path else {}

    def _train(self, engine, kernel, initial_basis=None):
        return fit_spsvm(engine, max_basis=self.getMaxBasis(), lam=positive("regParam", self.getRegParam()),
                         kernel=kernel, kappa=self.getOrDefault(self.kappa), seed=self.getOrDefault(self.seed),
                         selection=self.getOrDefault(self.basisSelection),
                         retrain=self.getOrDefault(self.retrain), tol=self.getTol(), max_newton=self.getMaxIter(),
                         initial_basis=initial_basis)
