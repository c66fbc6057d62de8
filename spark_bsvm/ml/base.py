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
           the data's checks wherever their params leave those alone (``spark_bsvm.engine.shared_results``),
           and one training stage where their stages would take every task slot (``_SharedStages``)
"""

import functools
import itertools
from dataclasses import dataclass, field
from typing import Callable

from pyspark import keyword_only
from pyspark.ml.base import _FitMultipleIterator
from pyspark.ml.classification import ProbabilisticClassifier
from pyspark.ml.util import DefaultParamsReadable, DefaultParamsWritable, DefaultParamsWriter
from pyspark.sql import functions as F

from core.grid import fit_grid
from core.kernels import LINEAR, KernelSpec
from spark_bsvm.engine.blocks import check_schema, check_validation_column
from spark_bsvm.engine.shared_results import SharedResults
from spark_bsvm.engine.session import executor_slots
from spark_bsvm.engine.stage import StageCancelled, check_rows, label_counts, without_zero_weights
from spark_bsvm.engine.training import resolve_mode, train, train_in_turn
from spark_bsvm.ml.model import ExistingPathWriter
from spark_bsvm.ml.params import GRID_PARAMS, _GridParams, _KernelParams, _ValidationParams, check_params
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


@dataclass(frozen=True)
class _FitPlan:
    """One fit up to its training stage: the DataFrame given to fit (``training``, the model's summary reads
    it), the rows to train on, the calibration rows (or None), the core call (function, keyword arguments),
    the grid's settings (or None), the checks of saved models against the data, and ``train``'s other keyword
    arguments but the coordinator mode."""

    training: object
    rows: object
    holdout: object
    call: tuple
    settings: object
    check_data: Callable
    options: dict


class _BSVMEstimator(ProbabilisticClassifier, DefaultParamsReadable, DefaultParamsWritable):
    """Base of every spark-bsvm estimator (all its state is in Params): a pyspark.ml ``ProbabilisticClassifier``
    (its models give probabilities when calibrated, ``calibrationFraction`` > 0)."""

    core: CoreCall  # set by each estimator class
    model_class: type  # the method's model class

    def write(self):
        """An ``MLWriter`` of the estimator's params (MLlib's metadata), whose ``overwrite()`` works under Spark
        Connect too."""
        return _EstimatorWriter(self)

    @keyword_only
    def setParams(self, **kwargs):
        """Set params by keyword, as the constructor does; returns self."""
        return self._set_given(kwargs)

    def _check(self):
        """Raise ValueError naming any bad param, its value and the allowed range.  Runs before any Spark job."""
        check_params(self)
        if isinstance(self, _KernelParams):
            kernel = self.kernel_spec()  # kernel, gamma, degree, coef0 together
            if isinstance(self, _GridParams) and self.getGammaGrid() is not None and kernel.code == LINEAR:
                raise ValueError(f"gammaGrid={self.getGammaGrid()} tries kernel gammas, and kernel='linear' has "
                                 "none: every setting would fit the same model; unset gammaGrid, or use kernel "
                                 "'rbf' or 'poly'")
        if self._class_thresholds() is not None and self.getCalibrationFraction() == 0:
            raise ValueError("thresholds chooses the class by its probability, and the model gets probabilities "
                             "only when calibrated: set calibrationFraction > 0, or use threshold (on f) instead")
        self._output_columns(probabilities=self.getCalibrationFraction() > 0)  # its model's transform would refuse them
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
        share one run of the data's checks (``spark_bsvm.engine.shared_results``), and, where their stage would
        take every task slot anyway, one training stage (``_SharedStages``)."""
        estimator = self.copy()
        stages = _SharedStages(dataset, [estimator.copy(param_map) for param_map in paramMaps])
        return _FitMultipleIterator(stages.model, len(paramMaps))

    def _training_rows(self, dataset):
        """(the rows to train on, the calibration rows or None, the column marking the validation rows or
        None) of ``dataset``, by the params of ``_ROW_PARAMS``."""
        dataset = without_zero_weights(dataset, self._weight_col())
        holdout = None
        if self.getCalibrationFraction() > 0:
            # the calibration rows skip the training stage's checks: every row is checked before the split
            classes = check_rows(dataset, self.getFeaturesCol(), self.getLabelCol(), self._weight_col()).classes
            fraction = self.getCalibrationFraction()
            dataset, holdout = dataset.randomSplit([1.0 - fraction, fraction], seed=self.getOrDefault(self.seed))
            self._check_calibration_rows(holdout, classes)
        dataset, validation_col = self._validation_col(dataset)
        return dataset, holdout, validation_col

    def _check_calibration_rows(self, holdout, classes):
        """A ValueError, before any training, unless the calibration rows ``holdout`` hold rows of both label
        values ``classes``: Platt's sigmoid on one label (or none) gives every row the same probability."""
        held = label_counts(holdout, self.getFeaturesCol(), self.getLabelCol())
        missing = [value for value in classes if not held.get(value)]
        if missing:
            raise ValueError(f"the calibration rows (calibrationFraction={self.getCalibrationFraction()}, seed "
                             f"{self.getOrDefault(self.seed)}: {sum(held.values())} row(s)) hold no row of label "
                             f"{' or '.join(repr(value) for value in missing)}, and Platt's sigmoid needs both; raise "
                             "calibrationFraction, use more rows of that label, or fit with calibrationFraction=0 "
                             "and call model.calibrate(held_out_df)")

    def _row_key(self):
        """The values of ``_ROW_PARAMS``: fits of equal keys train on the same rows."""
        return tuple(self.getOrDefault(name) if self.hasParam(name) and self.isDefined(name) else None
                     for name in _ROW_PARAMS)

    def _stage_key(self):
        """What a fit's training stage depends on besides its core call: fits of equal keys can share one."""
        return self._row_key() + (self.getFeaturesCol(), self.getLabelCol(), self.getNumPartitions(),
                                  self.getCoordinatorMode(), self.getMaxStageRestarts())

    def _plan(self, dataset, shared_results=None):
        """The fit of ``dataset`` up to its training stage (``_FitPlan``): the params checked, the saved models
        read, the rows derived (once per row key with ``shared_results``)."""
        self._check()
        resolve_mode(dataset.sparkSession, self.getCoordinatorMode())  # 'driver' under Connect: before any job
        # the columns first: reading a saved model below runs Spark jobs
        check_schema(dataset, self.getFeaturesCol(), self.getLabelCol(), self._weight_col())
        if isinstance(self, _ValidationParams) and self.getValidationIndicatorCol():
            check_validation_column(dataset, self.getValidationIndicatorCol())
        inputs = self._driver_inputs()
        if shared_results is None:
            rows, holdout, validation_col = self._training_rows(dataset)
        else:  # the same DataFrames for every param map with the same row params: their checks are shared
            rows, holdout, validation_col = shared_results.once(("rows",) + self._row_key(),
                                                               lambda: self._training_rows(dataset))
        function, arguments = self.core.function, dict(self.core_arguments(), **inputs)
        settings = self._grid_settings()
        if settings is not None:  # every setting in this one training stage
            arguments = dict({k: v for k, v in arguments.items() if k not in settings[0]}, function=function,
                             settings=settings)
            function = fit_grid
        options = dict(features_col=self.getFeaturesCol(), label_col=self.getLabelCol(),
                       weight_col=self._weight_col(), num_partitions=self.getNumPartitions(),
                       description=f"spark-bsvm {type(self).__name__} fit", validation_col=validation_col,
                       stage_restarts=self.getMaxStageRestarts())
        return _FitPlan(dataset, rows, holdout, (function, arguments), settings,
                        functools.partial(self._check_data, inputs), options)

    def _fit(self, dataset, shared_results=None):
        plan = self._plan(dataset, shared_results)
        return self._model(plan, train(plan.rows, *plan.call, mode=self.getCoordinatorMode(),
                                       check_data=plan.check_data, shared_results=shared_results, **plan.options))

    def _model(self, plan, expansion):
        """The fitted model of ``plan`` (``_plan``) from its trained ``expansion``."""
        # the summary names params as the user set them; core's own names stay beside them
        expansion.metadata["coreParams"] = expansion.metadata.get("params", {})
        expansion.metadata["params"] = self._spark_values()
        chosen = self._chosen_setting(expansion) if plan.settings is not None else {}
        expansion.metadata["params"].update(chosen)
        model = self.model_class(expansion)
        model._resetUid(self.uid)  # as MLlib's models and xgboost.spark's
        self._copyValues(model)
        if isinstance(model, _KernelParams):
            trained = expansion.kernel
            model._set(kernel=trained.name, gamma=trained.gamma, degree=trained.degree, coef0=trained.coef0)
        model._set(**chosen)
        if plan.holdout is not None:
            model._fit_platt(plan.holdout)
        model._set_training_summary(plan.training)
        return model


class _EstimatorWriter(ExistingPathWriter, DefaultParamsWriter):
    """pyspark's writer of an estimator's params, with ``ExistingPathWriter``."""


class _SharedStages:
    """The fits of one ``fitMultiple`` call.  Param maps of equal ``_stage_key`` share the data's checks; where
    the driver coordinates and their stage takes every task slot anyway (``numPartitions`` unset or all the
    slots: such fits could not run side by side), they also train in one stage, one after another
    (``engine.training.train_in_turn``), each model the one its own fit gives.  A group whose shared stage
    fails fits its param maps one by one, each failing (or not) on its own, unless the stage was cancelled
    (``stage.StageCancelled``): that ends each of them."""

    def __init__(self, dataset, estimators):
        self.dataset, self.estimators, self.shared_results = dataset, estimators, SharedResults()
        spark, groups = dataset.sparkSession, {}
        coordinated = [index for index, estimator in enumerate(estimators)
                       if resolve_mode(spark, estimator.getCoordinatorMode()) == "driver"]
        slots = executor_slots(spark) if len(coordinated) > 1 else 0  # one fit alone shares nothing
        for index in coordinated:
            if (estimators[index].getNumPartitions() or slots) >= slots:
                groups.setdefault(estimators[index]._stage_key(), []).append(index)
        self.groups = {index: tuple(group) for group in groups.values() if len(group) > 1 for index in group}

    def model(self, index):
        """The model of param map ``index``."""
        group = self.groups.get(index)
        if group is not None:
            trained = self.shared_results.once(("stage", group), lambda: self._in_one_stage(group))
            if isinstance(trained, StageCancelled):
                raise trained
            if trained is not None:
                return self.estimators[index]._model(*trained[index])
        return self.estimators[index]._fit(self.dataset, self.shared_results)

    def _in_one_stage(self, group):
        """{index: (plan, expansion)} of the param maps ``group``, trained in one stage; None when that failed (each
        then fits alone), the ``StageCancelled`` when it was cancelled (fitting each alone would start the work the
        cancel stopped all over again)."""
        try:
            plans = [self.estimators[index]._plan(self.dataset, self.shared_results) for index in group]
            expansions = train_in_turn(plans[0].rows, [plan.call for plan in plans],
                                       check_data=lambda *data: [plan.check_data(*data) for plan in plans],
                                       shared_results=self.shared_results, **plans[0].options)
        except StageCancelled as exc:
            return exc
        except Exception:  # noqa: BLE001 -- each param map then fits alone and reports its own error
            return None
        return dict(zip(group, zip(plans, expansions)))
