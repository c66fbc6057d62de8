"""SparkEngine: the partition functions of ``core.partition`` on Spark executors.

One fit is one long-lived barrier stage (``mapInArrow(..., barrier=True)``):
each task converts its partition once to numpy blocks, connects to a small
coordinator on the driver, and serves round requests until the fit ends.
Rounds cost a socket round trip, not a Spark job (``bench/bench_engines.py``
measures what a round costs beyond the partition work).

Security: the coordinator listens only while a fit runs, on the driver's
address, and serves only tasks that present the per-fit secret; nothing is
ever unpickled (``spark_bsvm.engine.wire``).

Fault tolerance: a barrier stage whose task fails is retried as a whole;
the new tasks connect again, and the driver re-sends the round as its
``rebuild`` request, which rebuilds each partition's state from the
driver's current model.  The fit resumes where it was.
"""

import logging
import secrets
import select
import socket
import threading
import time

from core.engine import Engine
from core.partition import function_name
from spark_bsvm.engine import wire
from spark_bsvm.engine.blocks import check_schema, check_training_data
from spark_bsvm.engine.session import cancel_jobs, check_barrier_possible, executor_slots, tagged_jobs
from spark_bsvm.engine.task import ERROR, STOP, make_task

log = logging.getLogger("spark_bsvm")

_ACCEPT_TIMEOUT = 600.0  # seconds to wait for all tasks of a stage to connect


class _Restart(Exception):
    """The barrier stage is being retried: its tasks must connect again."""


class SparkEngine(Engine):
    """Runs rounds on the partitions of a Spark DataFrame held by one barrier stage.

    ``df`` must have a vector column ``features_col``, a label column with
    exactly two values and optionally a positive weight column.  Use as a
    context manager (or call ``close``) so the stage and the coordinator end.
    ``fault_injection``: test hook, ``{"round": k, "marker": path}`` makes
    partition 0 fail once at its k-th round.
    """

    def __init__(self, df, features_col="features", label_col="label", weight_col=None, num_partitions=None,
                 check_data=None, fault_injection=None):
        from pyspark.ml.linalg import Vector
        from pyspark.sql import functions as F

        spark = df.sparkSession
        check_schema(df, features_col, label_col, weight_col)
        self.n_partitions = num_partitions or executor_slots(spark)
        check_barrier_possible(spark, self.n_partitions)
        columns = [F.col(features_col).alias("features"), F.col(label_col).alias("label")]
        if weight_col:
            columns.append(F.col(weight_col).cast("double").alias("weight"))
        prepared = df.select(*columns)
        self.classes, self.n_examples, input_partitions = check_training_data(prepared, features_col, label_col,
                                                                              weight_col)
        first = prepared.select("features").first()["features"]
        if isinstance(first, Vector):
            self.n_features = int(first.size)
        else:  # an array column: the tasks read it as list<double>, dense rows
            self.n_features = len(first)
            prepared = prepared.withColumn("features", F.col("features").cast("array<double>"))
        if check_data is not None:  # the caller's checks of the data's shape, before the stage holds the slots
            check_data(self.n_features, self.classes)
        self._secret = secrets.token_hex(32)
        host = spark.conf.get("spark.driver.host", "127.0.0.1")
        self._listener = socket.create_server((host, 0))
        self._listener.settimeout(1.0)
        port = self._listener.getsockname()[1]
        task = make_task(host, port, self._secret, self.n_features, self.classes, bool(weight_col),
                          fault_injection)
        if input_partitions != self.n_partitions:
            prepared = prepared.repartition(self.n_partitions)  # deterministic on retry (sorted round robin)
        stage = prepared.mapInArrow(task, "served long", barrier=True)
        self._job_group = f"spark-bsvm-fit-{secrets.token_hex(8)}"  # shown in the UI: nothing of the secret
        self._job_error = None
        self._spark = spark

        def run_stage():
            try:
                with tagged_jobs(spark, self._job_group, "spark-bsvm fit"):
                    # the shuffle after the barrier stage makes it a map stage: Spark retries failed barrier
                    # map stages as a whole, but aborts the job when a barrier result stage fails
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
        if self._job_error is not None:  # bad input never gets here: tasks report it as an error frame
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
                    if ERROR in answers[pid]:  # the task's rows or request are bad: retrying cannot help
                        raise ValueError(answers[pid]["message"])
                    del pending[pid]
        return [answers[pid] for pid in sorted(answers)]

    # ---- Engine -----------------------------------------------------------------------------

    def run(self, function, request, rebuild=None):
        name = function_name(function)  # the tasks look it up in the same table: no code on the wire
        message = dict(request, function=name)
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
                message = dict(rebuild(), function=name)
        raise RuntimeError("training tasks were lost four times in one round; giving up")

    def close(self):
        """Stop the tasks, end the stage and close the coordinator (idempotent)."""
        for conn in self._conns.values():
            try:
                wire.send(conn, {"function": STOP})
            except OSError:
                pass
        self._thread.join(timeout=60.0)
        if self._thread.is_alive():
            cancel_jobs(self._spark, self._job_group)
            self._thread.join(timeout=60.0)
        for conn in self._conns.values():
            conn.close()
        self._conns = {}
        self._listener.close()
