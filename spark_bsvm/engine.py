"""SparkEngine: the partition functions of ``core.partition`` on Spark executors.

One fit is one long-lived barrier stage (``mapInArrow(..., barrier=True)``):
each task converts its partition once to numpy blocks, connects to a small
coordinator on the driver, and serves round requests until the fit ends.
Rounds cost a socket round trip, not a Spark job (see DESIGN.md for the
measured numbers).

Security: the coordinator listens only while a fit runs, on the driver's
address, and serves only tasks that present the per-fit secret; nothing is
ever unpickled (``spark_bsvm.wire``).

Fault tolerance: a barrier stage whose task fails is retried as a whole;
the new tasks connect again, and the driver re-sends the round as its
``rebuild`` request, which rebuilds each partition's state from the
driver's current model.  The fit resumes where it was.
"""

import logging
import os
import re
import secrets
import select
import socket
import sys
import threading
import time

import numpy as np

from core.engine import Engine
from core.labels import two_classes
from spark_bsvm import wire

log = logging.getLogger("spark_bsvm")

_STOP = "__stop__"
_ACCEPT_TIMEOUT = 600.0  # seconds to wait for all tasks of a stage to connect


class _Restart(Exception):
    """The barrier stage is being retried: its tasks must connect again."""


def default_spark_session():
    """The active SparkSession, spark-submit's, or a local one built for this machine.

    The local session uses every core (``local[*]``), the running Python
    for the workers, and 4g of driver memory unless ``SPARK_DRIVER_MEMORY``
    or ``spark.driver.memory`` says otherwise.
    """
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # started by spark-submit: its --master and --conf decide
        return SparkSession.builder.getOrCreate()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    return (SparkSession.builder.master("local[*]").appName("spark-bsvm")
            .config("spark.driver.memory", os.environ.get("SPARK_DRIVER_MEMORY", "4g"))
            .config("spark.ui.showConsoleProgress", "false")
            .getOrCreate())


def executor_slots(spark):
    """How many tasks can run at once: a barrier stage needs one slot per partition."""
    return spark.sparkContext.defaultParallelism


def check_barrier_possible(spark, num_partitions):
    """Refuse settings under which a barrier stage cannot start, with the fix."""
    conf = spark.sparkContext.getConf()
    if conf.get("spark.dynamicAllocation.enabled", "false").lower() == "true":
        raise ValueError(
            "spark-bsvm trains in one barrier stage, which Spark does not run with dynamic allocation: "
            "set spark.dynamicAllocation.enabled=false for this application")
    slots = executor_slots(spark)
    if num_partitions > slots:
        raise ValueError(
            f"numPartitions={num_partitions} exceeds the {slots} task slots of this application; a barrier "
            f"stage needs all its tasks running at once and would wait forever: use at most {slots} "
            "partitions or add executors/cores")


def _check_training_data(prepared, features_col, label_col, weight_col=None):
    """(the two label values, the row count) of the training data, or a ValueError naming the problem."""
    from pyspark.sql import functions as F

    bad_weight = F.lit(False)
    if weight_col:
        w = F.col("weight")
        bad_weight = w.isNull() | F.isnan(w) | (w <= 0) | (w == float("inf"))
    groups = prepared.groupBy("label").agg(
        F.count(F.lit(1)).alias("rows"), F.sum(F.col("features").isNull().cast("long")).alias("null_features"),
        F.sum(bad_weight.cast("long")).alias("bad_weights"),
    ).collect()
    n_rows = sum(g["rows"] for g in groups)
    if n_rows == 0:
        raise ValueError("the training data is empty: the DataFrame has no rows")
    null_labels = sum(g["rows"] for g in groups if g["label"] is None)
    if null_labels:
        raise ValueError(f"label column '{label_col}' has {null_labels} null value(s); drop or fill those rows")
    null_features = sum(g["null_features"] for g in groups)
    if null_features:
        raise ValueError(f"features column '{features_col}' has {null_features} null value(s); "
                         "drop or impute those rows")
    bad_weights = sum(g["bad_weights"] for g in groups)
    if bad_weights:
        raise ValueError(f"weight column '{weight_col}' has {bad_weights} value(s) that are null, NaN, infinite "
                         "or <= 0; instance weights must be positive finite numbers")
    return two_classes([g["label"] for g in groups]), int(n_rows)


def _rows_from_arrow(column, n_features):
    """A VectorUDT column (Arrow struct type/size/indices/values) as a dense array or CSR block."""
    import scipy.sparse as sp

    kinds = column.field("type").to_numpy(zero_copy_only=False)
    values = column.field("values")
    sizes = np.where(kinds == 1, values.value_lengths().to_numpy(zero_copy_only=False),
                     column.field("size").fill_null(0).to_numpy(zero_copy_only=False))
    if np.any(sizes != n_features):
        raise ValueError(f"feature vectors must all have {n_features} entries (the size of the first row), "
                         f"found sizes {sorted(set(sizes.tolist()) - {n_features})[:5]}; "
                         "assemble the features consistently")
    if np.all(kinds == 1):  # all dense
        flat = values.flatten().to_numpy(zero_copy_only=False)
        return np.ascontiguousarray(flat.reshape(len(column), n_features), dtype=np.float64)
    # CSR in one pass over Arrow's flattened lists: a sparse row brings its indices, a dense row
    # the positions 0..p-1; explicit zeros are dropped
    lengths = values.value_lengths().fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    data = values.flatten().to_numpy(zero_copy_only=False).astype(np.float64)
    row_of = np.repeat(np.arange(len(column)), lengths)
    starts = np.cumsum(lengths) - lengths
    indices = np.arange(data.size, dtype=np.int64) - starts[row_of]
    from_sparse = np.repeat(kinds == 0, lengths)
    indices[from_sparse] = column.field("indices").flatten().to_numpy(zero_copy_only=False)
    keep = data != 0.0
    indptr = np.concatenate([[0], np.cumsum(np.bincount(row_of[keep], minlength=len(column)))])
    return sp.csr_matrix((data[keep], indices[keep], indptr), shape=(len(column), n_features))


def _make_task(host, port, secret, n_features, classes, has_weight, fault_injection):
    """The function every barrier task runs; it captures plain locals only."""

    def task(batches):
        import numba
        import pyarrow as pa
        from pyspark import BarrierTaskContext

        from core.engine import PartitionData
        from core.partition import PARTITION_FUNCTIONS

        context = BarrierTaskContext.get()
        pid = context.partitionId()
        # numba's threads share the task's cores (spark.task.cpus), not the whole executor's
        numba.set_num_threads(max(1, min(context.cpus(), numba.config.NUMBA_NUM_THREADS)))
        batches = list(batches)
        table = pa.Table.from_batches(batches) if batches else None
        if table is None or table.num_rows == 0:
            raise ValueError(f"partition {pid} of the training data is empty: use fewer partitions")
        features = table.column("features").combine_chunks()
        rows = _rows_from_arrow(features, n_features)
        labels = np.asarray(table.column("label").to_pylist())
        y = np.where(labels == classes[1], 1.0, -1.0)
        weight = table.column("weight").to_numpy() if has_weight else np.ones(len(y))
        ids = (np.int64(pid) << 40) + np.arange(len(y), dtype=np.int64)
        data = PartitionData.build(rows, y, weight, ids)
        sock = socket.create_connection((host, port))
        try:
            wire.send_hello(sock, secret, pid)
            state, served = {}, 0
            while True:
                request = wire.recv(sock)
                name = request.pop("function")
                if name == _STOP:
                    break
                served += 1
                if fault_injection and pid == 0 and served == fault_injection["round"] \
                        and not os.path.exists(fault_injection["marker"]):
                    open(fault_injection["marker"], "w").close()
                    raise RuntimeError("fault injected by a test")
                state, answer = PARTITION_FUNCTIONS[name](data, state, request)
                wire.send(sock, answer)
        finally:
            sock.close()
        yield pa.RecordBatch.from_pydict({"served": [served]})

    return task


class SparkEngine(Engine):
    """Runs rounds on the partitions of a Spark DataFrame held by one barrier stage.

    ``df`` must have a vector column ``features_col``, a label column with
    exactly two values and optionally a positive weight column.  Use as a
    context manager (or call ``close``) so the stage and the coordinator end.
    ``fault_injection``: test hook, ``{"round": k, "marker": path}`` makes
    partition 0 fail once at its k-th round.
    """

    def __init__(self, df, features_col="features", label_col="label", weight_col=None, num_partitions=None,
                 fault_injection=None):
        from pyspark.sql import functions as F

        spark = df.sparkSession
        self.n_partitions = num_partitions or executor_slots(spark)
        check_barrier_possible(spark, self.n_partitions)
        columns = [F.col(features_col).alias("features"), F.col(label_col).alias("label")]
        if weight_col:
            columns.append(F.col(weight_col).cast("double").alias("weight"))
        prepared = df.select(*columns)
        self.classes, self.n_examples = _check_training_data(prepared, features_col, label_col, weight_col)
        self.n_features = int(prepared.select("features").first()["features"].size)
        self._secret = secrets.token_hex(32)
        host = spark.sparkContext.getConf().get("spark.driver.host", "127.0.0.1")
        self._listener = socket.create_server((host, 0))
        self._listener.settimeout(1.0)
        port = self._listener.getsockname()[1]
        task = _make_task(host, port, self._secret, self.n_features, self.classes, bool(weight_col),
                          fault_injection)
        if prepared.rdd.getNumPartitions() != self.n_partitions:
            prepared = prepared.repartition(self.n_partitions)  # deterministic on retry (sorted round robin)
        stage = prepared.mapInArrow(task, "served long", barrier=True)
        self._job_group = f"spark-bsvm-{self._secret[:12]}"
        self._job_error = None
        self._spark = spark

        def run_stage():
            spark.sparkContext.setJobGroup(self._job_group, "spark-bsvm fit", interruptOnCancel=True)
            try:
                # the shuffle after the barrier stage makes it a map stage: Spark retries failed barrier map
                # stages as a whole, but aborts the job when a barrier result stage fails
                stage.repartition(1).collect()
            except Exception as exc:  # reported to the driver loop
                self._job_error = exc

        self._thread = threading.Thread(target=run_stage, name="spark-bsvm-stage", daemon=True)
        self._thread.start()
        self._conns = {}
        try:
            self._accept_all()
        except BaseException:
            self.close()
            raise

    # ---- connections ------------------------------------------------------------------------

    def _check_stage(self):
        if self._job_error is not None:
            # a bad-input error raised in a task reaches us inside a Java stack trace: surface it
            found = re.search(r"ValueError: ([^\n]+)", str(self._job_error))
            if found:
                raise ValueError(found.group(1)) from self._job_error
            raise RuntimeError(f"the training stage failed: {self._job_error}") from self._job_error
        if not self._thread.is_alive():
            raise RuntimeError("the training stage ended before the fit did")

    def _accept_one(self):
        """An authenticated (partition id, socket) from the listener, or None (timeout or refused)."""
        try:
            conn, _ = self._listener.accept()
        except socket.timeout:
            return None
        conn.settimeout(10.0)
        try:
            pid = wire.recv_hello(conn, self._secret)
        except (PermissionError, ConnectionError, OSError) as exc:
            log.warning("refused a connection to the spark-bsvm coordinator: %s", exc)
            conn.close()
            return None
        conn.settimeout(None)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return pid, conn

    def _accept_all(self, first=None):
        """Drop the current tasks' sockets and wait until every partition's task has connected."""
        for conn in self._conns.values():
            conn.close()
        self._conns = dict([first]) if first else {}
        deadline = time.monotonic() + _ACCEPT_TIMEOUT
        while len(self._conns) < self.n_partitions:
            self._check_stage()
            if time.monotonic() > deadline:
                raise TimeoutError(f"only {len(self._conns)} of {self.n_partitions} tasks connected in "
                                   f"{_ACCEPT_TIMEOUT:.0f}s; check that executors can reach the driver")
            accepted = self._accept_one()
            if accepted:
                pid, conn = accepted
                if pid in self._conns:
                    self._conns[pid].close()
                self._conns[pid] = conn

    def _gather(self):
        """Answers of all partitions; _Restart if a task is lost or a retried task connects."""
        answers = {}
        pending = dict(self._conns)
        while pending:
            readable, _, _ = select.select(list(pending.values()) + [self._listener], [], [], 1.0)
            if not readable:
                self._check_stage()
                continue
            if self._listener in readable:
                accepted = self._accept_one()  # strangers are refused here and the round goes on
                if accepted:
                    raise _Restart(accepted)
            for pid, conn in list(pending.items()):
                if conn in readable:
                    try:
                        answers[pid] = wire.recv(conn)
                    except (ConnectionError, OSError) as exc:
                        raise _Restart() from exc
                    del pending[pid]
        return [answers[pid] for pid in sorted(answers)]

    # ---- Engine -----------------------------------------------------------------------------

    def run(self, function_name, request, rebuild=None):
        message = dict(request, function=function_name)
        for _ in range(4):
            try:
                for conn in self._conns.values():
                    wire.send(conn, message)
                return self._gather()
            except (_Restart, ConnectionError, OSError) as exc:
                if rebuild is None:
                    raise RuntimeError("a training task was lost and this round cannot rebuild its state")
                log.warning("a training task was lost; waiting for the retried stage to reconnect")
                self._accept_all(exc.args[0] if isinstance(exc, _Restart) and exc.args else None)
                message = dict(rebuild(), function=function_name)
        raise RuntimeError("training tasks were lost four times in one round; giving up")

    def close(self):
        """Stop the tasks, end the stage and close the coordinator (idempotent)."""
        for conn in self._conns.values():
            try:
                wire.send(conn, {"function": _STOP})
            except OSError:
                pass
        self._thread.join(timeout=60.0)
        if self._thread.is_alive():
            self._spark.sparkContext.cancelJobGroup(self._job_group)
            self._thread.join(timeout=60.0)
        for conn in self._conns.values():
            conn.close()
        self._conns = {}
        self._listener.close()
