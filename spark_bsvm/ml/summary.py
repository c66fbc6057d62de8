"""What a BSVMModel does on a DataFrame, in the style of pyspark's ``LinearSVCSummary``: accuracy,
areaUnderROC and areaUnderPR, and the error at each support size of a recorded path (SpSVM-2, the
slant sparsifier); the training summary adds the objective history.

Metrics are computed when first read (each is one Spark job) and kept.  The label values need not be
0/1: rows count as positive where the label equals the model's ``classes[1]``.
"""

import functools

import numpy as np
import pandas as pd
from pyspark.ml.evaluation import BinaryClassificationEvaluator
from pyspark.sql import functions as F

from core.support_path import path_mistakes, recorded_path
from spark_bsvm.engine.blocks import check_schema, column, features_as_array

_POSITIVE = "__bsvm_is_positive"  # 1.0 where the label is classes[1], else 0.0
_WEIGHT = "__bsvm_weight"  # the weight column, as the binary metrics read it
_PARAM_NAMES = {"lam": "regParam"}  # the core arguments a grid varies whose params are named otherwise


class BSVMSummary:
    """Binary classification results of a ``BSVMModel`` on one DataFrame (``model.evaluate(df)``).

    Rows are weighted by the model's ``weightCol`` when it is set and in the DataFrame.
    """

    def __init__(self, model, dataset):
        weight_col = model._weight_col(dataset)
        check_schema(dataset, model.getFeaturesCol(), model.getLabelCol(), weight_col)
        self._model = model
        self._dataset = dataset
        self.labelCol = model.getLabelCol()
        self.predictionCol = model.getPredictionCol()
        self.scoreCol = model.getRawPredictionCol()
        self.weightCol = weight_col

    @functools.cached_property
    def predictions(self):
        """The DataFrame ``model.transform`` gave."""
        return self._model.transform(self._dataset)

    @property
    def labels(self):
        """The two label values, negative class first."""
        return self._model.classes

    def _weight(self):
        return column(self.weightCol).cast("double") if self.weightCol else F.lit(1.0)

    @functools.cached_property
    def accuracy(self):
        """The (weighted) share of rows whose prediction equals the label."""
        right = (column(self.predictionCol) == column(self.labelCol)).cast("double")
        row = self.predictions.agg(F.sum(self._weight() * right).alias("right"),
                                   F.sum(self._weight()).alias("total")).first()
        return float(row["right"] / row["total"]) if row["total"] else float("nan")

    def _binary_metric(self, name):
        positive = (column(self.labelCol) == F.lit(self.labels[1])).cast("double")
        evaluator = BinaryClassificationEvaluator(rawPredictionCol=self.scoreCol, labelCol=_POSITIVE,
                                                  metricName=name)
        scored = self.predictions.withColumn(_POSITIVE, positive)
        if self.weightCol:  # under a name of ours: MLlib's evaluator reads "a.b" as a struct's field
            evaluator.setWeightCol(_WEIGHT)
            scored = scored.withColumn(_WEIGHT, self._weight())
        return evaluator.evaluate(scored)

    @functools.cached_property
    def areaUnderROC(self):
        """The area under the ROC curve of the decision values f(x)."""
        return self._binary_metric("areaUnderROC")

    @functools.cached_property
    def areaUnderPR(self):
        """The area under the precision-recall curve of the decision values f(x)."""
        return self._binary_metric("areaUnderPR")

    @functools.cached_property
    def errorBySupportSize(self):
        """[(support size, error)] of the models the fit passed through (``core.support_path``), on this
        DataFrame: SpSVM-2 at each basis size, the slant sparsifier along its steps (at most 50 sizes,
        the model's own last).  Each model predicts by threshold on f(x): the smaller models have no
        calibration of their own, so thresholds (on probabilities) play no part, and with thresholds set
        the last error may differ from 1 - accuracy.  Empty for the methods that record no path."""
        model = self._model
        expansion = model.expansion
        path = recorded_path(expansion)
        if path is None:
            return []
        threshold, positive_label = model.getThreshold(), self.labels[1]
        rows = self._dataset.select(features_as_array(self._dataset, model.getFeaturesCol()).alias("x"),
                                    (column(self.labelCol) == F.lit(positive_label)).alias("positive"),
                                    self._weight().alias("w"))

        def count(batches):
            for batch in batches:
                X = np.stack(batch["x"].to_numpy()) if len(batch) else np.zeros((0, expansion.n_features))
                y = np.where(batch["positive"].to_numpy(dtype=bool), 1.0, -1.0)
                w = batch["w"].to_numpy(dtype=np.float64)
                mistakes = path_mistakes(expansion, path, X, y, w, threshold)
                yield pd.DataFrame({"mistakes": [mistakes.tolist()], "weight": [float(w.sum())]})

        parts = rows.mapInPandas(count, "mistakes array<double>, weight double").collect()
        total = sum(p["weight"] for p in parts)
        if not total:
            return []
        mistakes = np.sum([p["mistakes"] for p in parts], axis=0)
        return [(int(s), float(m / total)) for s, m in zip(path.sizes, mistakes)]


class BSVMTrainingSummary(BSVMSummary):
    """The summary of the DataFrame a model was fitted on (``model.summary``), with the fit's record."""

    @property
    def objectiveHistory(self):
        """The objective the method minimised, as the fit recorded it: SpSVM-2's at each basis size; the
        final one for the dual methods (C-SVC, budget SVMs: the dual's) and the slant sparsifier; empty for
        the elastic budget and L0-norm SVMs, which record none."""
        metadata = self._model.expansion.metadata
        path = metadata.get("path")
        if isinstance(path, dict) and path.get("objective"):
            return [float(v) for v in path["objective"]]
        return [float(metadata["objective"])] if "objective" in metadata else []

    @property
    def validationErrorBySupportSize(self):
        """[(support size, validation error)] along the path the fit recorded on its validation rows
        (``validationFraction`` or ``validationIndicatorCol``): SpSVM-2 at each basis size, the slant
        sparsifier at each support size, the elastic budget SVM at each checkpoint.  Recorded during the
        fit, so no Spark job; empty without validation rows.  ``trainingSummary['validation']`` has the
        whole record (losses, the size kept)."""
        return validation_path(self._model.expansion.metadata)

    @property
    def validationGrid(self):
        """One row per setting of a grid fit, in the order fitted: the values it tries (``gamma`` and
        ``regParam`` of ``gammaGrid`` / ``regParamGrid``, ``eta`` of ``etaGrid``), its validation path
        (``sizes``, ``error``), the size it kept (``keptSize``) with that size's error (``keptError``), its
        ``seconds`` and whether it is the model's (``chosen``); empty without a grid."""
        return grid_table(self._model.expansion.metadata)


def validation_path(metadata):
    """[(support size, validation error)] of a model's training ``metadata`` (``core.selection``); [] when the
    fit had no validation rows."""
    record = metadata.get("validation")
    return [] if not record else [(int(s), float(e)) for s, e in zip(record["sizes"], record["error"])]


def grid_table(metadata):
    """The rows of ``BSVMTrainingSummary.validationGrid`` from a model's training ``metadata``; [] without a
    grid."""
    grid = metadata.get("grid")
    if not grid:
        return []
    return [dict(setting_params(row["setting"]), sizes=row["sizes"], error=row["error"], keptSize=row["kept_size"],
                 keptError=row["kept_error"], seconds=row["seconds"], chosen=k == grid["chosen"])
            for k, row in enumerate(grid["settings"])]


def setting_params(setting):
    """The values a grid's ``setting`` (core keyword arguments, as ``core.grid`` records them) varies, by the
    names of the estimators' params: the kernel's ``gamma``, ``regParam`` (lam), ``eta``."""
    params = {}
    for name, value in setting.items():
        if name == "kernel":
            params["gamma"] = value["gamma"]
        else:
            params[_PARAM_NAMES.get(name, name)] = value
    return params
