"""The shared estimator base: check params, run one fit on a SparkEngine, return the method's model.

A method's public estimator (``spark_bsvm.ml.estimators``) declares its params class, its model class
and one ``CoreCall``: the ``core`` training function and the table from its Spark params to that
function's keyword arguments.  Everything else is here, once:

    _fit:  check every param (no Spark job before that)
           -> read the saved models it needs (``_driver_inputs``)
           -> drop the rows of weight 0 (they contribute nothing; MLlib's meaning)
           -> split off the calibration rows; mark the validation rows (``validationIndicatorCol``, or
              ``validationFraction`` drawn by seed), which the tasks hold beside the training rows
           -> with a grid (``gammaGrid`` / ``regParamGrid``, ``etaGrid``): the core function becomes
              ``core.grid.fit_grid`` over the settings, all fitted in the same training stage
           -> engine.training.train(...): the data's checks, then ``_check_data`` (saved models against the
              data), then the training stage, coordinated by the driver or by one of its tasks
              (``coordinatorMode``), which runs core function(engine, **table-mapped params, kernel, inputs)
           -> the model, with the estimator's uid and params and the trained kernel; Platt calibration;
              its training summary (``model.summary``) on the DataFrame given to fit

    fitMultiple (pyspark.ml's tuners): ``_fit`` per param map, the fits sharing the rows they derive and
           the data's checks wherever their params leave those alone (``spark_bsvm.engine.shared_checks``)
"""

import functools
import itertools
from dataclasses import dataclass, field
from typing import Callable

from pyspark import keyword_only
from pyspark.ml.base import _FitMultipleIterator
from pyspark.ml.classification import ProbabilisticClassifier
from pyspark.ml.util import DefaultParamsReadable, DefaultParamsWritable
from pyspark.sql import functions as F

from core.grid import fit_grid
from core.kernels import KernelSpec
from spark_bsvm.engine.blocks import check_schema, check_validation_column
from spark_bsvm.engine.shared_checks import SharedChecks
from spark_bsvm.engine.training import train
from spark_bsvm.ml.params import GRID_PARAMS, _KernelParams, _ValidationParams, check_params
from spark_bsvm.ml.summary import setting_params

_DRAWN_VALIDATION = "__bsvm_validation"  # the column validationFraction's draw adds
_VALIDATION_PARAMS = ("validationIndicatorCol", "validationFraction", *GRID_PARAMS)  # not core's
# the params that choose which rows train, calibrate and validate (``_training_rows``)
_ROW_PARAMS = ("weightCol", "calibrationFraction", "seed", "validationIndicatorCol", "validationFraction")


@dataclass(frozen=True)
class CoreCall:
    """A ``core`` training function and the keyword argument each Spark param becomes (``{"maxIter":
    "max_rounds", ...}``).  The kernel params become ``kernel`` (a KernelSpec) when the method has them."""

    function: Callable
    arguments: dict = field(default_factory=dict)


class _BSVMEstimator(ProbabilisticClassifier, DefaultParamsReadable, DefaultParamsWritable):
    """Base of every spark-bsvm estimator (all its state is in Params): a pyspark.ml ``ProbabilisticClassifier``
    (its models give probabilities when calibrated, ``calibrationFraction`` > 0)."""

    core: CoreCall  # set by each estimator class
    model_class: type  # the method's model class

    @keyword_only
    def setParams(self, **kwargs):
        """Set params by keyword, as the constructor does; returns self."""
        return self._set(**kwargs)

    def _weight_col(self):
        return self.getWeightCol() if self.hasParam("weightCol") and self.isDefined("weightCol") \
            and self.getWeightCol() else None

    def _check(self):
        """Raise ValueError naming any bad param, its value and the allowed range.  Runs before any Spark job."""
        check_params(self)
        if isinstance(self, _KernelParams):
            self.kernel_spec()  # kernel, gamma, degree, coef0 together
        if self._class_thresholds() is not None and self.getCalibrationFraction() == 0:
            raise ValueError("thresholds chooses the class by its probability, and the model gets probabilities "
                             "only when calibrated: set calibrationFraction > 0, or use threshold (on f) instead")
        if isinstance(self, _ValidationParams):
            self._check_validation()

    def _check_validation(self):
        indicator, fraction = self.getValidationIndicatorCol(), self.getValidationFraction()
        if indicator and fraction > 0:
            raise ValueError(f"both validationIndicatorCol ({indicator!r}) and validationFraction ({fraction}) are "
                             "set: mark the validation rows one way, and unset the other")
        if indicator or fraction > 0:
            return
        if self.getSelectSupportSize() != "end":
            raise ValueError(f"selectSupportSize={self.getSelectSupportSize()!r} chooses by the validation error, "
                             "and no rows are held out for it: set validationFraction (e.g. 0.2) or "
                             "validationIndicatorCol, or keep selectSupportSize='end'")
        if self._grid_settings() is not None:
            grids = [grid for grid in GRID_PARAMS if self.hasParam(grid)]
            chooses = "chooses its" if len(grids) == 1 else "choose their"
            raise ValueError(f"{' / '.join(grids)} {chooses} setting by the validation error, and no rows are held "
                             "out for it: set validationFraction (e.g. 0.2) or validationIndicatorCol")

    def _grid_settings(self):
        """The core settings of the estimator's grid params (``GRID_PARAMS``; a grid not set tries its param's
        value alone): one dict of core keyword arguments per combination, the first grid's values outermost
        (``gammaGrid`` x ``regParamGrid``: kernel and regulariser; ``etaGrid``: eta), or None when no grid is
        set."""
        grids = {grid: param for grid, param in GRID_PARAMS.items() if self.hasParam(grid)}
        tried = {grid: self.getOrDefault(grid) for grid in grids if self.isDefined(grid)}
        if all(values is None for values in tried.values()):
            return None
        values = [tried.get(grid) or [self.getOrDefault(param)] for grid, param in grids.items()]
        return [self._core_setting(dict(zip(grids.values(), point))) for point in itertools.product(*values)]

    def _core_setting(self, values):
        """{param: value} (of ``GRID_PARAMS``' params) as the core function's keyword arguments: ``gamma`` in the
        kernel, the others by ``core.arguments``."""
        setting = {}
        for param, value in values.items():
            if param == "gamma":
                setting["kernel"] = KernelSpec(self.getKernel(), gamma=value, degree=self.getDegree(),
                                               coef0=self.getCoef0())
            else:
                setting[self.core.arguments[param]] = value
        return setting

    @staticmethod
    def _chosen_setting(expansion):
        """The params of the setting a grid fit chose, by their names (gamma: the trained kernel's number, where
        the grid tried ``gamma="scale"``)."""
        grid = expansion.metadata["grid"]
        chosen = setting_params(grid["settings"][grid["chosen"]]["setting"])
        if "gamma" in chosen:
            chosen["gamma"] = expansion.kernel.gamma
        return chosen

    def _validation_col(self, dataset):
        """(dataset, the column marking its validation rows or None): ``validationFraction`` adds the column."""
        if not isinstance(self, _ValidationParams):
            return dataset, None
        if self.getValidationIndicatorCol():
            return dataset, self.getValidationIndicatorCol()
        fraction = self.getValidationFraction()
        if fraction == 0:
            return dataset, None
        drawn = F.rand(seed=self.getOrDefault(self.seed)) < F.lit(fraction)
        return dataset.withColumn(_DRAWN_VALIDATION, drawn), _DRAWN_VALIDATION

    def _driver_inputs(self):
        """Keyword arguments of the core function read from files (saved models), on the driver, before the
        training stage starts: once it runs it holds every task slot until the fit ends."""
        return {}

    def _check_data(self, inputs, n_features, classes):
        """Checks of ``inputs`` against the data's feature count and label values; they run once the data is
        checked and before the training stage starts."""

    def _spark_values(self):
        """{Spark param name: value} of the params the core function gets (kernel params included)."""
        names = list(self.core.arguments) + (["kernel", "gamma", "degree", "coef0"]
                                             if isinstance(self, _KernelParams) else [])
        names += [name for name in _VALIDATION_PARAMS if self.hasParam(name)]
        return {name: self.getOrDefault(name) for name in names if self.isDefined(name)}

    def core_arguments(self):
        """The core function's keyword arguments from this estimator's params (by ``core.arguments``)."""
        arguments = {core: self.getOrDefault(spark) for spark, core in self.core.arguments.items()
                     if self.isDefined(spark)}
        if isinstance(self, _KernelParams):
            arguments["kernel"] = self.kernel_spec()
        return arguments

    def fitMultiple(self, dataset, paramMaps):
        """A model for each param map, as ``fit(dataset, paramMap)`` gives it, from a thread-safe iterator of
        (index, model) (pyspark.ml's tuners call this; their ``parallelism`` fits side by side).  The fits of
        the param maps that leave the data's params alone (the columns, ``_ROW_PARAMS``, ``numPartitions``)
        share one run of the data's checks (``spark_bsvm.engine.shared_checks``)."""
        estimator, shared_checks = self.copy(), SharedChecks()

        def fit_one(index):
            return estimator.copy(paramMaps[index])._fit(dataset, shared_checks)

        return _FitMultipleIterator(fit_one, len(paramMaps))

    def _training_rows(self, dataset):
        """(the rows to train on, the calibration rows or None, the column marking the validation rows or
        None) of ``dataset``, by the params of ``_ROW_PARAMS``."""
        if self._weight_col():  # null weights stay: the data's checks name them
            weight = F.col(self._weight_col())
            dataset = dataset.filter(weight.isNull() | (weight != 0))
        holdout = None
        if self.getCalibrationFraction() > 0:
            fraction = self.getCalibrationFraction()
            dataset, holdout = dataset.randomSplit([1.0 - fraction, fraction], seed=self.getOrDefault(self.seed))
        dataset, validation_col = self._validation_col(dataset)
        return dataset, holdout, validation_col

    def _fit(self, dataset, shared_checks=None):
        self._check()
        # the columns first: reading a saved model below runs Spark jobs
        check_schema(dataset, self.getFeaturesCol(), self.getLabelCol(), self._weight_col())
        if isinstance(self, _ValidationParams) and self.getValidationIndicatorCol():
            check_validation_column(dataset, self.getValidationIndicatorCol())
        inputs = self._driver_inputs()
        training = dataset
        if shared_checks is None:
            dataset, holdout, validation_col = self._training_rows(dataset)
        else:  # the same DataFrames for every param map with the same row params: their checks are shared
            rows_key = ("rows",) + tuple(self.getOrDefault(name) if self.hasParam(name) and self.isDefined(name)
                                         else None for name in _ROW_PARAMS)
            dataset, holdout, validation_col = shared_checks.once(rows_key, lambda: self._training_rows(dataset))
        function, arguments = self.core.function, dict(self.core_arguments(), **inputs)
        settings = self._grid_settings()
        if settings is not None:  # every setting in this one training stage
            arguments = dict({k: v for k, v in arguments.items() if k not in settings[0]}, function=function,
                             settings=settings)
            function = fit_grid
        expansion = train(dataset, function, arguments,
                          features_col=self.getFeaturesCol(), label_col=self.getLabelCol(),
                          weight_col=self._weight_col(), num_partitions=self.getNumPartitions(),
                          mode=self.getCoordinatorMode(), check_data=functools.partial(self._check_data, inputs),
                          description=f"spark-bsvm {type(self).__name__} fit", validation_col=validation_col,
                          stage_restarts=self.getMaxStageRestarts(), shared_checks=shared_checks)
        # the summary names params as the user set them; core's own names stay beside them
        expansion.metadata["coreParams"] = expansion.metadata.get("params", {})
        expansion.metadata["params"] = self._spark_values()
        chosen = self._chosen_setting(expansion) if settings is not None else {}
        expansion.metadata["params"].update(chosen)
        model = self.model_class(expansion)
        model._resetUid(self.uid)  # as MLlib's models and xgboost.spark's
        self._copyValues(model)
        if isinstance(model, _KernelParams):
            trained = expansion.kernel
            model._set(kernel=trained.name, gamma=trained.gamma, degree=trained.degree, coef0=trained.coef0)
        model._set(**chosen)
        if holdout is not None:
            model.calibrate(holdout)
        model._set_training_summary(training)
        return model
