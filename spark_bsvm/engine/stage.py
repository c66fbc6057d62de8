"""The training data of one fit and the barrier stage over it, whichever side coordinates the rounds.

``TrainingData`` runs every check that needs the data, in a Spark job before the stage takes the task
slots or, on the driver coordinator's fits, in the stage's tasks themselves (``TrainingData.judge``), and
holds the DataFrame the stage reads, one partition per task (``run_barrier_stage``: how the rows reach the
tasks).  Every task returns one row of ``OUTPUT_SCHEMA``: what it served, the error that ended the fit (bad
rows, a coordinator it could not reach), and, from the task that coordinated a fit on the executors, the
model and the solver's warnings.
"""

import functools
import re
import socket
import weakref
from dataclasses import dataclass
from typing import Callable, Optional

from core.progress import progress_logger
from spark_bsvm.engine.blocks import (check_schema, check_training_data, check_validation_column, column,
                                     declared_features, judged_groups)
from spark_bsvm.engine.session import (barrier_tasks, is_connect, planned_arrow_batches, row_sized_arrow_batches,
                                      sql_python_workers, tagged_jobs)

OUTPUT_SCHEMA = "served long, error_type string, error string, model binary, warnings array<string>"
UNREACHABLE = "Unreachable"  # error_type of a task that could not connect to the coordinator
MISSING = "Missing"  # error_type of a task whose executor cannot import spark-bsvm or what it needs
STAGE_ABORTED = "Job aborted due to stage failure"  # Spark's message when a stage failed too often
# default of how many times a fit starts its training stage again after a task was lost: the 16 attempts a fit
# had when Spark also retried the stage (its 4 consecutive attempts, 4 times)
STAGE_RESTARTS = 15


def output_schema():
    """``OUTPUT_SCHEMA`` in Arrow."""
    import pyarrow as pa

    return pa.schema([("served", pa.int64()), ("error_type", pa.string()), ("error", pa.string()),
                      ("model", pa.binary()), ("warnings", pa.list_(pa.string()))])


def output_row(served=0, error_type=None, error=None, model=None, warnings=()):
    """A task's output row (``OUTPUT_SCHEMA``) as a dict."""
    return {"served": served, "error_type": error_type, "error": error, "model": model, "warnings": list(warnings)}


def output_batch(row):
    """A task's output row (``output_row``) as an Arrow batch of ``OUTPUT_SCHEMA``."""
    import pyarrow as pa

    return pa.RecordBatch.from_pylist([row], schema=output_schema())


def row_bytes(n_features):
    """An upper bound of a training row's bytes in the stage's Arrow batches: its ``n_features`` features as
    (index, value) pairs, the most a vector's Arrow struct holds, with room for the label, the weight, the
    validation mark and the offsets."""
    return 12 * n_features + 64


def run_barrier_stage(frame, make_task, max_row_bytes, schema=OUTPUT_SCHEMA):
    """The output rows of one barrier stage over ``frame``'s partitions, a task each, which runs the function
    ``make_task(input_schema)`` over its partition (``task.make_task``; ``max_row_bytes``: a bound of a row's
    bytes in Arrow, ``row_bytes`` of its features, or None when unknown), each task's output rows of the DDL
    ``schema``.  Two ways for the rows to reach the tasks, as the same Arrow record batches
    (``record_batches``):

    - Where ``session.planned_arrow_batches`` allows (classic sessions, batches of a bounded size): the
      partitions written as Arrow batches by ``frame``'s own physical plan (``Dataset.toArrowBatchRdd``, a JVM
      method public in the bytecode, Spark's conversion behind ``toPandas``), handed to the tasks serialized by
      a barrier RDD (``input_schema``: their Arrow schema, serialized; the tasks' output rows come back as
      dicts).  The stage has no SQL plan of its own to analyse and plan, and its job no SQL execution around
      it: a bare stage that reads ijcnn1's rows from a cached frame took 150 ms against 227 ms with
      ``mapInArrow`` (``bench/HISTORY.md``).  The plan read is ``plannable(frame)``'s (a cached frame's or a
      frame of the library's own, planned once per DataFrame object: ``fixed_partitions`` may have planned
      it already).  The tasks run in the Python workers of the session's SQL Python jobs
      (``session.sql_python_workers``).
    - Otherwise (Spark Connect, which has no RDDs; rows of unknown or large size, which only Spark's sizing of
      the batches by their bytes keeps bounded; columns pyspark cannot describe in Arrow, ``_arrow_schema``):
      ``mapInArrow(..., barrier=True)`` with ``input_schema`` None, its output rows as Arrow batches of
      ``schema``, the input batches sized by their row count where that is safe
      (``session.row_sized_arrow_batches``).
    """
    spark = frame.sparkSession
    input_schema = _arrow_schema(frame) if planned_arrow_batches(spark, max_row_bytes) else None
    if input_schema is None:
        with row_sized_arrow_batches(spark, max_row_bytes):
            return frame.mapInArrow(make_task(None), schema, barrier=True).collect()
    from pyspark.rdd import RDD
    from pyspark.serializers import NoOpSerializer

    batches = RDD(plannable(frame)._jdf.toArrowBatchRdd().toJavaRDD(), spark.sparkContext, NoOpSerializer())
    stage = batches.barrier().mapPartitions(make_task(input_schema))
    with sql_python_workers(spark):
        stage.id()  # defines the RDD, its Python function with the environment of the SQL jobs' workers
    return stage.collect()


def _arrow_schema(frame):
    """``frame``'s Arrow schema, serialized, or None where pyspark cannot describe a column in Arrow (vectors,
    with a pyspark whose Arrow conversion does not know user-defined types: ``run_barrier_stage`` then takes the
    ``mapInArrow`` way)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    try:
        return to_arrow_schema(frame.schema).serialize().to_pybytes()
    except TypeError:  # pyspark's PySparkTypeError for an unsupported type
        return None


def record_batches(rows, input_schema):
    """A task's rows of ``run_barrier_stage`` as Arrow record batches: ``rows`` themselves (``mapInArrow``'s,
    ``input_schema`` None), or the serialized batches ``rows`` read with the serialized schema
    ``input_schema``, where they lie."""
    if input_schema is None:
        return rows
    import pyarrow as pa

    schema = pa.ipc.read_schema(pa.py_buffer(input_schema))
    return (pa.ipc.read_record_batch(pa.py_buffer(message), schema) for message in rows)


# in the error of a job whose barrier stage reads partitions that another RDD of that stage merged (a
# coalesce, say): Spark refuses such a job when it is submitted, before any task starts
MERGED_PARTITIONS = "BarrierJobUnsupportedRDDChainException"


SKEW_TOLERANCE = 1.1  # a partition may hold up to 10% more rows than its share before the rows are dealt again


def balanced(prepared, summary, n_partitions):
    """``prepared`` as ``n_partitions`` non-empty partitions of nearly equal size: as it is when it already is
    (``summary``: the checks' ``blocks.DataSummary``, whose ``partition_rows`` are {partition id: rows} of its
    non-empty partitions and ``n_partitions`` the partitions read, empty ones included, where known), else
    ``dealt_again``.

    Why deal again: every round waits for the slowest task, whose work grows with its rows, so a partition
    holding k times its share makes every round of the fit about k times slower (and an empty one has
    nothing to train on), while the shuffle costs about one pass over the data, against the hundreds to
    thousands of passes a fit's rounds make.  So more than ``SKEW_TOLERANCE`` times the share is worth a
    shuffle; data that is already even (one file per slot, say) is read as it is.  The counts come from
    the checks' pass over the data: deciding costs no extra pass.  Empty partitions after the last row, which
    no row names, are counted by a job of checks (``check_training_data``: under Spark Connect the server's
    plan, on a classic session one whose adaptive shuffles the job made as the stage will): read as they are,
    they would be tasks beyond the slots the fit holds, which a barrier stage waits for (Spark checks its
    slots again every 15 s, for 10 minutes, before it fails the job).

    Not seen here: empty partitions after the last row where no job counted the partitions (the tasks'
    own checks), which the callers find where the plan fixes its partitions (``fixed_partitions``); and
    partitions that the stage's own plan merges from others (a ``coalesce``), which Spark refuses under a
    barrier stage even at the wanted count: ``TrainingData.run_stage`` deals those again when Spark refuses
    the stage.
    """
    partition_rows = summary.partition_rows
    share = -(-sum(partition_rows.values()) // n_partitions)
    even = max(partition_rows.values()) <= SKEW_TOLERANCE * share
    if sorted(partition_rows) == list(range(n_partitions)) and even and summary.n_partitions in (None, n_partitions):
        return prepared
    return dealt_again(prepared, partition_rows, n_partitions)


def dealt_again(prepared, partition_rows, n_partitions):
    """``prepared``'s rows (``partition_rows``: {partition id: rows} of its non-empty partitions, or None when
    the rows are not counted yet: a round robin then, and the tasks' checks find any partition it leaves
    empty) dealt into ``n_partitions`` non-empty partitions of nearly equal size, round robin (a shuffle).

    Why it works: Spark's round robin (sorted first, so a restarted stage gets the same rows) deals each
    input partition's rows to consecutive output partitions from a start seeded by the input partition,
    so the output sizes differ by at most the number of input partitions, and every output partition gets
    a row once one input partition holds ``n_partitions`` rows.  Data too small for that (fewer rows in
    every input partition than there are tasks) is split by ranges of a row id instead: Spark's range
    partitioner samples ~100 rows a task (``spark.sql.execution.rangeExchange.sampleSizePerPartition``:
    all of such small data; one small job) and cuts the ids into ranges of about n / ``n_partitions``
    rows (a ``coalesce(1)`` before the round robin would not do: Spark's optimizer drops it).

    The round robin deals ``prepared``'s own partitions, those counted: Spark's optimizer merges a round robin
    straight over another one (the caller's ``repartition(k)``, or an earlier deal of ours) into it, which
    deals the rows below it again just as that one did (two rows that one sent to the same partition, again
    to the same partition: an empty task); a filter that it can neither drop nor push down (always true, but
    not deterministic to the optimizer) keeps the two apart.
    """
    from pyspark.sql import functions as F

    if partition_rows is not None and max(partition_rows.values()) < n_partitions:
        row = "_spark_bsvm_row"
        numbered = prepared.withColumn(row, F.monotonically_increasing_id())
        return _owned(numbered.repartitionByRange(n_partitions, row).drop(row))
    return _owned(prepared.filter(F.spark_partition_id() >= 0).repartition(n_partitions))


@dataclass(frozen=True)
class HostedFit:
    """The core training function and its keyword arguments, run by the task that coordinates a fit on
    the executors (they travel in the task's closure: a module-level function, arrays and numbers)."""

    function: Callable
    arguments: dict


@dataclass(frozen=True)
class TaskSpec:
    """What every task of the stage needs: plain values only (it travels in the task's closure).

    ``classes`` None: the tasks check their rows first (``TrainingData.checks_in_stage``): each sends the
    checks' groups of its rows (``wire.GROUPS``: ``blocks.partition_groups``) and builds its block from
    what the coordinator answers (``wire.CHECKED``: the classes, the feature count and ``dense``), or ends
    at ``wire.STOP``;
    ``n_features``, ``n_examples`` and ``scale_gamma`` are None then too.
    ``address``: the driver's coordinator, or None when partition 0's task coordinates (``fit`` set).
    ``fault_injection``: test hook, ``{"round": k, "marker": path}`` makes partition 0 fail once at its
    k-th round (0: before it sends its checks; when it coordinates the fit, by killing its Python worker, as
    a lost executor would); with ``"memory": True``, by a MemoryError in its round's work instead;
    with ``"times": n`` (driver-coordinated fits), at the k-th round of each attempt, n times in all;
    ``{"unreachable": pid, "port": port}`` gives partition pid's task a port where nothing listens (with
    ``"meeting_timeout": s``, a fit coordinated on the executors looks and waits for its tasks that long).
    ``has_validation``: the stage's rows have a ``validation`` column marking the validation rows, of which
    there are ``n_validation``.  ``dense``: the tasks hold their rows as dense blocks
    (``blocks.DataSummary.dense``).
    """

    secret: str
    n_features: Optional[int]
    classes: Optional[list]
    has_weight: bool
    n_partitions: int
    n_examples: Optional[int]
    scale_gamma: Optional[float]
    address: Optional[tuple] = None
    fit: Optional[HostedFit] = None
    fault_injection: Optional[dict] = None
    has_validation: bool = False
    n_validation: int = 0
    dense: bool = False


class TrainingData:
    """The checked training data of one fit, as the barrier stage reads it.

    ``df`` must have a vector (or numeric array) column ``features_col``, a label column with exactly
    two values and optionally a weight column of positive weights (the estimators drop the rows of weight
    0 first): ``blocks.check_training_data`` checks it all (one job, each task checking its partition), which also gives
    ``scale_gamma``.  ``check_data(n_features, classes)``: the caller's checks of the data's shape; they run
    before the tasks build their blocks.  ``description`` names the fit in the progress log and the Spark UI.
    ``validation_col``: a boolean column marking the validation rows, which the tasks hold beside the
    training rows (``PartitionData.validation``); ``n_examples`` counts the training rows only.
    ``shared_results``: a ``shared_results.SharedResults`` of the fits of one ``fitMultiple`` call: the checks
    and the stage's DataFrame, once per DataFrame, columns and task count (``check_data`` runs every time).

    ``checks_in_stage``: the caller can judge the checks of the training tasks themselves (``judge``), as
    the driver's coordinator does.  Then, on classic sessions, no job of checks runs first: the tasks read
    the partitions as they are where the data's plan fixes as many as there are tasks (``fixed_partitions``),
    else the rows dealt into the tasks' partitions first (``dealt_again``: the checks' counts would only have
    confirmed the need, or, where an adaptive plan makes the partitions as it runs, seldom spared it; the job
    saved is a pass over the input and whatever computes it).  ``checks_in_stage`` is true,
    the data's figures (``classes`` ...) are None until ``judge`` sets
    them (the tasks' spec carries them from then on), and each task checks its own rows
    (``blocks.partition_groups``: 5 ms with the block for ijcnn1's 24,995-row partition, 56 ms for a
    261,455-row Forest-shaped one, where the checks' Spark job took 0.25-0.42 s of each ijcnn1 fit;
    ``bench/bench_engines.py``).
    With ``shared_results``, the first fit's checks, judged or run as a job, serve the fits after it.
    """

    def __init__(self, df, features_col="features", label_col="label", weight_col=None, num_partitions=None,
                 check_data=None, description="spark-bsvm fit", validation_col=None, shared_results=None,
                 checks_in_stage=False):
        self.description, self.progress = description, progress_logger()
        self.spark = df.sparkSession
        check_schema(df, features_col, label_col, weight_col)
        if validation_col:
            check_validation_column(df, validation_col)
        self.has_weight, self.has_validation = bool(weight_col), bool(validation_col)
        self._names, self._check_data = (features_col, label_col, weight_col), check_data
        self.classes = self.n_examples = self.n_features = self.scale_gamma = None
        self.partition_rows, self.n_validation, self.dense = None, 0, False
        columns = features_col, label_col, weight_col, validation_col
        self.n_partitions = tasks = barrier_tasks(self.spark, num_partitions)
        self._declared_features = declared_features(df.schema[features_col])
        key = ("checks", id(df), columns, tasks)  # the key's DataFrame is kept with the result: its id is no other's
        self._shared = None
        known = shared_results.known(key) if shared_results is not None else None  # another fit's checks
        if known is not None:
            self.checks_in_stage = False
            self._take(*known[1:])
            return
        # planned once, here and by the stage's starts (a projection keeps its input's partitions)
        prepared = plannable(_prepared(df, columns))
        self.checks_in_stage = checks_in_stage and not is_connect(self.spark)
        if self.checks_in_stage:
            if shared_results is not None:
                self._shared = (shared_results, key, df)
            partitions = fixed_partitions(prepared)
            if partitions != tasks:  # the checks' counts would (all but always) only confirm the need
                deal = functools.partial(dealt_again, prepared, None, tasks)
                # one frame, so one shuffle, for the fits of a fitMultiple call (each checks its rows)
                prepared = deal() if shared_results is None else \
                    shared_results.once(("dealt",) + key[1:], lambda: (df, deal()))[1]
                has = ("partitions that an adaptive shuffle makes as it runs" if partitions is None
                       else f"{partitions} partitions")
                self.progress.info("%s: the input has %s; its rows are dealt into %d", description, has, tasks)
            self.progress.info("%s: the training tasks check their rows", description)
            self.frame = prepared
            return
        self.progress.info("%s: checking the training data", description)
        check = functools.partial(_checked_frame, prepared, tasks, self._names,
                                  self._declared_features and row_bytes(self._declared_features))
        if shared_results is None:
            self._take(*check())
        else:
            self._take(*shared_results.once(key, lambda: (df, *check()))[1:])

    def _take(self, summary, frame):
        """Hold the data's checked figures (``summary``, a ``blocks.DataSummary``) and the DataFrame the stage
        reads; then run the caller's ``check_data``."""
        self.classes, self.n_examples, self.n_features = summary.classes, summary.n_rows, summary.n_features
        self.scale_gamma, self.partition_rows = summary.scale_gamma, summary.partition_rows
        self.n_validation, self.dense = summary.n_validation, summary.dense
        self.n_examples -= self.n_validation
        self.frame, self.n_partitions = frame, _task_count(summary, self.n_partitions)
        if self._check_data is not None:
            self._check_data(self.n_features, self.classes)

    def judge(self, groups):
        """Judge the checks' ``groups`` of every task's rows (``blocks.judged_groups``; a ValueError names
        bad data) and hold what they found; then the caller's ``check_data``.  Whether the stage must start
        again over the rows dealt anew (``balanced``: partitions too uneven, or empty), with fewer tasks when
        there are fewer rows than tasks."""
        summary = judged_groups(groups, self.has_validation, *self._names)
        frame = balanced(self.frame, summary, _task_count(summary, self.n_partitions))
        if self._shared is not None:  # for the other fits of the fitMultiple call
            shared_results, key, df = self._shared
            shared_results.once(key, lambda: (df, summary, frame))  # a result held already stays
        again = frame is not self.frame
        self._take(summary, frame)
        return again

    def task_spec(self, secret, **kwargs):
        return TaskSpec(secret, self.n_features, self.classes, self.has_weight, self.n_partitions, self.n_examples,
                        self.scale_gamma, has_validation=self.has_validation, n_validation=self.n_validation,
                        dense=self.dense, **kwargs)

    def run_stage(self, make_task, tag, restarts=0):
        """Run the task ``make_task(input_schema)`` gives on every partition in one barrier stage
        (``run_barrier_stage``; called at each start of the stage: one started again after the tasks' checks
        were judged gets their figures); the tasks' output rows.  When a task fails, Spark aborts the stage (a
        barrier result stage is not retried); start it again, at most ``restarts`` times: the new tasks connect
        to the coordinator again.  When Spark refuses the stage because its partitions are merged from others
        within it (``MERGED_PARTITIONS``), deal the rows again (``dealt_again``) and start it at once: a refusal
        at the job's submission, which costs no restart.

        Why a result stage: a shuffle after the barrier stage would make it a map stage, which Spark retries
        as a whole by itself, but its result stage costs a fit ~0.09 s more at its end (budget-L1 on ijcnn1,
        ``bench/bench_engines.py``); this loop's new stage resumes the fit as Spark's retry would."""
        if self.classes is None:
            self.progress.info("%s: starting %d training tasks (each checks its rows, converts them and compiles "
                               "its kernels before the first round)", self.description, self.n_partitions)
        else:
            self.progress.info("%s: starting %d training tasks on %d rows x %d features (each converts its rows "
                               "and compiles its kernels before the first round)", self.description,
                               self.n_partitions, self.n_examples, self.n_features)
        restart, dealt = 0, False
        while True:
            n_features = self.n_features or self._declared_features
            try:
                rows = "" if self.n_examples is None else f"{self.n_examples} rows, "  # known once checked
                with tagged_jobs(self.spark, tag, f"{self.description} ({rows}{self.n_partitions} tasks)"):
                    return run_barrier_stage(self.frame, make_task, n_features and row_bytes(n_features))
            except Exception as exc:
                message = str(exc)
                if MERGED_PARTITIONS in message and not dealt:  # dealt once: a second refusal is an error
                    self.frame, dealt = dealt_again(self.frame, self.partition_rows, self.n_partitions), True
                    self.progress.info("%s: Spark refused a barrier stage over merged partitions (a coalesce?); "
                                       "the rows are dealt into %d partitions", self.description, self.n_partitions)
                    continue
                if restart == restarts or STAGE_ABORTED not in message:  # cancelled, say
                    raise
                restart += 1
                self.progress.warning("%s: %s; starting the training stage again (restart %d of at most %d)",
                                      self.description, stage_failure(exc), restart, restarts)


def plannable(df):
    """``df`` where planning it is harmless (a cached frame; a frame of the library's own, ``_owned``; any
    frame of a Spark Connect session, whose plans the server makes afresh), else a copy of its plan (~15-45
    ms to plan, ijcnn1): a DataFrame object keeps the plan it was first given, and planning the caller's own
    one now would leave its actions without a cache the caller adds later.  A frame of the library's own is
    planned once however often it is read (``fixed_partitions``, each start of the stage, whose job then
    reuses the shuffle that dealt its rows)."""
    if df in _OWNED or is_connect(df.sparkSession):
        return df
    level = df.storageLevel
    return df if level.useMemory or level.useDisk or level.useOffHeap else _owned(df.select("*"))


_OWNED = weakref.WeakSet()  # the frames the library derived, which no caller holds


def _owned(df):
    """``df``, a frame the library derived and no caller holds, marked as such for ``plannable``."""
    _OWNED.add(df)
    return df


def fixed_partitions(df):
    """The partitions that the plan of ``df`` (a classic session's DataFrame: its plan is in this process)
    fixes before it runs, or None where they may change as it runs.  An adaptive plan may merge or split its
    shuffles' partitions as it runs, but not those of a shuffle into a given number of partitions
    (``repartition(n)``, Spark's ``REPARTITION_BY_NUM``); one without a shuffle of its own (a cached frame's,
    whose cached plan had one) reads its input's partitions as they are.  No job runs for the count (beyond
    what filling a cached frame's cache runs, which the stage would)."""
    execution = plannable(df)._jdf.queryExecution()  # planned once per DataFrame object: 0.2 ms after the first
    plan = execution.executedPlan()
    adaptive = plan.getClass().getSimpleName() == "AdaptiveSparkPlanExec"
    shuffle = _top_shuffle(plan.inputPlan()) if adaptive else _NO_SHUFFLE
    if shuffle is _NO_SHUFFLE:  # no adaptive stage to run first, so no job for the count
        return execution.toRdd().getNumPartitions()
    if shuffle is not None and shuffle.shuffleOrigin().toString() == "REPARTITION_BY_NUM":
        # the input plan's own count: a coalesce above the shuffle, say, changes it
        return plan.inputPlan().outputPartitioning().numPartitions()
    return None


_NO_SHUFFLE = object()  # _top_shuffle's answer for a plan that holds no exchange


def _top_shuffle(plan):
    """The exchange (a JVM ``SparkPlan``) that makes a physical plan's partitions, the first one below its
    root through nodes of one child, or None where that is no shuffle exchange or an exchange lies below a
    node of several children (a join, a union); ``_NO_SHUFFLE`` when the plan holds no exchange, a cached
    relation's own plan aside (a cached scan is a leaf: its plan is no child)."""
    name = plan.getClass().getSimpleName()
    if "Exchange" in name:
        return plan if name == "ShuffleExchangeExec" else None
    children = plan.children()
    if children.size() == 1:
        return _top_shuffle(children.apply(0))
    return None if any(_top_shuffle(children.apply(i)) is not _NO_SHUFFLE for i in range(children.size())) \
        else _NO_SHUFFLE


def _task_count(summary, tasks):
    """The stage's tasks: ``tasks``, or fewer for fewer rows (a task needs a row to train on)."""
    return min(tasks, summary.n_rows)


def _prepared(df, columns):
    """``df``'s ``columns`` = (features, label, weight or None, validation or None) projected and renamed as the
    stage reads them (features, label, weight as double, validation), an array column of features as
    array<double> (the tasks read dense rows), decimal labels as doubles; ``df`` itself when it is that
    already (no projection to analyse: ~15 ms a fit)."""
    from pyspark.ml.linalg import VectorUDT
    from pyspark.sql.types import ArrayType, DecimalType, DoubleType

    features_col, label_col, weight_col, validation_col = columns
    types = {field.name: field.dataType for field in df.schema.fields}
    names = ["features", "label"] + ["weight"] * bool(weight_col) + ["validation"] * bool(validation_col)
    if (df.columns == names == [c for c in columns if c] and types.get("weight", DoubleType()) == DoubleType()
            and not isinstance(types["label"], DecimalType)
            and (isinstance(types["features"], VectorUDT) or types["features"] == ArrayType(DoubleType()))):
        return df
    features = column(features_col)
    if not isinstance(types[features_col], VectorUDT):
        features = features.cast("array<double>")
    selected = [features.alias("features"), label_column(df, label_col).alias("label")]
    if weight_col:
        selected.append(column(weight_col).cast("double").alias("weight"))
    if validation_col:
        selected.append(column(validation_col).alias("validation"))
    return _owned(df.select(*selected))


def label_column(df, label_col):
    """``df``'s label column ``label_col`` with the values the checks give (``DataSummary.classes``): decimal
    labels as doubles, as MLlib reads labels (and the wire carries them), others as they are."""
    from pyspark.sql.types import DecimalType

    label = column(label_col)
    return label.cast("double") if isinstance(df.schema[label_col].dataType, DecimalType) else label


def without_zero_weights(df, weight_col):
    """``df`` without its rows of weight 0 in ``weight_col`` (None: ``df`` as it is): they contribute nothing
    (MLlib's meaning), and the data's checks refuse them; null weights stay, for those checks to name."""
    if not weight_col:
        return df
    weight = column(weight_col)
    return df.filter(weight.isNull() | (weight != 0))


def check_rows(df, features_col, label_col, weight_col=None):
    """The ``DataSummary`` of ``df``'s rows, or the ValueError naming what is wrong with them, by the checks a
    training stage runs on its rows (``check_training_data``, one Spark job, whose Arrow batches are sized by
    their rows where the features column declares its size, as the training data's: ``row_bytes``): for rows no
    training stage reads, such as the calibration rows of Platt's sigmoid."""
    prepared = _prepared(df, (features_col, label_col, weight_col, None))
    declared = declared_features(df.schema[features_col])
    return check_training_data(prepared, features_col, label_col, weight_col,
                               row_bytes=declared and row_bytes(declared))


def label_counts(df, features_col, label_col):
    """{label value: rows} of ``df``'s rows (one Spark job), the values as the checks give them
    (``check_rows``'s ``classes``: decimal labels as doubles)."""
    prepared = _prepared(df, (features_col, label_col, None, None))
    return {row["label"]: row["count"] for row in prepared.groupBy("label").count().collect()}


def _checked_frame(prepared, tasks, names, max_row_bytes):
    """(the ``DataSummary`` of the ``prepared`` training data, checked by its Spark job
    (``check_training_data``; ``names``: the features, label and weight columns the errors name;
    ``max_row_bytes``: a bound of a row's bytes in Arrow, or None), the DataFrame the stage reads: ``prepared``
    dealt into the stage's partitions (``balanced``)."""
    summary = check_training_data(prepared, *names, row_bytes=max_row_bytes)
    return summary, balanced(prepared, summary, _task_count(summary, tasks))


PYTHON_WORKER_ERROR = "An exception was thrown from the Python worker:"  # Spark's words before a task's traceback


def stage_failure(exc):
    """What ended a failed training stage, in one line where Spark's message shows it: the exception a task
    raised (the end of its Python traceback), then Spark's reason (from "Job aborted due to stage failure" to
    the end of that line); a message of neither kind up to its Java frames (a cancelled job's: the JVM call and
    Spark's reason, without the trace of the scheduler that cancelled it).  The whole message stays in the
    cause."""
    message = str(exc)
    reason = next((line[line.index(STAGE_ABORTED):].strip() for line in message.splitlines() if STAGE_ABORTED in line),
                  None)
    raised = []  # the last unindented lines after the (indented) frames, up to Spark's SQLSTATE or Java frames
    if PYTHON_WORKER_ERROR in message:
        for line in message.split(PYTHON_WORKER_ERROR, 1)[1].splitlines()[1:]:
            if line.startswith((" SQLSTATE", "\t")):
                break
            if line.startswith(" "):
                raised = []
            elif line.strip():
                raised.append(line.strip())
    if raised:
        return " ".join(raised) + (f" (Spark: {reason})" if reason else "")
    return reason or message.split("\n\tat ", 1)[0]


class StageCancelled(RuntimeError):
    """The training stage was cancelled (a job group's, a tag's or a notebook's cancel): every fit that shared the
    stage ends with it; none starts the cancelled work over alone."""


CANCELLED_JOB = re.compile(r"\bJob \d+ cancelled\b")  # Spark's words for a cancelled job, in 3.5 and 4


def failed_stage(exc):
    """The RuntimeError of a training stage that Spark ended with ``exc`` (a ``StageCancelled`` where it was
    cancelled), its message ``stage_failure``'s."""
    kind = StageCancelled if CANCELLED_JOB.search(str(exc)) else RuntimeError
    return kind(f"the training stage failed: {stage_failure(exc)}")


def out_of_memory(exc):
    """The message of a ``MemoryError`` in a training task: what failed, where, and the fix."""
    return (f"a training task on {socket.gethostname()} ran out of memory ({type(exc).__name__}: {exc}): give "
            "the executors' Python workers more memory (spark.executor.memory, and spark.executor.pyspark.memory "
            "where it is set) or spread the rows over more tasks (numPartitions)")


def raise_task_errors(rows):
    """Raise the error a task reported in its output row, if any: a ValueError for bad input, a MemoryError
    with the task's message (``out_of_memory``'s where a block or a round ran out, as the driver's coordinator
    raises it), a RuntimeError for anything else (a coordinator it could not reach, a failing solver)."""
    # a task's own account of why it could not reach the coordinator, or could not run, says more than the
    # coordinating task's timeout while it waited for that task (``hosted.host_fit``)
    for row in sorted(rows, key=lambda row: row["error_type"] not in (UNREACHABLE, MISSING)):
        if row["error_type"] == "ValueError":
            raise ValueError(row["error"])
        if row["error_type"] == "MemoryError":
            raise MemoryError(row["error"])
        if row["error_type"] in (UNREACHABLE, MISSING):
            raise RuntimeError(row["error"])
        if row["error_type"]:
            raise RuntimeError(f"the fit failed in the task that coordinated it: {row['error_type']}: "
                               f"{row['error']}")
