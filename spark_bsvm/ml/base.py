"""The shared estimator base: validate params, run one fit on a SparkEngine, return a BSVMModel.

A method's public estimator (``spark_bsvm.estimators``) only declares its
params and maps them to its ``core`` training function in ``_train``.
"""

import numpy as np
from pyspark import keyword_only
from pyspark.ml import Estimator
from pyspark.ml.util import DefaultParamsReadable, DefaultParamsWritable

from core.kernels import KernelSpec
from spark_bsvm.engine import SparkEngine
from spark_bsvm.ml.model import BSVMModel


class _BSVMEstimator(Estimator, DefaultParamsReadable, DefaultParamsWritable):
    """Base of every spark-bsvm estimator (all its state is in Params)."""

    @keyword_only
    def setParams(self, **kwargs):
        """Set params by keyword, as the constructor does; returns self."""
        return self._set(**kwargs)

    def _kernel_spec(self):
        return KernelSpec(self.getKernel(), gamma=self.getGamma(), degree=self.getDegree(),
                          coef0=self.getCoef0())

    def _validate_params(self):
        """Raise ValueError naming the param, its value and the allowed range."""
        self._kernel_spec()  # validates kernel, gamma, degree, coef0
        for name, low in (("tol", 0.0), ("maxIter", -1)):
            value = self.getOrDefault(name)
            if not value > low:
                raise ValueError(f"{name} must be > {low}, got {value}")
        fraction = self.getOrDefault(self.calibrationFraction)
        if not 0.0 <= fraction < 0.5:
            raise ValueError(f"calibrationFraction must be in [0, 0.5), got {fraction}")
        if self.isDefined(self.numPartitions) and self.getOrDefault(self.numPartitions) < 1:
            raise ValueError(f"numPartitions must be >= 1, got {self.getOrDefault(self.numPartitions)}")

    def _driver_inputs(self):
        """Keyword arguments of ``_train`` read from files (saved models), on the driver, before the
        training stage starts: once it runs it holds every task slot until the fit ends."""
        return {}

    def _train(self, engine, kernel, **inputs):
        raise NotImplementedError

    def _fit(self, dataset):
        self._validate_params()
        inputs = self._driver_inputs()
        kernel = self._kernel_spec()
        fraction = self.getOrDefault(self.calibrationFraction)
        holdout = None
        if fraction > 0:
            dataset, holdout = dataset.randomSplit([1.0 - fraction, fraction], seed=self.getOrDefault(self.seed))
        num_partitions = self.getOrDefault(self.numPartitions) if self.isDefined(self.numPartitions) else None
        weight_col = self.getWeightCol() if self.isDefined(self.weightCol) and self.getWeightCol() else None
        with SparkEngine(dataset, self.getFeaturesCol(), self.getLabelCol(), weight_col,
                         num_partitions) as engine:
            expansion = self._train(engine, kernel, **inputs)
        model = BSVMModel(expansion)
        self._copyValues(model)
        trained = expansion.kernel  # the slant sparsifier keeps its reference model's kernel
        model._set(kernel=trained.name, gamma=trained.gamma, degree=trained.degree, coef0=trained.coef0)
        if holdout is not None:
            model.calibrate(holdout)
        return model


def positive(name, value):
    """``value`` if it is a positive finite number, else a ValueError naming the param."""
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value}")
    return value
