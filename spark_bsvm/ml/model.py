"""BSVMModel: the kernel-expansion model every spark-bsvm estimator returns (each method's model class adds
that method's params), its writer and its reader."""

import importlib

import numpy as np
import pandas as pd
from pyspark.ml import Model
from pyspark.ml.functions import array_to_vector, vector_to_array
from pyspark.ml.util import DefaultParamsReader, DefaultParamsWriter, MLReadable, MLReader, MLWritable, MLWriter
from pyspark.sql import functions as F

from core.model import KernelExpansion
from core.platt import fit_platt
from spark_bsvm.engine.session import is_connect
from spark_bsvm.ml.params import _BSVMParams, _ColumnSetters


class BSVMModel(Model, _BSVMParams, _ColumnSetters, MLReadable, MLWritable):
    """A trained kernel expansion f(x) = sum_j coef_j K(s_j, x) + b.

    ``transform`` adds ``rawPredictionCol`` = [-f(x), f(x)] and
    ``predictionCol`` = the original label value of sign(f(x) - threshold),
    and, when calibrated (Platt), ``probabilityCol`` = [1 - p, p]; all
    computed in Arrow batches on the executors.  ``expansion`` is the
    ``core.model.KernelExpansion`` (support vectors, coefficients, bias,
    kernel, label values, training metadata).  Each estimator returns its own subclass
    (``CSVCModel``, ``SpSVMModel``, ...) carrying that method's params; ``BSVMModel.load``
    reads any of them.
    """

    def __init__(self, expansion=None):
        super().__init__()
        self.expansion = expansion

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
        values = self.expansion.metadata.get("platt")
        return tuple(values) if values else None

    def calibrate(self, dataset):
        """Fit Platt's sigmoid on ``dataset`` (held out from training); enables ``probabilityCol``."""
        scored = self.transform(dataset.select(self.getFeaturesCol(), self.getLabelCol()))
        rows = scored.select(F.element_at(vector_to_array(self.getRawPredictionCol()), 2).alias("f"),
                             self.getLabelCol()).collect()
        if not rows:
            raise ValueError("the calibration part is empty: raise calibrationFraction or use more data")
        f = np.array([r["f"] for r in rows])
        y = np.where(np.array([r[self.getLabelCol()] for r in rows]) == self.classes[1], 1.0, -1.0)
        self.expansion.metadata["platt"] = list(fit_platt(f, y))
        return self

    @property
    def trainingSummary(self):
        """Training metadata: method, parameters, rounds, objective, ..."""
        return dict(self.expansion.metadata)

    def _transform(self, dataset):
        expansion = self.expansion  # closures capture locals, never self
        n_features = expansion.n_features

        @F.pandas_udf("double")
        def decision(arrays: pd.Series) -> pd.Series:
            X = np.stack(arrays.to_numpy()) if len(arrays) else np.zeros((0, n_features))
            return pd.Series(expansion.decision_function(X))

        f_col = "__bsvm_decision"
        out = dataset.withColumn(f_col, decision(vector_to_array(F.col(self.getFeaturesCol()))))
        if self.platt and self.getProbabilityCol():
            A, B = self.platt
            p = 1.0 / (1.0 + F.exp(A * F.col(f_col) + B))  # Platt: P(label = classes[1] | f)
            out = out.withColumn(self.getProbabilityCol(), array_to_vector(F.array(1.0 - p, p)))
        if self.getRawPredictionCol():
            out = out.withColumn(self.getRawPredictionCol(),
                                 array_to_vector(F.array(-F.col(f_col), F.col(f_col))))
        if self.getPredictionCol():
            negative, positive = (F.lit(v) for v in self.classes)
            out = out.withColumn(self.getPredictionCol(),
                                 F.when(F.col(f_col) > self.getThreshold(), positive).otherwise(negative))
        return out.drop(f_col)

    def predict(self, features):
        """The prediction for one feature vector (a pyspark.ml Vector or array)."""
        values = features.toArray() if hasattr(features, "toArray") else np.asarray(features, np.float64)
        f = self.expansion.decision_function(values.reshape(1, -1))[0]
        return self.classes[1] if f > self.getThreshold() else self.classes[0]

    def write(self):
        return _BSVMModelWriter(self)

    @classmethod
    def read(cls):
        return _BSVMModelReader(cls)


class _BSVMModelWriter(MLWriter):
    """Params as MLlib metadata (JSON) and the expansion as one binary Parquet row beside it."""

    def __init__(self, instance):
        super().__init__()
        self.instance = instance

    def _handleOverwrite(self, path):
        if is_connect(self.sparkSession):  # MLWriter's own way reaches into the JVM, which Connect hides
            from pyspark.ml.connect.readwrite import RemoteMLWriter

            RemoteMLWriter.handleOverwrite(path, True)
        else:
            super()._handleOverwrite(path)

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
        payload = self.sparkSession.read.parquet(f"{path}/data").first()["model"]
        model = _saved_class(metadata["class"], self.cls)(KernelExpansion.from_bytes(bytes(payload)))
        DefaultParamsReader.getAndSetParams(model, metadata)
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
