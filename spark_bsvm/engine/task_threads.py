"""numba's thread pool inside a Spark task: the task's cores (``spark.task.cpus``), not the executor's.

A Python worker of an executor with c cores runs one task at a time, and the executor runs up to
c / spark.task.cpus of them at once: each worker's numba pool at its default (every core of the
machine) would put c threads per worker on c cores, and the pools of the workers would fight for
them (bench/bench_threads.py measured what contended pools cost: core/threads.py).
"""


def use_task_cores(context):
    """Size numba's pool to the cores Spark gave the task of ``context`` (a ``TaskContext``; with none,
    as outside a task, the pool is left alone)."""
    if context is None:
        return
    import numba

    numba.set_num_threads(max(1, min(context.cpus(), numba.config.NUMBA_NUM_THREADS)))
