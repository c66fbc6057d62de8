"""Params per method: only what the method uses, a getter and a setter for each, checks before any Spark job."""

import inspect

import pytest

from spark_bsvm.ml import (CSVC, L0SVM, BSVMModel, BudgetSVM, CSVCModel, ElasticBudgetSVM, SlantSparsifier, SpSVM,
                           SpSVMModel)
from spark_bsvm.engine.stage import STAGE_RESTARTS, TrainingData
from spark_bsvm.ml.base import _BSVMEstimator
from tests.conftest import rings_frame

ESTIMATORS = [CSVC, BudgetSVM, SlantSparsifier, ElasticBudgetSVM, SpSVM, L0SVM]
CHOICES = {"kernel": "linear", "norm": "l2", "margin": "identity", "initialSet": "all", "basisSelection": "method1",
           "retrain": "always", "numPartitions": 3, "maxSupport": 40, "candidatesPerClass": 16,
           "thresholds": [0.4, 0.6], "gamma": 0.5, "checkpoints": 4, "selectSupportSize": "best",
           "gammaGrid": [0.5, 2.0], "regParamGrid": [0.1], "etaGrid": [0.25, 1.0], "predictionPrecision": "float32"}


def _sample(estimator, param):
    """A valid value of ``param`` that differs from its default."""
    default = estimator.getOrDefault(param) if estimator.hasDefault(param) else None
    if param.name in CHOICES:
        return CHOICES[param.name]
    if isinstance(default, bool):
        return not default
    if isinstance(default, int):
        return default + 3
    if isinstance(default, float):
        return default + 0.125
    return "some_column" if param.name.endswith("Col") else "/some/path"


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_every_param_has_a_getter_and_a_setter_that_round_trip(cls):
    estimator = cls()
    for param in estimator.params:
        name = param.name[0].upper() + param.name[1:]
        getter, setter = getattr(estimator, f"get{name}", None), getattr(estimator, f"set{name}", None)
        assert callable(getter) and callable(setter), f"{cls.__name__}.{param.name} lacks get{name} or set{name}"
        value = _sample(estimator, param)
        assert setter(value) is estimator
        assert getter() == value, f"{cls.__name__}.set{name}({value!r}) then get{name}()"


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_estimator_and_model_share_the_method_params_and_the_table_names_only_real_params(cls):
    estimator = cls()
    names = {p.name for p in estimator.params}
    trained_kernel = {"kernel", "gamma", "degree", "coef0"} if cls is SlantSparsifier else set()  # the reference's
    assert names | trained_kernel == {p.name for p in cls.model_class().params}
    assert set(cls.core.arguments) <= names
    assert all(param.doc for param in estimator.params)


def test_each_method_carries_only_the_params_it_uses():
    assert not {"kernel", "gamma", "tol", "weightCol", "C"} & {p.name for p in SlantSparsifier().params}
    assert not {"tol", "maxIter", "C"} & {p.name for p in ElasticBudgetSVM().params}
    assert "budget" not in {p.name for p in CSVC().params}
    assert "decision value f(x)" in CSVC().explainParam("threshold")


def test_the_model_has_column_setters():
    model = SpSVMModel()
    assert model.setFeaturesCol("f").setPredictionCol("p").setRawPredictionCol("r").setProbabilityCol("q") is model
    assert model.setThreshold(0.5).getThreshold() == 0.5 and model.getFeaturesCol() == "f"
    assert model.setThresholds([0.3, 0.7]).getThresholds() == [0.3, 0.7] and model.setLabelCol("y") is model
    assert isinstance(model, BSVMModel) and not hasattr(model, "setMaxBasis")


BAD = [
    (CSVC(C=-1.0), "C must be a positive finite number, got -1.0"),
    (CSVC(tol=0.0), "tol must be a positive finite number, got 0.0"),
    (CSVC(gamma=0.0), "gamma must be a positive finite number, got 0.0"),
    (CSVC(kernel="sigmoid"), "unknown kernel 'sigmoid'"),
    (CSVC(maxIter=0), "maxIter must be an integer >= 1, got 0"),
    (CSVC(numPartitions=0), "numPartitions must be an integer >= 1, got 0"),
    (CSVC(calibrationFraction=0.5), r"calibrationFraction must be in \[0, 0.5\), got 0.5"),
    (CSVC(threshold=float("nan")), "threshold must be a finite number, got nan"),
    (CSVC(predictionPrecision="half"), r"predictionPrecision must be one of \('float64', 'float32'\), got 'half'"),
    (BudgetSVM(budget=0), "budget must be an integer >= 1, got 0"),
    (BudgetSVM(norm="l3"), r"norm must be one of \('l1', 'l2'\), got 'l3'"),
    (BudgetSVM(norm="l2", weightCol="w"), "weightCol is not supported by the budget-L2 SVM"),
    (SpSVM(maxBasis=0), "maxBasis must be an integer >= 1, got 0"),
    (SpSVM(kappa=0), "kappa must be an integer >= 1, got 0"),
    (SpSVM(regParam=0.0), "regParam must be a positive finite number, got 0.0"),
    (SpSVM(basisSelection="method3"), r"basisSelection must be one of \('method2', 'method1'\)"),
    (SlantSparsifier(), "referenceModelPath is not set"),
    (SlantSparsifier(referenceModelPath="/x", eta=0.0), "eta must be a positive finite number, got 0.0"),
    (ElasticBudgetSVM(epochs=0), "epochs must be an integer >= 1, got 0"),
    (L0SVM(CAlpha=-1.0), "CAlpha must be a positive finite number, got -1.0"),
    (SpSVM(seed=-1), "seed must be an integer >= 0, got -1"),
    (CSVC(workingSetSize=0), "workingSetSize must be an integer >= 1, got 0"),
    (CSVC(coordinatorMode="cluster"),
     r"coordinatorMode must be one of \('auto', 'driver', 'executor'\), got 'cluster'"),
    (CSVC(thresholds=[-1.0, 1.0]), r"thresholds must be two finite numbers >= 0, not both 0 \(one per class, "
                                   r"negative class first\), got \[-1.0, 1.0\]"),
    (SlantSparsifier(referenceModelPath="/x", epsilon=-1.0), r"epsilon must be in \[0, inf\), got -1.0"),
    (SlantSparsifier(referenceModelPath="/x", maxSupport=0), "maxSupport must be an integer >= 1, got 0"),
    (SlantSparsifier(referenceModelPath="/x", maxIter=0), "maxIter must be an integer >= 1, got 0"),
    (SlantSparsifier(referenceModelPath="/x", candidatesPerClass=0), "candidatesPerClass must be an integer >= 1"),
    (ElasticBudgetSVM(budget=0), "budget must be an integer >= 1, got 0"),
    (ElasticBudgetSVM(regParam=-1.0), "regParam must be a positive finite number, got -1.0"),
    (ElasticBudgetSVM(batchSize=0), "batchSize must be an integer >= 1, got 0"),
    (ElasticBudgetSVM(etaTheta=0.0), "etaTheta must be a positive finite number, got 0.0"),
    (ElasticBudgetSVM(averageFraction=1.5), r"averageFraction must be in \[0, 1\] \(0: the last iterate\), got 1.5"),
    (SpSVM(maxIter=0), "maxIter must be an integer >= 1, got 0"),
    (SpSVM(retrain="never"), r"retrain must be one of \('schedule', 'always'\), got 'never'"),
    (SpSVM(tol=-1.0), r"tol must be in \[0, inf\), got -1.0"),
    (L0SVM(eps=0.0), "eps must be a positive finite number, got 0.0"),
    (L0SVM(maxOuterIter=0), "maxOuterIter must be an integer >= 1, got 0"),
    (L0SVM(initialSize=0), "initialSize must be an integer >= 1, got 0"),
    (L0SVM(margin="l1"), r"margin must be one of \('kernel', 'identity'\), got 'l1'"),
    (L0SVM(initialSet="first"), r"initialSet must be one of \('random', 'all'\), got 'first'"),
    (SpSVM(validationFraction=1.5), r"validationFraction must be in \[0, 1\), got 1.5"),
    (SpSVM(selectTolerance=-1.0), r"selectTolerance must be in \[0, inf\), got -1.0"),
    (SpSVM(selectSupportSize="x"), r"selectSupportSize must be one of \('end', 'best', 'withinTolerance'\), got 'x'"),
    (SpSVM(gammaGrid=[0.0]), "gammaGrid must hold positive finite numbers only, got 0.0"),
    (SpSVM(regParamGrid=[]), r"regParamGrid must hold at least one value \(unset it for none\), got \[\]"),
    (ElasticBudgetSVM(checkpoints=0), "checkpoints must be an integer >= 1, got 0"),
    (SlantSparsifier(referenceModelPath="/x", etaGrid=[0.5, -1.0], validationFraction=0.2),
     "etaGrid must hold positive finite numbers only, got -1.0"),
    (SlantSparsifier(referenceModelPath="/x", etaGrid=[0.5, float("inf")], validationFraction=0.2),
     "etaGrid must hold positive finite numbers only, got inf"),
    (SlantSparsifier(referenceModelPath="/x", etaGrid=[]),
     r"etaGrid must hold at least one value \(unset it for none\)"),
    (SlantSparsifier(referenceModelPath="/x", etaGrid=[0.25, 1.0]),
     "etaGrid chooses its setting by the validation error, and no rows are held out for it: set validationFraction"),
    (SpSVM(maxStageRestarts=-1), "maxStageRestarts must be an integer >= 0, got -1"),
]


def _rule_owner(cls, name):
    """The params class whose rule for ``name`` applies to ``cls`` (as ``check_params`` picks it)."""
    return next(c for c in cls.__mro__ if name in vars(c).get("RULES", {}))


def test_every_range_checked_param_has_a_bad_value_above():
    required = {(_rule_owner(cls, name), name) for cls in ESTIMATORS for c in cls.__mro__
                for name in vars(c).get("RULES", {})}
    named = [(type(estimator), message.split(" ")[0]) for estimator, message in BAD]
    covered = {(_rule_owner(cls, name), name) for cls, name in named
               if any(name in vars(c).get("RULES", {}) for c in cls.__mro__)}
    assert required - covered == set(), "add a bad value of each of these params to BAD"


SCHEMA = [
    (CSVC(featuresCol="nope"),
     r"the features column 'nope' does not exist in the DataFrame \(its columns: \['features', "),
    (CSVC(labelCol="y"), "the label column 'y' does not exist in the DataFrame"),
    (CSVC(featuresCol="label"),
     "features column 'label' has type double, not a vector or an array of numbers: assemble"),
    (CSVC(weightCol="w"), "the weight column 'w' does not exist in the DataFrame"),
    (SlantSparsifier(referenceModelPath="/no/such/model", featuresCol="nope"),
     "the features column 'nope' does not exist"),
]


@pytest.mark.spark
@pytest.mark.parametrize("estimator, message", BAD + SCHEMA, ids=[m.split(" ")[0] for _, m in BAD + SCHEMA])
def test_a_bad_param_or_column_starts_no_spark_job(spark, estimator, message):
    _, _, df = rings_frame(spark, 40, seed=2)
    df.count()
    tracker, context = spark.sparkContext.statusTracker(), spark.sparkContext
    context.setJobGroup("bad-param", "a fit with a bad param")
    try:
        with pytest.raises(ValueError, match=message):
            estimator.fit(df)
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
    assert tracker.getJobIdsForGroup("bad-param") == []


@pytest.mark.spark
def test_the_summary_names_params_as_spark_does(spark, tmp_path):
    _, _, df = rings_frame(spark, 200, seed=3)
    model = CSVC(C=2.0, gamma=0.5, maxIter=500, workingSetSize=64, numPartitions=2).fit(df)
    assert isinstance(model, CSVCModel) and model.getC() == 2.0 and model.getWorkingSetSize() == 64
    params = model.trainingSummary["params"]
    assert params == {"C": 2.0, "tol": 1e-3, "maxIter": 500, "workingSetSize": 64, "kernel": "rbf", "gamma": 0.5,
                      "degree": 3, "coef0": 0.0}
    assert model.trainingSummary["coreParams"]["C"] == 2.0  # core's own record, under its names
    path = str(tmp_path / "csvc")
    model.write().save(path)
    loaded = BSVMModel.load(path)
    assert type(loaded) is CSVCModel and loaded.getWorkingSetSize() == 64 and loaded.trainingSummary == \
        model.trainingSummary


@pytest.mark.spark
def test_max_stage_restarts_reaches_the_training_stage(spark, monkeypatch):
    _, _, df = rings_frame(spark, 60, seed=4)
    restarts = []
    run_stage = TrainingData.run_stage

    def recording(self, task, tag, restarts_given=0):
        restarts.append(restarts_given)
        return run_stage(self, task, tag, restarts_given)

    monkeypatch.setattr(TrainingData, "run_stage", recording)
    for mode in ("driver", "executor"):
        CSVC(gamma=0.5, numPartitions=2, coordinatorMode=mode, maxStageRestarts=7).fit(df)
    SpSVM(maxBasis=3, gamma=0.5, numPartitions=2).fit(df)
    assert restarts == [7, 7, STAGE_RESTARTS] and CSVC().getMaxStageRestarts() == STAGE_RESTARTS == 15


def test_every_estimator_is_in_the_base():
    assert all(issubclass(cls, _BSVMEstimator) for cls in ESTIMATORS)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda cls: cls.__name__)
def test_the_signatures_defaults_are_the_params_defaults(cls):
    """The keyword defaults that ``__init__`` shows (pyspark.ml's convention: ``keyword_only`` sets only the
    arguments given) are the params' own defaults, or None for a param without one: a default changed in one
    place and not the other (``maxStageRestarts`` is written in six signatures beside ``STAGE_RESTARTS``)
    would document a value the estimator does not use."""
    estimator = cls()
    for name, argument in inspect.signature(cls.__init__).parameters.items():
        if argument.default is inspect.Parameter.empty:
            continue
        param = estimator.getParam(name)
        expected = estimator.getOrDefault(param) if estimator.hasDefault(param) else None
        assert argument.default == expected, (name, argument.default, expected)


@pytest.mark.spark
def test_the_signature_s_none_defaults_given_explicitly_save_and_load(spark, tmp_path):
    """pyspark stores a None it is given and saves it as a null, which its readers failed to convert: the
    estimator and its model saved, but did not load."""
    for cls in ESTIMATORS:
        nones = {name: None for name, argument in inspect.signature(cls.__init__).parameters.items()
                 if argument.default is None}
        estimator = cls(**nones)
        estimator.write().save(str(tmp_path / cls.__name__))
        assert cls.load(str(tmp_path / cls.__name__)).extractParamMap() == estimator.extractParamMap()
    _, _, frame = rings_frame(spark, 120, seed=4)
    model = CSVC(gamma=0.5, numPartitions=None, weightCol=None, thresholds=None).fit(frame)
    model.write().save(str(tmp_path / "model"))
    loaded = BSVMModel.load(str(tmp_path / "model"))
    assert not loaded.isSet(loaded.getParam("weightCol")) and loaded.getGamma() == 0.5
    assert CSVC().setParams(weightCol="w").setParams(weightCol=None).isSet("weightCol") is False


@pytest.mark.spark
def test_loading_another_library_s_model_names_its_class(spark, tmp_path):
    from pyspark.ml.feature import StandardScaler

    _, _, frame = rings_frame(spark, 40, seed=4)
    StandardScaler(inputCol="features").fit(frame).write().save(str(tmp_path / "scaler"))
    with pytest.raises(ValueError, match=r"the saved model's class '.*StandardScalerModel' is not "
                                         r"a BSVMModel"):
        BSVMModel.load(str(tmp_path / "scaler"))



@pytest.mark.spark
def test_an_estimator_saved_with_a_null_param_loads_with_it_unset(spark, tmp_path):
    """What spark-bsvm wrote before a None given to a constructor left the param unset."""
    import json

    path = tmp_path / "csvc"
    CSVC(C=3.0).write().save(str(path))
    [part] = (path / "metadata").glob("part-*")
    metadata = json.loads(part.read_text())
    metadata["paramMap"].update(numPartitions=None, weightCol=None)
    part.write_text(json.dumps(metadata) + "\n")
    for checksum in (path / "metadata").glob(".*.crc"):  # Hadoop's checksum of the text before the edit
        checksum.unlink()
    loaded = CSVC.load(str(path))
    assert loaded.getC() == 3.0 and not loaded.isSet("numPartitions") and not loaded.isSet("weightCol")
