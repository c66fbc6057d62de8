"""The garbage collector of the executors' Python workers: the full collection after each task, kept short.

PySpark's daemon runs ``gc.collect()`` in a reused Python worker after every task it ran
(``pyspark/daemon.py``), once the task's rows are back.  A full collection walks every object the collector
tracks, and a worker that has run a fit holds ~172,000 of them (numba's compiled kernels and their types,
scipy, pyarrow, pandas): ~75 ms of CPU per task where ``bench/HISTORY.md`` measured it.  The worker's next
task waits for that collection, so a fit started right after another on the same workers (as in a tuning
run or a retraining job) waited ~50 ms longer for its tasks than one started a second later, and the two
workers spent ~0.14 s of CPU per fit collecting.

``freeze_at_task_start`` moves every object alive when a spark-bsvm task starts into the collector's
permanent generation (``gc.freeze``), which collections skip.  The daemon's collection after the previous
task has left what outlives tasks (modules, caches, compiled kernels) and what this task has made so far
(pyspark's per-task state, the task's function and its spec or model): all of it is frozen, and the
collection after the task walks only what the task made later.  Frozen objects are still freed when their
last reference goes; only those left in an unreachable cycle wait, never freed until a collection that
includes them.  So every ``FULL_COLLECTION_EVERY``-th spark-bsvm task of a worker first thaws everything
and collects it all, at that task's start (~75 ms, once per so many tasks).  Tasks of other code in the
same worker do not count towards it; an idle worker ends after a minute anyway (Spark's worker pool).  In
the measurements, the frozen objects stayed level: 172,066 at the start of every EBSVM training task from
the third fit to the twenty-fifth, and 183,248 after each of 40 transforms of 4 tasks.
"""

import gc

FULL_COLLECTION_EVERY = 100  # spark-bsvm tasks of one worker between full collections of the frozen objects

_worker = {"task": None, "tasks": 0}  # the last task seen in this process, and how many so far


def freeze_at_task_start(context):
    """At the start of the task of ``context`` (a ``TaskContext``; None outside a task: nothing is done), freeze
    the objects alive now, once per task however often it is called (a transform calls it per Arrow batch);
    every ``FULL_COLLECTION_EVERY``-th task, first collect everything, the frozen objects included."""
    if context is None:
        return
    task = context.taskAttemptId()
    if task == _worker["task"]:
        return
    _worker["task"] = task
    _worker["tasks"] += 1
    if _worker["tasks"] % FULL_COLLECTION_EVERY == 0:
        gc.unfreeze()
        gc.collect()
    gc.freeze()
