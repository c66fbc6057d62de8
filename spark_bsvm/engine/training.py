"""One fit on Spark: a core training function run against the rows of a DataFrame, coordinated by the
driver (``SparkEngine``) or by one of the stage's own tasks (``spark_bsvm.engine.hosted``).

Modes (the estimators' ``coordinatorMode``):
    driver    the solver runs in this process; tasks connect to it.  A lost task is rebuilt from the
              driver's model and the fit resumes.  Classic sessions only.
    executor  the solver runs in partition 0's task; the model comes back as the stage's output.  A
              lost task restarts the fit.  The way under Spark Connect, whose client executors may not
              reach.
    auto      executor for Spark Connect sessions, driver for classic ones.
Both give the same model.
"""

import logging
import secrets

from core.model import KernelExpansion
from core.separation import warn_if_one_class
from spark_bsvm.engine.coordinator import SparkEngine, fit_tag
from spark_bsvm.engine.session import cancel_jobs, is_connect
from spark_bsvm.engine.stage import STAGE_RESTARTS, HostedFit, TrainingData, failed_stage, raise_task_errors
from spark_bsvm.engine.task import make_task

log = logging.getLogger("spark_bsvm")

MODES = ("auto", "driver", "executor")


def resolve_mode(spark, mode):
    """``mode`` with ``auto`` decided for ``spark``'s kind of session; a ValueError for ``driver`` under Spark
    Connect, whose client has no SparkContext for the driver's coordinator to follow the training stage by."""
    if mode not in MODES:
        raise ValueError(f"coordinatorMode must be one of {MODES}, got {mode!r}")
    if mode == "driver" and is_connect(spark):
        raise ValueError("coordinatorMode='driver' runs the solver beside a classic session's SparkContext, which "
                         "a Spark Connect client does not have: use coordinatorMode='executor' or 'auto' (the "
                         "solver then runs in one of the training tasks)")
    if mode == "auto":
        return "executor" if is_connect(spark) else "driver"
    return mode


def train(df, function, arguments, *, features_col="features", label_col="label", weight_col=None,
          num_partitions=None, mode="auto", check_data=None, description="spark-bsvm fit", fault_injection=None,
          stage_restarts=STAGE_RESTARTS, validation_col=None, shared_results=None):
    """``function(engine, **arguments)`` (a ``core`` training function) on the rows of ``df``; its model.
    A model that predicts one class for every training row is logged as a warning
    (``core.separation.warn_if_one_class``, in either mode).

    The keyword arguments up to ``check_data``, ``validation_col`` and ``shared_results`` are
    ``stage.TrainingData``'s; ``description`` names the fit in the Spark UI; ``stage_restarts`` bounds how
    many times the training stage starts again after Spark aborted it (driver mode: the fit resumes;
    executor mode: it starts over); ``fault_injection`` is ``stage.TaskSpec``'s test hook (in the executor
    mode it kills the Python worker of the coordinating task, or with ``"memory"`` raises a MemoryError there)."""
    if resolve_mode(df.sparkSession, mode) == "driver":
        (model,) = train_in_turn(df, [(function, arguments)], features_col=features_col, label_col=label_col,
                                 weight_col=weight_col, num_partitions=num_partitions, check_data=check_data,
                                 description=description, fault_injection=fault_injection,
                                 stage_restarts=stage_restarts, validation_col=validation_col,
                                 shared_results=shared_results)
        return model
    data = TrainingData(df, features_col, label_col, weight_col, num_partitions, check_data, description,
                        validation_col, shared_results)
    spec = data.task_spec(secrets.token_hex(32), fit=HostedFit(function, arguments), fault_injection=fault_injection)
    tag = fit_tag()
    try:
        # the solver's progress goes to the executor's log
        rows = data.run_stage(lambda input_schema: make_task(spec, input_schema), tag, stage_restarts)
    except Exception as exc:  # Spark's message, with the task's exception in a Java trace
        raise failed_stage(exc) from exc
    except BaseException:
        # a KeyboardInterrupt (Ctrl-C, a notebook's interrupt) while this thread waits on the stage's job: pyspark's
        # SIGINT handler cannot cancel it from inside that call, and the stage would go on holding every slot it
        # took until its fit ended
        cancel_jobs(df.sparkSession, tag)
        raise
    raise_task_errors(rows)
    (hosted,) = [row for row in rows if row["model"] is not None]
    for message in hosted["warnings"]:
        log.warning("%s", message)
    return KernelExpansion.from_bytes(bytes(hosted["model"]))


def train_in_turn(df, calls, *, features_col="features", label_col="label", weight_col=None, num_partitions=None,
                  check_data=None, description="spark-bsvm fit", fault_injection=None,
                  stage_restarts=STAGE_RESTARTS, validation_col=None, shared_results=None):
    """The models of ``calls``, [(function, arguments), ...], fitted one after another in one training stage
    coordinated by the driver: each the model ``train`` gives alone, since a core function's first round
    builds the partitions' state afresh (as ``core.grid.fit_grid``'s settings do).  One stage's start and
    end for all of them: the rows reach the tasks once.  The keyword arguments are ``train``'s."""
    with SparkEngine(df, features_col, label_col, weight_col, num_partitions, check_data,
                     fault_injection=fault_injection, description=description, stage_restarts=stage_restarts,
                     validation_col=validation_col, shared_results=shared_results) as engine:
        models = []
        for function, arguments in calls:
            models.append(function(engine, **arguments))
            warn_if_one_class(engine, models[-1])
        return models
