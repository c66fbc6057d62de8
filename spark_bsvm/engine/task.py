"""What every barrier task of a fit runs: build its block, connect to the coordinator, serve rounds."""

import os
import socket

import numpy as np

from spark_bsvm.engine import wire
from spark_bsvm.engine.blocks import rows_from_arrow

STOP = "__stop__"  # the function name that ends the task


def make_task(host, port, secret, n_features, classes, has_weight, fault_injection):
    """The function every barrier task runs; it captures plain locals only."""

    def task(batches):
        import numba
        import pyarrow as pa
        from pyspark import BarrierTaskContext
        from threadpoolctl import threadpool_limits

        from core.partition import PARTITION_FUNCTIONS
        from core.partition.data import PartitionData

        context = BarrierTaskContext.get()
        pid = context.partitionId()
        # numba's threads share the task's cores (spark.task.cpus), not the whole executor's
        numba.set_num_threads(max(1, min(context.cpus(), numba.config.NUMBA_NUM_THREADS)))
        batches = list(batches)
        table = pa.Table.from_batches(batches) if batches else None
        if table is None or table.num_rows == 0:
            raise ValueError(f"partition {pid} of the training data is empty: use fewer partitions")
        features = table.column("features").combine_chunks()
        rows = rows_from_arrow(features, n_features)
        labels = np.asarray(table.column("label").to_pylist())
        y = np.where(labels == classes[1], 1.0, -1.0)
        weight = table.column("weight").to_numpy() if has_weight else np.ones(len(y))
        ids = (np.int64(pid) << 40) + np.arange(len(y), dtype=np.int64)
        data = PartitionData.build(rows, y, weight, ids)
        # BLAS on one thread while the task serves rounds, as core's fits do (core.threads): its spinning
        # threads made each round of an SpSVM fit on ijcnn1 3.5 ms slower (bench/bench_engines.py)
        blas = threadpool_limits(limits=1, user_api="blas")
        sock = socket.create_connection((host, port))
        try:
            wire.send_hello(sock, secret, pid)
            state, served = {}, 0
            while True:
                request = wire.recv(sock)
                name = request.pop("function")
                if name == STOP:
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
            blas.restore_original_limits()
        yield pa.RecordBatch.from_pydict({"served": [served]})

    return task
