"""What every barrier task of a fit runs: connect to the coordinator, build its block, serve rounds.

The task says hello before it builds its block, so that a problem with its rows reaches the driver as
a message, not as a failed task: a ``ValueError`` (bad input: an empty partition, vectors of mixed
sizes, NaN features, a partition function refusing its request) is sent as an error frame
``{ERROR: "ValueError", "message": ...}`` and the task then ends normally, so Spark does not retry
what would fail again.  Any other exception fails the task: Spark retries the stage, and the
coordinator rebuilds the new tasks' state from the driver's model.
"""

import os
import socket

import numpy as np

from spark_bsvm.engine import wire
from spark_bsvm.engine.blocks import rows_from_arrow

STOP = "__stop__"  # the function name that ends the task
ERROR = "__error__"  # key of an error frame: the exception's type name; "message" holds its text


def _block(batches, pid, n_features, classes, has_weight):
    """The partition's rows as a ``PartitionData`` (a ValueError names what is wrong with them)."""
    import pyarrow as pa

    from core.partition.data import PartitionData

    batches = list(batches)
    table = pa.Table.from_batches(batches) if batches else None
    if table is None or table.num_rows == 0:
        raise ValueError(f"partition {pid} of the training data is empty: use fewer partitions")
    rows = rows_from_arrow(table.column("features").combine_chunks(), n_features)
    labels = np.asarray(table.column("label").to_pylist())
    y = np.where(labels == classes[1], 1.0, -1.0)
    weight = table.column("weight").to_numpy() if has_weight else np.ones(len(y))
    ids = (np.int64(pid) << 40) + np.arange(len(y), dtype=np.int64)
    return PartitionData.build(rows, y, weight, ids)


def _report(sock, exc):
    """Send ``exc`` as an error frame, then wait for the coordinator's next message (its round request or
    STOP) before the task ends: a socket closed any earlier could fail that send, and the coordinator
    would take the error for a lost task."""
    wire.send(sock, {ERROR: type(exc).__name__, "message": str(exc)})
    try:
        wire.recv(sock)
    except (ConnectionError, OSError):
        pass


def make_task(host, port, secret, n_features, classes, has_weight, fault_injection):
    """The function every barrier task runs; it captures plain locals only."""

    def task(batches):
        import numba
        import pyarrow as pa
        from pyspark import BarrierTaskContext
        from threadpoolctl import threadpool_limits

        from core.partition import PARTITION_FUNCTIONS

        context = BarrierTaskContext.get()
        pid = context.partitionId()
        # numba's threads share the task's cores (spark.task.cpus), not the whole executor's
        numba.set_num_threads(max(1, min(context.cpus(), numba.config.NUMBA_NUM_THREADS)))
        # BLAS on one thread while the task serves rounds, as core's fits do (core.threads): its spinning
        # threads made each round of an SpSVM fit on ijcnn1 3.8 ms slower (bench/bench_engines.py)
        blas = threadpool_limits(limits=1, user_api="blas")
        sock = socket.create_connection((host, port))
        # frames go out in several writes (header, then large arrays): without NODELAY, Nagle holds the
        # second write until the first is acknowledged, and a delayed ACK costs 40 ms per round
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        served = 0
        try:
            wire.send_hello(sock, secret, pid)
            try:
                data = _block(batches, pid, n_features, classes, has_weight)
            except ValueError as exc:
                _report(sock, exc)
                data = None
            state = {}
            while data is not None:
                request = wire.recv(sock)
                name = request.pop("function")
                if name == STOP:
                    break
                served += 1
                if fault_injection and pid == 0 and served == fault_injection["round"] \
                        and not os.path.exists(fault_injection["marker"]):
                    open(fault_injection["marker"], "w").close()
                    raise RuntimeError("fault injected by a test")
                try:
                    state, answer = PARTITION_FUNCTIONS[name](data, state, request)
                except ValueError as exc:
                    _report(sock, exc)
                    break
                wire.send(sock, answer)
        finally:
            sock.close()
            blas.restore_original_limits()
        yield pa.RecordBatch.from_pydict({"served": [served]})

    return task
