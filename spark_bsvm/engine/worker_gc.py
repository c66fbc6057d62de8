"""The garbage collector of the executors' Python workers: the full collection after each task, kept short.

PySpark's daemon runs ``gc.collect()`` in a reused Python worker after every task it ran
(``pyspark/daemon.py``), once the task's rows are back.  A full collection walks every object the collector
tracks, and a worker that has run a fit holds ~172,000 of them (numba's compiled kernels and their types,
scipy, pyarrow, pandas): ~75 ms of CPU per task on this machine.  The worker's next task waits for it, so a
fit that follows another on the same workers (a tuning run's, a retraining job's) started ~50 ms later than
one a second after the last, and the two workers spent ~0.14 s of CPU per fit in those collections
(``bench/HISTORY.md``).

``freeze_long_lived`` moves the objects alive when a task starts into the collector's permanent generation
(``gc.freeze``), which collections skip.  The daemon's collection after the previous task has left only
what outlives tasks (modules, caches, compiled kernels), so that is what gets frozen, and the collection
after this task walks only what the task made.  An object frozen while alive and later left in an
unreachable cycle would never be freed: every ``FULL_COLLECTION_EVERY``-th task of a worker thaws
everything and collects it all once (on ijcnn1's fits the frozen objects stayed at 172,066 from the
third fit to the twenty-fifth: nothing was left behind).
"""

import gc

FULL_COLLECTION_EVERY = 100  # tasks of one worker between full collections of the frozen objects

_worker = {"task": None, "tasks": 0}  # the last task seen in this process, and how many so far


def freeze_long_lived(context):
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
