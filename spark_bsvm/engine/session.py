"""What the engine asks of a SparkSession, on classic Spark and on Spark Connect alike.

A Spark Connect session has no ``sparkContext``, no RDDs and no JVM handle: everything here goes
through calls both kinds of session have (``spark.conf``, DataFrames), or through the one call each
kind offers (job tags: the SparkContext's on classic sessions, the session's on Connect sessions).
Arrow batches sized by their row count (``row_sized_arrow_batches``) need thread-local properties, and
Arrow batches read from a DataFrame's own plan (``planned_arrow_batches``) need the JVM: classic
sessions only.
"""

import re
import threading
import time
from contextlib import contextmanager, suppress

SIMPLIFIED_TRACEBACK = "spark.sql.execution.pyspark.udf.simplifiedTraceback.enabled"
ARROW_BYTES = "spark.sql.execution.arrow.maxBytesPerBatch"
ARROW_RECORDS = "spark.sql.execution.arrow.maxRecordsPerBatch"
DEFAULT_BATCH_BYTES = 64 << 20  # Spark's ARROW_BYTES when the session does not set it
UNSIZED = str(2**31 - 1)  # ARROW_BYTES at which Spark stops sizing each row it adds to an Arrow batch
FEWEST_BATCH_ROWS = 1024  # smaller batches would cost more per row than Spark's sizing does


def is_connect(spark):
    """Whether ``spark`` is a Spark Connect session (its client may run far from the cluster)."""
    return type(spark).__module__.startswith("pyspark.sql.connect.")


def executor_slots(spark):
    """How many tasks can run at once, as Spark's barrier check counts them: each executor's cores over
    ``spark.task.cpus`` (rounded down), summed.  A barrier stage needs one slot per task.  A ValueError where
    a Spark Connect client cannot count them (``_counted_slots``)."""
    slots = _counted_slots(spark)
    if slots is None:
        raise _uncounted(spark)
    return slots


# a Connect client counts the cores by the default parallelism, which these confs may set to another number
_PARALLELISM_CONFS = ("spark.sql.leafNodeDefaultParallelism", "spark.default.parallelism")


def _uncounted(spark):
    """The ValueError of a Spark Connect client that cannot count the task slots (``_counted_slots``)."""
    return ValueError("under Spark Connect spark-bsvm counts the task slots by the cluster's default parallelism, "
                      f"which {_parallelism_override(spark)} sets to a number of its own: set numPartitions to at "
                      "most the cluster's task slots (each executor's cores over spark.task.cpus, summed)")


def _counted_slots(spark):
    """``executor_slots``, or None where a Spark Connect client cannot count them: the master is no local one
    and the default parallelism is set (``_PARALLELISM_CONFS``)."""
    if not is_connect(spark):
        # the very count Spark compares a barrier stage's tasks with (a JVM method, public in the bytecode)
        context = spark.sparkContext._jsc.sc()
        return context.maxNumConcurrentTasks(context.resourceProfileManager().defaultResourceProfile())
    task_cpus = int(spark.conf.get("spark.task.cpus", "1"))
    local = local_master_cores(spark.conf.get("spark.master", ""))
    if local is not None:
        cores, executor_cores = local
        return slots_of(cores, task_cpus, executor_cores)
    if _parallelism_override(spark):
        return None
    # Connect hides the SparkContext; a range without a partition count is split into the default
    # parallelism, the cluster's cores (one small job)
    from pyspark.sql import functions as F

    cores = spark.range(0, 1 << 20).select(F.spark_partition_id().alias("p")).agg(F.max("p")).first()[0] + 1
    executor_cores = spark.conf.get("spark.executor.cores", None)
    return slots_of(cores, task_cpus, int(executor_cores) if executor_cores else None)


def _parallelism_override(spark):
    """``"conf=value"`` of the first of ``_PARALLELISM_CONFS`` set in ``spark``, or None."""
    for key in _PARALLELISM_CONFS:
        value = spark.conf.get(key, None)
        if value:
            return f"{key}={value}"
    return None


def local_master_cores(master):
    """(cores, executor cores or None) of a local master: ``local``, ``local[N]`` or ``local[N, F]`` (N, None),
    ``local-cluster[n, c, m]`` (n c, c); None for any other master (``local[*]``: the cores of the machine the
    driver runs on, which a Spark Connect client may not be)."""
    found = re.fullmatch(r"local(?:\[\s*(\d+)\s*(?:,\s*\d+\s*)?\])?", master)
    if found:
        return int(found.group(1) or 1), None
    found = re.fullmatch(r"local-cluster\[\s*(\d+)\s*,\s*(\d+)\s*,\s*\d+\s*\]", master)
    if found:
        executors, cores = int(found.group(1)), int(found.group(2))
        return executors * cores, cores
    return None


def slots_of(cores, task_cpus, executor_cores=None):
    """Task slots of ``cores`` cores in all: executors x (``executor_cores`` // ``task_cpus``) when each
    executor has ``executor_cores``, else ``cores`` // ``task_cpus``."""
    if executor_cores:
        return cores // executor_cores * (executor_cores // task_cpus)
    return cores // task_cpus


def barrier_tasks(spark, num_partitions=None):
    """The task count of a fit's barrier stage: ``num_partitions``, or by default every task slot.  A
    ValueError with the fix, before any job, when Spark could not start the stage."""
    master = spark.conf.get("spark.master", "")
    local = master == "local" or master.startswith("local[")  # Spark ignores dynamic allocation there
    if spark.conf.get("spark.dynamicAllocation.enabled", "false").lower() == "true" and not local:
        raise ValueError(
            "spark-bsvm trains in one barrier stage, which Spark does not run with dynamic allocation: "
            "set spark.dynamicAllocation.enabled=false for this application")
    slots = _counted_slots(spark)
    if slots is None and num_partitions is not None:
        return num_partitions  # a Connect client that cannot count the slots: the user's count
    if slots is None:
        raise _uncounted(spark)
    counted = f"each executor's cores over spark.task.cpus={spark.conf.get('spark.task.cpus', '1')}, summed"
    if slots < 1:
        raise ValueError(f"this application has no task slot ({counted}): no executor has as many cores as a "
                         "task needs; lower spark.task.cpus or give the executors more cores")
    if num_partitions is not None and num_partitions > slots:
        raise ValueError(
            f"numPartitions={num_partitions} exceeds the {slots} task slots of this application ({counted}); "
            "a barrier stage needs all its tasks running at once and would wait forever: use at most "
            f"{slots} partitions or add executors/cores")
    return num_partitions or slots


_DESCRIPTION, _INTERRUPT_ON_CANCEL = "spark.job.description", "spark.job.interruptOnCancel"  # Spark's local properties


@contextmanager
def tagged_jobs(spark, tag, description, interrupt=True):
    """Label the Spark jobs this thread starts inside the block with ``tag`` (so that ``cancel_jobs`` can
    stop them) and, on classic sessions, with ``description`` (the Spark UI shows it).  A tag adds to what
    the caller set, where a job group would replace the caller's: the caller's own group and tags stay on
    the jobs, so that cancelling them (a notebook's cancel, a scheduler's timeout) stops the fit too, and
    the thread has them, and its description, again after the block.  ``interrupt``: a cancel interrupts the
    tasks' threads (not for writes to HDFS, whose writers an interrupt can leave marking datanodes dead: Spark
    leaves it off by default for that)."""
    if is_connect(spark):
        spark.addTag(tag)
        try:
            yield
        finally:
            spark.removeTag(tag)
    else:
        context = spark.sparkContext
        before = {key: context.getLocalProperty(key) for key in (_DESCRIPTION, _INTERRUPT_ON_CANCEL)}
        context.addJobTag(tag)
        context.setJobDescription(description)
        if interrupt:
            context.setInterruptOnCancel(True)
        try:
            yield
        finally:
            context.removeJobTag(tag)
            for key, value in before.items():
                context.setLocalProperty(key, value)


def cancel_jobs(spark, tag):
    """Cancel the running jobs labelled ``tag`` by ``tagged_jobs``."""
    if is_connect(spark):
        spark.interruptTag(tag)
    else:
        spark.sparkContext.cancelJobsWithTag(tag)


def tagged_job_stages(spark, tag):
    """(job id, its status, the ``SparkStageInfo`` of its stages) of each job labelled ``tag`` that a classic
    session's status tracker knows (it follows Spark's events, which may lag seconds behind)."""
    tracker = spark.sparkContext.statusTracker()
    for job in spark.sparkContext._jsc.sc().statusTracker().getJobIdsForTag(tag):  # pyspark's tracker has no tags
        info = tracker.getJobInfo(job)
        if info is not None:
            yield job, info.status, [stage for stage in map(tracker.getStageInfo, info.stageIds) if stage]


def stage_partly_ended(spark, tag):
    """Whether a stage of a job labelled ``tag`` has both ended and running tasks: in a barrier stage,
    whose tasks all start together, a task that ended early (a classic session's status tracker; the
    driver-side coordinator, the one caller, runs on classic sessions only)."""
    return any(stage.numCompletedTasks > 0 and stage.numActiveTasks > 0
               for _, _, stages in tagged_job_stages(spark, tag) for stage in stages)


def wait_for_tagged_tasks(spark, tag, seconds):
    """Wait, at most ``seconds``, until every job labelled ``tag`` has ended and no stage of theirs has a task
    still at work; whether they had.  A failed job's other tasks run on until Spark's kill reaches them, and may
    still write (a classic session's status tracker; once Spark's events so far have reached it, it knows every
    job started, and it shows a job ended only after the events before its end, so the tasks it shows at work
    then are all that may be; a stage's earlier attempts are not shown)."""
    deadline = time.monotonic() + seconds
    with suppress(Exception):  # the events so far (a TimeoutException after its wait: waited on below)
        spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty(int(1000 * seconds))
    while any(status == "RUNNING" or any(stage.numActiveTasks for stage in stages)
              for _, status, stages in tagged_job_stages(spark, tag)):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


def batches_fit(records, row_bytes, byte_limit):
    """Whether every Arrow batch of ``records`` rows (0 or less: unlimited) of at most ``row_bytes`` bytes
    keeps within ``byte_limit`` bytes."""
    return 0 < records and records * row_bytes <= byte_limit


def unsized_arrow_batches(records, byte_limit, row_bytes, records_set):
    """The Arrow batch settings ({key: value}) under which Spark's batches keep within ``byte_limit`` bytes by
    their row count alone, for rows of at most ``row_bytes`` bytes, or {} when none would do.

    Spark 4 sizes an Arrow batch after every row it adds (``ARROW_BYTES``, 64 MiB by default), a walk over
    the column's vectors that took half the JVM's time writing a vector column to a task (Forest-shaped rows,
    a JFR profile).  When ``records`` rows (``ARROW_RECORDS``, 0 or less: unlimited) of ``row_bytes`` fit in
    ``byte_limit``, the check cannot end a batch, and ``UNSIZED`` turns it off; otherwise, unless the user set
    ``records`` (``records_set``), fewer rows a batch (no fewer than ``FEWEST_BATCH_ROWS``) make it so."""
    if batches_fit(records, row_bytes, byte_limit):
        return {ARROW_BYTES: UNSIZED}
    rows = byte_limit // row_bytes
    if records_set or rows < FEWEST_BATCH_ROWS:
        return {}
    return {ARROW_BYTES: UNSIZED, ARROW_RECORDS: str(rows)}


def planned_arrow_batches(spark, row_bytes):
    """Whether a barrier stage of ``spark`` can read its partitions as the Arrow batches of their DataFrame's
    own plan (``stage.run_barrier_stage``), rows of at most ``row_bytes`` bytes (None: unknown): a classic
    session, whose batches of ``ARROW_RECORDS`` rows (a bound Spark's conversion of a plan keeps, with no
    byte sizing) then keep within the byte limit of Spark's other Arrow batches (``ARROW_BYTES``: 64 MiB
    unless the session sets its own)."""
    if row_bytes is None or is_connect(spark):
        return False
    conf = spark.conf
    limit = conf.get(ARROW_BYTES, None)
    limit = int(limit) if limit is not None else DEFAULT_BATCH_BYTES
    return batches_fit(int(conf.get(ARROW_RECORDS)), row_bytes, limit)


_ENVIRONMENT = threading.Lock()  # one ``sql_python_workers`` block at a time: each puts back the environment it found


@contextmanager
def sql_python_workers(spark):
    """Let the Python RDDs defined inside the block run in the Python workers of ``spark``'s SQL Python jobs
    (``mapInArrow``, pandas UDFs: a model's ``transform``).  Spark keeps a pool of workers per environment, and
    its SQL runners add ``SPARK_SIMPLIFIED_TRACEBACK=1`` to theirs (unless ``SIMPLIFIED_TRACEBACK`` is off),
    which a Python RDD's environment (``SparkContext.environment``) lacks: two pools would each start their
    workers, and each import spark-bsvm and load numba's code (the first transform after a session's first
    fit took 3.7 s against 1.4 s from one pool; ``bench/HISTORY.md``), and each hold them while idle (~280 MB a
    worker after a fit).  Inside the block the context's environment is a copy with the variable (an RDD's
    Python function copies the environment when the RDD is defined: ``RDD.id``), never the dict itself
    changed: other threads may be defining functions from it (a tuner's concurrent fits; the dict changing
    under their iteration failed one); a value the user set stays."""
    context = spark.sparkContext
    with _ENVIRONMENT:
        environment = context.environment
        simplified = spark.conf.get(SIMPLIFIED_TRACEBACK, "true").lower() == "true"
        if "SPARK_SIMPLIFIED_TRACEBACK" in environment or not simplified:
            yield
            return
        context.environment = dict(environment, SPARK_SIMPLIFIED_TRACEBACK="1")
        try:
            yield
        finally:
            context.environment = environment


@contextmanager
def row_sized_arrow_batches(spark, row_bytes):
    """Let the jobs this thread starts inside the block send Arrow batches sized by their row count alone
    (``unsized_arrow_batches``), for rows of at most ``row_bytes`` bytes: thread-local properties, which Spark
    hands the tasks as SQL settings wherever the session does not set the key itself (a user's own
    ``ARROW_BYTES`` stands, and turns this off).  Spark Connect sessions keep Spark's sizing: their client
    has no setting scoped to one thread's jobs; so does ``row_bytes`` None (rows of unknown size)."""
    conf = spark.conf
    if row_bytes is None or is_connect(spark) or conf.get(ARROW_BYTES, None) is not None:
        yield
        return
    settings = unsized_arrow_batches(int(conf.get(ARROW_RECORDS)), DEFAULT_BATCH_BYTES, row_bytes,
                                     conf.get(ARROW_RECORDS, None) is not None)
    context = spark.sparkContext
    earlier = {key: context.getLocalProperty(key) for key in settings}
    try:
        for key, value in settings.items():
            context.setLocalProperty(key, value)
        yield
    finally:
        for key, value in earlier.items():
            context.setLocalProperty(key, value)
