"""What every barrier task of a fit runs: reach the coordinator, build its block, serve rounds.

The coordinator is on the driver (``TaskSpec.address``), or, in a fit coordinated on the executors
(``TaskSpec.fit``), in partition 0's task, which listens at a place every task works out from the fit's
secret (``hosted.meeting_place``) and runs the solver (``spark_bsvm.engine.hosted``).

Every task tries to connect (for at most ``rounds.CONNECT_TIMEOUT`` seconds; a coordinating task's ports that
refuse it, up to ``hosted.MEETING_TIMEOUT``), and proves it knows the fit's secret, and checks the
coordinator's proof of it, without sending it (``wire.greet``).  A task that cannot reach
the coordinator ends with an output row that names the address, the executor and the fix: a coordinator
on the driver sees a task of its stage end before all connected, stops the others and raises that
row's message; a coordinating task stops waiting for it a few seconds later, and the driver raises the
unreachable task's message (``stage.raise_task_errors``).

A task whose spec has no classes (``TaskSpec``) first checks its rows and sends the checks' groups,
then builds its block from the coordinator's answer (``wire.CHECKED``), or ends at ``wire.STOP``.

The task says hello before it builds its block, so that a problem with its rows reaches the
coordinator as a message, not as a failed task: a ``ValueError`` (bad input: an empty partition,
vectors of mixed sizes, NaN features, a partition function refusing its request) is sent as an error
frame ``{wire.ERROR: "ValueError", "message": ...}`` and the task then ends normally, so the stage
does not start again to fail again; so is a ``MemoryError`` of its block or of a round, which a new stage
over the same rows in the same memory would meet again (four restarts, then "lost four times", the cause
only in the executor's log).  Any other exception fails the task: the stage starts again, and a
coordinator on the driver rebuilds the new tasks' state from its model.  A connection closed before
the first round fails it with the address it reached (the coordinator refused the task, or another
service listens on that port), which the fit's error shows once its restarts are spent.
"""

import os
import socket
import time

from spark_bsvm.engine import wire
from spark_bsvm.engine.blocks import MISSING_PACKAGE, partition_block, partition_groups, partition_rows
from spark_bsvm.engine.hosted import (MEETING_PORTS, find_coordinating_task, host_fit, meeting_place,
                                     meeting_wait)
from spark_bsvm.engine.rounds import CONNECT_TIMEOUT
from spark_bsvm.engine.task_threads import use_task_cores
from spark_bsvm.engine.stage import (MISSING, UNREACHABLE, out_of_memory, output_batch, output_row, output_schema,
                                    record_batches)
from spark_bsvm.engine.worker_gc import freeze_at_task_start



def _this_task(context):
    """This task as its messages name it: by its executor's address."""
    return f"the training task on executor {context.getTaskInfos()[context.partitionId()].address}"


def _unreachable(context, where, exc, advice):
    """The message of a task that cannot reach the coordinator at ``where`` (``exc``: the last try's error)."""
    return f"{_this_task(context)} cannot reach the spark-bsvm coordinator at {where} ({exc}); {advice}"


def _other_version(context, where, exc):
    """The message of a task whose coordinator at ``where`` (the driver's) is of another version (``exc``)."""
    return f"{_this_task(context)} met the spark-bsvm coordinator at {where}, but {exc}"


def reach_coordinator(context, spec, pid):
    """(a socket connected to the fit's coordinator, the address it reached, None), or (None, None, the problem
    with the fix) when this task could not connect.  On the driver the handshake waits without a limit, as
    the rounds' requests do: a peer that closes first or does not prove the secret ends the task."""
    injection = spec.fault_injection or {}
    if spec.fit is not None:  # partition 0's task coordinates: found among the ports of the fit's meeting place
        host, ports, secret = meeting_place(context, spec.secret)
        if injection.get("unreachable") == pid:  # test hook: this task is told a port where nothing listens
            ports = [injection["port"]]
        sock, exc = find_coordinating_task(host, ports, secret, pid, meeting_wait(spec))
        if sock is None:
            return None, None, _unreachable(
                context, f"{host} on port {' or '.join(map(str, ports))}", exc,
                f"executors must be able to open TCP connections to each other on ports {MEETING_PORTS.start}-"
                f"{MEETING_PORTS.stop - 1}")
        address = sock.getpeername()[:2]
    else:
        address = spec.address
        if injection.get("unreachable") == pid:
            address = (address[0], injection["port"])
        try:
            sock = socket.create_connection(address, timeout=CONNECT_TIMEOUT)
        except OSError as exc:
            return None, None, _unreachable(
                context, f"{address[0]}:{address[1]}", exc,
                "executors must be able to open TCP connections to the driver's address on any port: open them, set "
                "spark.driver.host to an address the executors reach, or coordinate the fit on the executors with "
                "coordinatorMode='executor'")
        sock.settimeout(None)
        try:
            wire.greet(sock, spec.secret, pid)
        except wire.OtherVersion as exc:  # the same on every try: the task ends with the message, not restarted
            sock.close()
            return None, None, _other_version(context, f"{address[0]}:{address[1]}", exc)
        except OSError as exc:  # ConnectionError: it closed, or speaks no such handshake; PermissionError: a relay
            sock.close()
            raise _closed_early(address) from exc
    # frames go out in several writes (header, then large arrays): without NODELAY, Nagle holds the
    # second write until the first is acknowledged, and a delayed ACK costs 40 ms per round
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock, address, None


def _report(sock, exc):
    """Send ``exc`` as an error frame, then wait for the coordinator's next message (its round request or
    STOP) before the task ends: a socket closed any earlier could fail that send, and the coordinator
    would take the error for a lost task."""
    wire.send(sock, {wire.ERROR: type(exc).__name__, "message": out_of_memory(exc) if isinstance(exc, MemoryError)
                     else str(exc)})
    try:
        wire.recv(sock)
    except (ConnectionError, OSError):
        pass


def _faults(injection):
    """How many faults the test hook ``injection`` has made so far (the size of its marker file)."""
    return os.path.getsize(injection["marker"]) if os.path.exists(injection["marker"]) else 0


def _inject_fault(pid, served, injection):
    """The test hook ``TaskSpec.fault_injection``: partition 0's task fails at its ``injection["round"]``-th
    round (0: before it sends its checks), while the marker counts fewer faults than ``"times"``; with
    ``"memory"``, by a MemoryError."""
    if pid == 0 and served == injection.get("round") and _faults(injection) < injection.get("times", 1):
        with open(injection["marker"], "a") as marker:
            marker.write("x")  # one byte per fault
        raise (MemoryError if injection.get("memory") else RuntimeError)("fault injected by a test")


def _closed_early(address):
    """The error of a task whose connection to ``address`` closed before its first round, or whose peer there
    did not prove it knows the fit's secret."""
    return ConnectionError(f"the training task reached {address[0]}:{address[1]}, but the connection closed before "
                           "its first round: the spark-bsvm coordinator refused it, or something else listens there")


def _serve(context, batches, spec):
    """Serve the coordinator's rounds on this task's partition; the task's output row.  Each answer goes with
    the seconds its partition function took (``wire.WORK``: the coordinator's ``rounds.RoundTimes``)."""
    from core.partition import PARTITION_FUNCTIONS

    pid = context.partitionId()
    injection = spec.fault_injection or {}
    sock, address, problem = reach_coordinator(context, spec, pid)
    if problem:
        return {"error_type": UNREACHABLE, "error": problem}
    served = 0
    try:
        partition = partition_rows(batches)
        n_features, classes, dense = spec.n_features, spec.classes, spec.dense
        if classes is None:  # this task checks its rows; the coordinator judges every task's checks
            _inject_fault(pid, served, injection)
            start = time.perf_counter()
            groups = partition_groups(partition, pid)
            try:
                wire.send(sock, {wire.GROUPS: groups, wire.WORK: time.perf_counter() - start})
                checked = wire.recv(sock)
            except ConnectionError as exc:
                raise _closed_early(address) from exc
            if checked["function"] == wire.STOP:  # bad data, or rows to be dealt again first
                return {"served": 0}
            n_features, classes, dense = checked["n_features"], checked["classes"], checked["dense"]
        try:
            data = partition_block(partition, pid, n_features, classes, spec.has_weight, spec.has_validation, dense)
        except (ValueError, MemoryError) as exc:
            _report(sock, exc)
            data = None
        del partition  # the block holds the rows now: the Arrow batches must not stay beside it for the whole fit
        state = {}
        while data is not None:
            try:
                request = wire.recv(sock)
            except ConnectionError as exc:
                if served:  # the coordinator is gone mid-fit: the restarted stage resumes it
                    raise
                raise _closed_early(address) from exc
            name = request.pop("function")
            if name == wire.STOP:
                break
            served += 1
            start = time.perf_counter()
            try:
                _inject_fault(pid, served, injection)
                state, answer = PARTITION_FUNCTIONS[name](data, state, request)
            except (ValueError, MemoryError) as exc:
                _report(sock, exc)
                break
            wire.send(sock, dict(answer, **{wire.WORK: time.perf_counter() - start}))
    finally:
        sock.close()
    return {"served": served}


def run_task(spec, rows, input_schema=None):
    """One barrier task of the fit ``spec`` (a ``stage.TaskSpec``) over its ``rows`` (``stage.record_batches``
    with ``input_schema``): its output row, as a dict where ``input_schema`` is given, else as an Arrow batch."""
    from pyspark import BarrierTaskContext
    from threadpoolctl import threadpool_limits

    batches = record_batches(rows, input_schema)
    context = BarrierTaskContext.get()
    freeze_at_task_start(context)
    use_task_cores(context)
    # BLAS on one thread while the task serves rounds, as core's fits do (core.threads): its spinning
    # threads made each round of an SpSVM fit on ijcnn1 3.8 ms slower (bench/bench_engines.py)
    blas = threadpool_limits(limits=1, user_api="blas")
    try:
        if spec.fit is not None and context.partitionId() == 0:
            row = host_fit(context, batches, spec)
        else:
            row = _serve(context, batches, spec)
    finally:
        blas.restore_original_limits()
    row = output_row(**row)
    return row if input_schema is not None else output_batch(row)


def make_task(spec, input_schema=None):
    """The function every barrier task runs (``spec``: a ``stage.TaskSpec``), over the rows of
    ``stage.run_barrier_stage`` (``input_schema``: theirs).

    It refers to nothing of spark-bsvm by name: Spark ships it whole, ``spec`` travels as bytes, and the
    task imports this module itself.  An executor without spark-bsvm (or a package it needs) then
    ends its task at once with an output row that says so, where a reference to this module would
    fail to unpickle, deep in a Java trace, after the stage's restarts."""
    from pyspark import cloudpickle

    payload, schema, missing, missing_package = cloudpickle.dumps(spec), output_schema(), MISSING, MISSING_PACKAGE

    def task(rows):
        import pickle
        import socket

        try:
            from spark_bsvm.engine.task import run_task
            fit_spec = pickle.loads(payload)
        except ImportError as exc:
            error = missing_package.format(host=socket.gethostname(), error=exc)
            row = {"served": 0, "error_type": missing, "error": error, "model": None, "warnings": []}
            if input_schema is None:
                import pyarrow as pa

                row = pa.RecordBatch.from_pylist([row], schema=schema)
            yield row
            return
        yield run_task(fit_spec, rows, input_schema)

    return task
