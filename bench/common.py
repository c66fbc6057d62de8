"""Helpers shared by the bench scripts: their data (``core.benchmark_files``), timing a fit, recording the calls
of a library function, printing tables."""

import os
import sys
import time

# the scripts' data
from core.benchmark_files import DATA_DIR, load_covtype_20k, load_libsvm, load_ripley, require  # noqa: F401


def print_table(header, rows):
    """Print rows of values under a header, right-aligned columns."""
    cells = [header] + [[f"{v:.4g}" if isinstance(v, float) else str(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    for k, row in enumerate(cells):
        print("  ".join(c.rjust(w) for c, w in zip(row, widths)))
        if k == 0:
            print("  ".join("-" * w for w in widths))


def timed(fit):
    """``fit()``'s result, wall seconds and CPU seconds (``time.process_time``: this process, all threads)."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fit()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def tree_timed(work):
    """``work()``'s result, wall seconds and the CPU seconds of this process and its descendants
    (``tree_cpu_seconds``: Spark's JVM and Python workers too)."""
    wall, cpu = time.perf_counter(), tree_cpu_seconds()
    result = work()
    return result, time.perf_counter() - wall, tree_cpu_seconds() - cpu


def recorded_calls(owner, name):
    """Record the calls of ``owner.name`` from now on: it is replaced by a wrapper (a module's function, or a
    class's method, which its callers look up when they call it) that appends each call's wall seconds to
    the list returned (its length: the calls so far)."""
    seconds, function = [], getattr(owner, name)

    def recorded(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            seconds.append(time.perf_counter() - start)

    setattr(owner, name, recorded)
    return seconds


def local_spark(app_name, slots, driver_memory):
    """A ``local[slots]`` Spark session for a bench, its Python workers on this interpreter: no UI (nor its
    progress bars), ``slots`` shuffle partitions, only errors in the log."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(f"local[{slots}]").appName(app_name)
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", str(slots))
             .config("spark.driver.memory", driver_memory).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def processes():
    """{pid: (parent pid, user + system CPU seconds)} of every process alive now (from /proc)."""
    table = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        table[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    return table


def descendants(pid, table=None):
    """The pids of every live process below ``pid`` (``table``: a ``processes()`` reading to use)."""
    table = processes() if table is None else table
    below, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, (parent, _) in table.items() if parent in frontier} - below
        below |= frontier
    return below


def tree_cpu_seconds():
    """User + system CPU seconds of this process and every live descendant (from /proc)."""
    table = processes()
    mine = {os.getpid()} | descendants(os.getpid(), table)
    return sum(table[pid][1] for pid in mine if pid in table)
