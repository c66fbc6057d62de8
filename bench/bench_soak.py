"""Soak: many consecutive fits in one Spark session leave nothing behind.

One ``local[2]`` session fits the estimators in turn (C-SVC, SpSVM-2, budget-L1, EBSVM, L0-SVM; every
third fit coordinated on the executors) on one cached ``make_rings`` DataFrame.  After a warm-up fit
of each method (Python workers, imports, numba's code: paid once) and after every tenth fit, with
garbage collected on both sides, it prints what the driver holds:

    py threads     threads of this Python process (the driver; /proc)
    jvm threads    threads of the driver's JVM
    sockets        open sockets of the Python process and of the JVM
    fds            open file descriptors of the Python process and of the JVM
    workers        processes below the JVM (Spark's Python daemon and its workers)
    spark files    files below spark.local.dir, a new directory of the bench's own (the block manager's
                   shuffle and cached blocks, the session's files)
    new temp       entries of the system temp directory new since the warm-up (other programs on the
                   machine may add some)
    py RSS MB      resident memory of the Python process; jvm RSS MB: of the JVM
    jvm heap MB    the JVM's heap in use after the garbage collection (the RSS of a JVM keeps the pages
                   its heap once grew to: it says what the heap reached, not what the fits hold)
    py threading   the Python threads alive (``threading.active_count``)

The last lines compare the end with the state after the warm-up: what grew (the JVM's threads also by
name), and the memory growth in percent (the goal: nothing left behind, driver memory within 10%).  Then,
after ``--idle`` seconds without jobs, it measures again: Spark's cached thread pools (block manager,
query stages, shuffle) let threads idle for 60 s go, so threads that stay are held by something.

``--retained N`` keeps only the last N jobs, stages and SQL executions in Spark's status store (the
``spark.ui.retained*`` and ``spark.sql.ui.retainedExecutions`` settings, 1,000 by default, which hold
their records in the driver's heap with the UI off too): with it, the heap shows what the fits hold
rather than Spark's growing history of them.

    python -m bench.bench_soak [--fits 50] [--rows 2000] [--idle 75] [--retained N]  # --fits 3 --idle 0: smoke
"""

import argparse
import collections
import gc
import logging
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.common import descendants, print_table, timed
from core.synthetic import make_rings

SLOTS = 2


def _status(pid, field):
    """A numeric field of /proc/<pid>/status (``Threads``, ``VmRSS`` in kB)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def _fds(pid):
    """(open file descriptors, of them sockets) of process ``pid``."""
    targets = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            targets.append(os.readlink(fd))
        except OSError:  # closed meanwhile
            pass
    return len(targets), sum(target.startswith("socket:") for target in targets)


def _thread_names(pid):
    """{thread name with its digits dropped: how many} of process ``pid`` (names as /proc keeps them, 15
    characters at most)."""
    names = collections.Counter()
    for comm in Path(f"/proc/{pid}/task").glob("*/comm"):
        try:
            names[re.sub(r"\d+", "#", comm.read_text().strip())] += 1
        except OSError:  # ended meanwhile
            pass
    return names


def _files_below(directory):
    return sum(len(files) for _, _, files in os.walk(directory))


class Probe:
    """The driver's resources as the module doc lists them."""

    def __init__(self, spark, local_dir):
        self.spark, self.local_dir = spark, local_dir
        self.jvm_pid = spark.sparkContext._gateway.proc.pid
        self.temp_at_start = set(os.listdir(tempfile.gettempdir()))

    def measure(self):
        gc.collect()
        self.spark.sparkContext._jvm.System.gc()
        py_fds, py_sockets = _fds(os.getpid())
        jvm_fds, jvm_sockets = _fds(self.jvm_pid)
        new_temp = set(os.listdir(tempfile.gettempdir())) - self.temp_at_start
        return {"py threads": _status(os.getpid(), "Threads"), "jvm threads": _status(self.jvm_pid, "Threads"),
                "py sockets": py_sockets, "jvm sockets": jvm_sockets, "py fds": py_fds, "jvm fds": jvm_fds,
                "workers": len(descendants(self.jvm_pid)), "spark files": _files_below(self.local_dir),
                "new temp": len(new_temp), "py RSS MB": _status(os.getpid(), "VmRSS") / 1024,
                "jvm RSS MB": _status(self.jvm_pid, "VmRSS") / 1024, "jvm heap MB": self._jvm_heap_mb(),
                "py threading": threading.active_count()}

    def _jvm_heap_mb(self):
        runtime = self.spark.sparkContext._jvm.java.lang.Runtime.getRuntime()
        return (runtime.totalMemory() - runtime.freeMemory()) / 2 ** 20


def estimators():
    """One estimator per method, small enough for a fit of a second or two."""
    from spark_bsvm import CSVC, L0SVM, BudgetSVM, ElasticBudgetSVM, SpSVM

    return [CSVC(gamma=0.5, C=3.0), SpSVM(gamma=0.5, maxBasis=20, regParam=0.1),
            BudgetSVM(gamma=0.5, budget=30, C=1.0), ElasticBudgetSVM(gamma=0.5, budget=30, regParam=1e-3),
            L0SVM(gamma=0.5, initialSize=100)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fits", type=int, default=50, help="consecutive fits after the warm-up (default 50)")
    parser.add_argument("--rows", type=int, default=2000, help="training rows (default 2000)")
    parser.add_argument("--idle", type=int, default=75, help="seconds without jobs before the last measure")
    parser.add_argument("--retained", type=int, help="jobs, stages and SQL executions Spark's status store keeps")
    args = parser.parse_args()

    from pyspark.ml.linalg import Vectors
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    for logger in ("spark_bsvm", "spark_bsvm.progress"):  # the table only: no progress lines, no warnings
        logging.getLogger(logger).setLevel(logging.ERROR)
    local_dir = tempfile.mkdtemp(prefix="bench-soak-")
    builder = (SparkSession.builder.master(f"local[{SLOTS}]").appName("bench_soak")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", str(SLOTS))
             .config("spark.driver.memory", "2g").config("spark.local.dir", local_dir)
             .config("spark.ui.showConsoleProgress", "false"))
    if args.retained:
        for key in ("spark.ui.retainedJobs", "spark.ui.retainedStages", "spark.sql.ui.retainedExecutions"):
            builder = builder.config(key, str(args.retained))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        X, y = make_rings(args.rows, 4, seed=0)
        rows = [(Vectors.dense(x), 1.0 if label > 0 else 0.0) for x, label in zip(X, y)]
        df = spark.createDataFrame(rows, ["features", "label"]).repartition(SLOTS).cache()
        df.count()
        methods = estimators()
        for estimator in methods:  # warm-up
            estimator.fit(df)
        probe = Probe(spark, local_dir)
        before, walls, threads_before = probe.measure(), [], _thread_names(probe.jvm_pid)
        table = [["warm-up", "", *before.values()]]
        for k in range(1, args.fits + 1):
            estimator = methods[(k - 1) % len(methods)].copy()
            estimator.setCoordinatorMode("executor" if k % 3 == 0 else "driver")
            _, wall, _ = timed(lambda: estimator.fit(df))
            walls.append(wall)
            if k % 10 == 0 or k == args.fits:
                after = probe.measure()
                table.append([f"after {k}", f"{sum(walls[-10:]) / len(walls[-10:]):.2f}", *after.values()])
        print(f"{args.fits} consecutive fits ({', '.join(type(m).__name__ for m in methods)} in turn, every third "
              f"coordinated on the executors) on {args.rows} make_rings rows, local[{SLOTS}]")
        threads_grew = dict(_thread_names(probe.jvm_pid) - threads_before)
        if args.idle:
            time.sleep(args.idle)
            table.append([f"+{args.idle} s idle", "", *probe.measure().values()])
        print_table(["when", "mean fit s", *before], table)
        grew = {name: round(after[name] - before[name], 1) for name in before
                if "MB" not in name and after[name] > before[name]}
        print(f"left behind (end against warm-up): {grew or 'nothing'}")
        print(f"JVM threads that grew, by name: {threads_grew or 'none'}")
        if args.idle:
            print(f"... and still there after {args.idle} s idle: "
                  f"{dict(_thread_names(probe.jvm_pid) - threads_before) or 'none'}")
        for name in ("py RSS MB", "jvm RSS MB", "jvm heap MB"):
            print(f"{name}: {before[name]:.0f} -> {after[name]:.0f} ({100 * (after[name] / before[name] - 1):+.1f}%)")
    finally:
        spark.stop()
        shutil.rmtree(local_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
