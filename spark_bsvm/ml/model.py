"""BSVMModel: the kernel-expansion model every spark-bsvm estimator returns (each method's model class adds
that method's params), its writer and its reader."""

import copy
import importlib
import numbers
from dataclasses import dataclass

import numpy as np
from pyspark.ml.classification import ProbabilisticClassificationModel
from pyspark.ml.functions import array_to_vector
from pyspark.ml.linalg import DenseVector, Vector
from pyspark.ml.util import DefaultParamsReader, DefaultParamsWriter, MLReadable, MLReader, MLWritable, MLWriter
from pyspark.sql import functions as F

from core.model import CALIBRATION_KEY, KernelExpansion
from core.platt import fit_platt, platt_probability
from spark_bsvm.engine.blocks import column, rows_column
from spark_bsvm.engine.session import is_connect
from spark_bsvm.engine.stage import check_rows, label_column, without_zero_weights
from spark_bsvm.ml.params import _BSVMParams, _PredictionSetters, check_params
from spark_bsvm.ml.summary import BSVMSummary, BSVMTrainingSummary


@dataclass(frozen=True)
class DecisionRule:
    """From decision values f to P(label = classes[1]) and the predicted class, in numpy (the same code
    scores one vector on the driver and Arrow batches on the executors).

    ``platt``: (A, B) of Platt's sigmoid or None; ``thresholds``: MLlib's per-class thresholds (the class
    with the largest probability / threshold wins; needs ``platt``) or None, when ``threshold`` on f decides.
    """

    threshold: float = 0.0
    thresholds: tuple = None
    platt: tuple = None

    def probability(self, f):
        """P(label = classes[1] | f), or NaN everywhere when the model is not calibrated."""
        return platt_probability(f, *self.platt) if self.platt else np.full(np.shape(f), np.nan)

    def positive(self, f):
        """True where the prediction is classes[1]."""
        if self.thresholds is None:
            return np.asarray(f) > self.threshold
        t_negative, t_positive = self.thresholds
        p = self.probability(f)
        return p * t_negative > (1.0 - p) * t_positive  # p / t+ > (1 - p) / t-, with a threshold of 0 allowed


class BSVMModel(ProbabilisticClassificationModel, _BSVMParams, _PredictionSetters, MLReadable, MLWritable):
    """A trained kernel expansion f(x) = sum_j coef_j K(s_j, x) + b: a pyspark.ml binary classifier.

    ``transform`` adds ``rawPredictionCol`` = [-f(x), f(x)] and ``predictionCol``, and, when calibrated
    (Platt), ``probabilityCol`` = [1 - p, p] with p = P(label = classes[1]); all computed in Arrow batches
    on the executors.  The prediction is classes[1] where f(x) > ``threshold`` (or, when ``thresholds``
    is set on a calibrated model, MLlib's rule: the class with the largest probability / threshold).

    Its values are the training labels': numeric labels (integers too) give a double column of the
    original values (labels 0/1 give 0.0/1.0, labels -1/+1 give -1.0/1.0), as pyspark's evaluators and
    ``OneVsRest`` expect; string labels give a string column of the original labels, boolean labels a
    boolean column (pyspark's evaluators need numbers: index such labels with ``StringIndexer`` first).
    ``predict``, ``predictRaw`` and ``predictProbability`` score one ``pyspark.ml.linalg`` Vector on the
    driver with the same rule.  The features column may be a vector or an array of numbers.

    ``expansion`` is the ``core.model.KernelExpansion`` (support vectors, coefficients, bias, kernel,
    label values, training metadata); ``summary`` (after a fit) and ``evaluate(df)`` give accuracy,
    areaUnderROC and the error against the support size, as ``LinearSVCModel``'s do.  Each estimator
    returns its own subclass (``CSVCModel``, ``SpSVMModel``, ...) carrying that method's params, with the
    estimator's uid; ``BSVMModel.load`` reads any of them.
    """

    def __init__(self, expansion=None):
        super().__init__()
        self.expansion = expansion
        self._training_summary = None

    # ---- pyspark.ml's ClassificationModel ---------------------------------------------------------

    @property
    def numClasses(self):
        """2: every spark-bsvm model is binary (``OneVsRest`` makes multiclass ones)."""
        return 2

    @property
    def numFeatures(self):
        """The number of features the model was trained on."""
        return self.expansion.n_features

    def predict(self, value):
        """The predicted label of one feature vector (a pyspark.ml Vector), in the prediction column's type."""
        positive = self._rule().positive(self._decision(value))[0]
        return self._prediction_values()[1 if positive else 0]

    def predictRaw(self, value):
        """[-f(x), f(x)] of one feature vector, as the rawPrediction column."""
        f = self._decision(value)[0]
        return DenseVector([-f, f])

    def predictProbability(self, value):
        """[1 - p, p], p = P(label = classes[1] | x), of one feature vector; needs a calibrated model."""
        if not self.platt:
            raise ValueError("the model is not calibrated: fit with calibrationFraction > 0 or call "
                             "model.calibrate(held_out_df) for probabilities")
        p = self._rule().probability(self._decision(value))[0]
        return DenseVector([1.0 - p, p])

    def setLabelCol(self, value):
        """The label column ``calibrate`` and ``evaluate`` read."""
        return self._set(labelCol=value)

    # ---- what the model holds -------------------------------------------------------------------

    @property
    def numSupportVectors(self):
        return self.expansion.n_support

    @property
    def classes(self):
        """The two label values, negative class first."""
        return list(self.expansion.classes)

    @property
    def platt(self):
        """(A, B) of P(label = classes[1]) = 1 / (1 + exp(A f + B)), or None when not calibrated."""
        values = self.expansion.metadata.get(CALIBRATION_KEY)
        return tuple(values) if values else None

    @property
    def trainingSummary(self):
        """Training metadata: method, parameters, rounds, objective, ..."""
        return dict(self.expansion.metadata)

    def copy(self, extra=None):
        """A copy with its own expansion (calibrating the copy leaves this model as it is), the same uid and
        ``extra`` params on top of these; its training summary, if this model has one, scores the copy (a
        threshold in ``extra`` changes its accuracy)."""
        that = super().copy(extra)
        that.expansion = copy.deepcopy(self.expansion)
        if self._training_summary is not None:
            that._set_training_summary(self._training_summary._dataset)
        return that

    def __getstate__(self):
        """The model as ``pickle``, ``cloudpickle`` (a UDF calling ``predict`` on the executors, a broadcast) and
        ``copy.deepcopy`` take it: without its training summary, which holds the training DataFrame, an object
        of the driver's session that cannot be pickled.  The unpickled model has no ``summary``, as a loaded
        one; ``evaluate(df)`` scores it."""
        state = dict(self.__dict__)
        state["_training_summary"] = None
        return state

    # ---- calibration and evaluation -------------------------------------------------------------

    def calibrate(self, dataset):
        """Fit Platt's sigmoid on ``dataset`` (held out from training); enables ``probabilityCol``.  Its rows are
        checked first as training rows are, and must have the model's features and label values; they count by
        ``weightCol`` where the model has one and ``dataset`` holds it (rows of weight 0 are dropped, as ``fit``
        drops them)."""
        dataset = without_zero_weights(dataset, self._weight_col(dataset))
        summary = check_rows(dataset, self.getFeaturesCol(), self.getLabelCol(), self._weight_col(dataset))
        if summary.n_features != self.numFeatures:
            raise ValueError(f"the calibration rows have {summary.n_features} features, the model "
                             f"{self.numFeatures}: calibrate on rows assembled as the training rows were")
        if set(summary.classes) != set(self.classes):
            raise ValueError(f"the calibration rows' label values {summary.classes} are not the model's "
                             f"{self.classes}")
        return self._fit_platt(dataset)

    def _fit_platt(self, dataset):
        """``calibrate`` on rows already checked (a fit's calibration rows: ``_BSVMEstimator._training_rows``)."""
        label, weight = self.getLabelCol(), self._weight_col(dataset)
        scored = dataset.select(self._scores(dataset, DecisionRule())["f"].alias("f"),
                                label_column(dataset, label).alias("label"),
                                *([column(weight).alias("weight")] if weight else []))
        rows = scored.collect()
        f = np.array([r["f"] for r in rows])
        y = np.where(np.array([r["label"] for r in rows]) == self.classes[1], 1.0, -1.0)
        weights = np.array([r["weight"] for r in rows], np.float64) if weight else None
        self.expansion.metadata[CALIBRATION_KEY] = list(fit_platt(f, y, weights))
        return self

    @property
    def hasSummary(self):
        """Whether ``summary`` exists: after ``fit``, not after ``load``."""
        return self._training_summary is not None

    @property
    def summary(self):
        """The ``BSVMTrainingSummary`` of the DataFrame given to ``fit`` (accuracy, areaUnderROC, objective
        history, error against support size), as ``LinearSVCModel.summary``; a RuntimeError after ``load``."""
        if self._training_summary is None:
            raise RuntimeError(f"no training summary available for this {type(self).__name__}: it exists "
                               "after fit, not after load; use model.evaluate(df)")
        return self._training_summary

    def evaluate(self, dataset):
        """A ``BSVMSummary`` of the model on ``dataset`` (features and label columns)."""
        return BSVMSummary(self, dataset)

    def _set_training_summary(self, dataset):
        self._training_summary = BSVMTrainingSummary(self, dataset)

    # ---- scoring --------------------------------------------------------------------------------

    def _rule(self):
        check_params(self)  # a value set on the model, before its scoring job
        thresholds = self._class_thresholds()
        if thresholds is not None and not self.platt:
            raise ValueError("thresholds needs probabilities, and the model is not calibrated: fit with "
                             "calibrationFraction > 0, call model.calibrate(df), or clear thresholds and use "
                             "threshold (on the decision value)")
        return DecisionRule(self.getThreshold(), thresholds, self.platt)

    def _decision(self, value):
        """f(x) of one feature vector, as a length-1 array."""
        if not isinstance(value, Vector):
            raise TypeError(f"expected a pyspark.ml.linalg Vector, got {type(value).__name__}: "
                            "use Vectors.dense(...) or Vectors.sparse(...)")
        if value.size != self.numFeatures:
            raise ValueError(f"the vector has {value.size} features, the model {self.numFeatures}")
        check_params(self)
        return self.expansion.decision_function(value.toArray().reshape(1, -1), self.getPredictionPrecision())

    def _prediction_values(self):
        """The two values of the prediction column: doubles for numeric labels, the labels themselves else."""
        numeric = all(isinstance(c, numbers.Real) and not isinstance(c, bool) for c in self.classes)
        return [float(c) for c in self.classes] if numeric else self.classes

    def _scores(self, dataset, rule):
        """A struct column (f, p, positive) of ``rule`` applied to the decision values of ``dataset``'s rows."""
        expansion = self.expansion.for_scoring()  # closures capture locals, never self
        precision = self.getPredictionPrecision()

        def scores(X):
            f = expansion.decision_function(X, precision)
            return {"f": f, "p": rule.probability(f), "positive": rule.positive(f)}

        return rows_column(dataset, self.getFeaturesCol(), expansion.n_features, scores,
                           "f double, p double, positive boolean")

    def _transform(self, dataset):
        rule = self._rule()
        for param, name in self._output_columns(probabilities=bool(self.platt)):
            check_new_column(dataset, param, name)
        score_col = "__bsvm_scores"
        out = dataset.withColumn(score_col, self._scores(dataset, rule))
        f, p = F.col(score_col)["f"], F.col(score_col)["p"]
        if self.platt and self.getProbabilityCol():
            out = out.withColumn(self.getProbabilityCol(), array_to_vector(F.array(1.0 - p, p)))
        if self.getRawPredictionCol():
            out = out.withColumn(self.getRawPredictionCol(), array_to_vector(F.array(-f, f)))
        if self.getPredictionCol():
            negative, positive = (F.lit(v) for v in self._prediction_values())
            out = out.withColumn(self.getPredictionCol(),
                                 F.when(F.col(score_col)["positive"], positive).otherwise(negative))
        return out.drop(score_col)

    # ---- persistence ----------------------------------------------------------------------------

    def write(self):
        return _BSVMModelWriter(self)

    @classmethod
    def read(cls):
        return _BSVMModelReader(cls)


def check_new_column(dataset, param, name):
    """A ValueError when ``dataset`` has the column ``name`` already, which the output column ``param`` would
    replace: MLlib's classifiers refuse it too."""
    if name in dataset.columns:
        raise ValueError(f"the DataFrame has a column '{name}' already: set {param} to another name, or drop that "
                         "column")


class ExistingPathWriter:
    """An ``MLWriter`` mixin for how a save meets a path that exists: ``overwrite()`` works under Spark Connect
    too (the writer's own way reaches into the JVM, which Connect hides; Connect's ML helper removes the old
    files instead), and without ``overwrite()`` the error says how to replace it, as MLlib's writers do, where
    Spark's names the mode of a DataFrame writer the user never sees."""

    def save(self, path):
        from pyspark.errors import AnalysisException

        try:
            super().save(path)
        except AnalysisException as exc:
            if self.shouldOverwrite or exc.getCondition() != "PATH_ALREADY_EXISTS":
                raise
            raise FileExistsError(f"{path} holds a saved model or estimator already: replace it with "
                                  "write().overwrite().save(path), or give a new path") from exc

    def _handleOverwrite(self, path):
        if is_connect(self.sparkSession):
            from pyspark.ml.connect.readwrite import RemoteMLWriter

            RemoteMLWriter.handleOverwrite(path, True)
        else:
            super()._handleOverwrite(path)


class _BSVMModelWriter(ExistingPathWriter, MLWriter):
    """Params as MLlib metadata (JSON) and the expansion as one binary Parquet row beside it."""

    def __init__(self, instance):
        super().__init__()
        self.instance = instance

    def saveImpl(self, path):
        DefaultParamsWriter.saveMetadata(self.instance, path, self.sparkSession)
        spark = self.sparkSession
        payload = bytearray(self.instance.expansion.to_bytes())
        spark.createDataFrame([(payload,)], "model binary").write.parquet(f"{path}/data")


class _BSVMModelReader(MLReader):
    def __init__(self, cls):
        super().__init__()
        self.cls = cls

    def load(self, path):
        metadata = DefaultParamsReader.loadMetadata(path, self.sparkSession)
        cls = _saved_class(metadata["class"], self.cls)  # before its data, which another model's may not be
        payload = self.sparkSession.read.parquet(f"{path}/data").first()["model"]
        model = cls(KernelExpansion.from_bytes(bytes(payload)))
        DefaultParamsReader.getAndSetParams(model, metadata)  # a param saved as null stays unset (``set``)
        model._resetUid(metadata["uid"])
        return model


def _saved_class(name, expected):
    """The model class a saved model names (``module.Class``); a ValueError unless it is ``expected`` or a
    subclass of it."""
    module, _, class_name = name.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), class_name)
    except (ImportError, AttributeError, ValueError):
        cls = None
    if not (isinstance(cls, type) and issubclass(cls, expected)):
        raise ValueError(f"the saved model's class {name!r} is not a {expected.__name__}: load it with its "
                         "own class, or save it again with this version of spark-bsvm")
    return cls
