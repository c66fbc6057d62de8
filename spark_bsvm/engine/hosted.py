"""A fit coordinated on the executors: partition 0's barrier task hosts the coordinator and runs the solver.

Under Spark Connect the client may be far from the cluster, so executors cannot reach a socket in the
client's process.  Then partition 0's task listens on its executor's address, computes its own partition
in-process (``TaskEngine``) and runs the same core training function the driver would run; the trained model
leaves the stage as that task's output row, with the solver's warnings.

The other tasks find it without a barrier sync (``meeting_place``): its host is partition 0's executor (in
every task's ``getTaskInfos()``) and its port the first free one of a few that the fit's secret and the stage's
id give (``MEETING_PORTS``), which every task works out alike.  A task tries them in turn until one
completes the handshake of that secret (``wire.greet``: the secret never sent, the coordinator's answer
bound to the port it listens on), so a port another service holds, another fit's coordinator, or a relay to
the coordinator from another port is passed over.  A barrier sync costs a fit ~1 s: Spark's task
checks a sync's reply once a second (``BarrierTaskContext.runBarrier`` sleeps 1 s between its checks).  The
fit's two syncs (partition 0 posting its address through ``allGather``, then every task telling the others
whether it had connected) took an ijcnn1 budget-L1 fit to 2.6-2.9 s, and the first alone to 1.5-1.9 s,
against 0.3-0.6 s coordinated by the driver (``bench/bench_coordinator_modes.py``).  A task that cannot
reach the coordinator ends with its own message (``task.reach_coordinator``), and this task, whose wait for it
then times out, with a message the driver shows only where no task said more (``stage.raise_task_errors``).

A lost task fails the whole barrier stage, this task included: the stage starts again
(``stage.TrainingData.run_stage``) and the fit starts over (the driver-side coordinator instead
resumes from its model), on other ports and with another secret (the new stage's), so that no task
of the new stage reaches a coordinator of the old one still shutting down.
"""

import contextlib
import errno
import hashlib
import hmac
import logging
import os
import signal
import socket
import time

from core.engine import Engine
from core.partition import function_name
from core.separation import warn_if_one_class
from spark_bsvm.engine import wire
from spark_bsvm.engine.blocks import partition_block, partition_rows
from spark_bsvm.engine.rounds import CONNECT_TIMEOUT, Coordinator, LostTask
from spark_bsvm.engine.stage import out_of_memory


# the ports partition 0's task may listen on: above Linux's ephemeral ports (32768-60999 by default), which the
# system gives outgoing connections, so that one rarely holds them
MEETING_PORTS = range(61000, 65536)
MEETING_CANDIDATES = 8  # ports tried, in a fit's own order: the first free one is taken
GREETING_TIMEOUT = 2.0  # seconds a task waits for the handshake on a port that accepted it before the next port
# seconds a task looks for the coordinating task while its ports refuse connections (that task may start later
# than this one: a barrier stage launches its tasks together, their Python workers start when they can), and
# the coordinating task waits for the others, 5 s more; CONNECT_TIMEOUT once a try fails otherwise
MEETING_TIMEOUT = 60.0


def meeting_place(context, secret):
    """(host, ports, the stage's secret) of the coordinator of a fit coordinated on the executors with the
    fit's ``secret``, as every task of the stage of ``context`` works it out alike: partition 0's executor,
    the ports to try in order, and the secret the tasks and the coordinator use in this stage (a barrier
    stage is not retried within its job: the fit starts another job, whose stage has another id)."""
    stage_secret = hmac.new(secret.encode(), f"stage {context.stageId()}".encode(), hashlib.sha256).hexdigest()
    digest = hmac.new(stage_secret.encode(), b"meeting ports", hashlib.sha256).digest()
    ports = [MEETING_PORTS[int.from_bytes(digest[2 * k:2 * k + 2], "big") % len(MEETING_PORTS)]
             for k in range(MEETING_CANDIDATES)]
    host = context.getTaskInfos()[0].address.rsplit(":", 1)[0]  # partition 0's executor, as the others know it
    return host.removeprefix("[").removesuffix("]"), list(dict.fromkeys(ports)), stage_secret  # IPv6's brackets off


def meeting_wait(spec):
    """``MEETING_TIMEOUT``, or a shorter one the test hook ``TaskSpec.fault_injection`` sets."""
    return (spec.fault_injection or {}).get("meeting_timeout", MEETING_TIMEOUT)


def _listen(host, ports, partitions, secret):
    """The coordinator of ``partitions``, listening on ``host`` at the first of ``ports`` that is free."""
    for port in ports:
        try:
            return Coordinator(host, partitions, secret, port=port)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:  # no port would do better: the host is not this one's, say
                raise
            problem = exc
    raise OSError(f"the task coordinating the fit cannot listen on {host} at any of ports "
                  f"{', '.join(map(str, ports))} (the last: {problem})")


def find_coordinating_task(host, ports, secret, pid, meeting_timeout=MEETING_TIMEOUT):
    """(a socket connected to the coordinator at ``host`` on one of ``ports``, greeted with ``secret`` as
    partition ``pid``'s task, None), or (None, the problem) once trying the ports in turn has found none: after
    ``meeting_timeout`` seconds while they refuse connections (the coordinating task may start listening after
    this task starts looking; a port held by another service or fit is passed over), after ``CONNECT_TIMEOUT``
    once a connection failed otherwise (no route, no answer).  Each try's connection and each of its reads wait
    at most what is left of that time (``GREETING_TIMEOUT`` at most).  The problem: the last port's OSError,
    with, where a port answered as a coordinator of another spark-bsvm version (``wire.OtherVersion``: this fit's,
    from an executor left with another version, or another application's), what it said and on which port
    (alone when that port's was the last).  The pause between passes grows from 5 to 100 ms."""
    start, pause, refused_only, problem, other_version = time.monotonic(), 0.005, True, None, None
    while True:
        for port in ports:
            left = (meeting_timeout if refused_only else min(meeting_timeout, CONNECT_TIMEOUT)) - (
                time.monotonic() - start)
            if left <= 0 and problem is not None:
                if other_version is not None:  # the last port's error beside it, unless it was that port's
                    beside = "" if problem is other_version[1] else f"{problem}; "
                    problem = ConnectionError(f"{beside}on port {other_version[0]} a coordinator answered, and "
                                              f"{other_version[1]}")
                return None, problem
            wait = min(GREETING_TIMEOUT, max(left, 0.01))
            try:
                sock = socket.create_connection((host, port), timeout=wait)
            except OSError as exc:  # nothing listens there (yet), or nothing answers
                problem, refused_only = exc, refused_only and isinstance(exc, ConnectionRefusedError)
                continue
            try:
                wire.greet(sock, secret, pid)
            except OSError as exc:  # another service, another fit's coordinator, or a handshake too slow
                sock.close()
                problem = exc
                if isinstance(exc, wire.OtherVersion):
                    other_version = port, exc
                continue
            sock.settimeout(None)
            return sock, None
        time.sleep(pause)
        pause = min(2 * pause, 0.1)


@contextlib.contextmanager
def _reported_memory():
    """Partition 0's own work in the coordinating task (its block, its part of a round): a MemoryError there is
    raised again with the message a task serving rounds reports for its own (``stage.out_of_memory``), so that
    the fit ends with the same error in both coordinator modes.  Another task's comes with that message
    already (``rounds.Coordinator.gather``)."""
    try:
        yield
    except MemoryError as exc:
        raise MemoryError(out_of_memory(exc)) from exc


class TaskEngine(Engine):
    """The Engine of the coordinating task: partition 0 in this process, the others over sockets."""

    def __init__(self, coordinator, data, spec):
        self.coordinator = coordinator
        self.data = data
        self.state = {}
        self.rounds = 0
        self.n_features, self.n_examples = spec.n_features, spec.n_examples
        self.classes, self.n_partitions, self.scale_gamma = list(spec.classes), spec.n_partitions, spec.scale_gamma
        self.n_validation = spec.n_validation
        self.fault_injection = spec.fault_injection

    def run(self, function, request, rebuild=None):
        # no rebuild here: a lost task ends the stage, and the restarted stage starts the fit over
        self.rounds += 1
        self.coordinator.send_all(dict(request, function=function_name(function)))
        with _reported_memory():
            self._inject_fault()
            self.state, own = function(self.data, self.state, request)
        others = self.coordinator.gather()
        return [own] + [others[pid] for pid in sorted(others)]

    def _inject_fault(self):
        """The test hook ``TaskSpec.fault_injection`` at the fit's ``injection["round"]``-th round, once (the
        marker then holds one byte): the coordinating task's Python worker dies mid-fit, as a lost executor's
        would, or with ``"memory"``, partition 0's part of the round raises a MemoryError."""
        injection = self.fault_injection
        if injection and self.rounds == injection["round"] and not os.path.exists(injection["marker"]):
            with open(injection["marker"], "w") as marker:
                marker.write("x")
            if injection.get("memory"):
                raise MemoryError("fault injected by a test")
            os.kill(os.getpid(), signal.SIGKILL)


class _Warnings(logging.Handler):
    """Keeps the messages of the warnings logged during the fit, for the driver to log again."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


class _NoOtherTasks:
    """The coordinator of a fit of one partition, whose coordinating task has no other task to meet: no
    listener, no port taken."""

    def accept_all(self, timeout):
        pass

    def send_all(self, message):
        pass

    def gather(self, timed=True):
        return {}

    def stop(self):
        pass

    def close(self):
        pass


def host_fit(context, batches, spec):
    """Coordinate the fit ``spec.fit`` from partition 0's task; the task's output row (the model or the
    error that ended the fit)."""
    if spec.n_partitions > 1:
        host, ports, secret = meeting_place(context, spec.secret)
        coordinator = _listen(host, ports, range(1, spec.n_partitions), secret)
    else:
        coordinator = _NoOtherTasks()
    try:
        try:  # a task that gives up sooner reports why in its own row
            coordinator.accept_all(timeout=meeting_wait(spec) + 5.0)
        except TimeoutError as exc:
            return {"error_type": type(exc).__name__, "error": str(exc)}
        warnings = _Warnings()
        logger = logging.getLogger("spark_bsvm")
        logger.addHandler(warnings)
        try:
            with _reported_memory():
                block = partition_block(partition_rows(batches), 0, spec.n_features, spec.classes, spec.has_weight,
                                        spec.has_validation, spec.dense)
            engine = TaskEngine(coordinator, block, spec)
            model = spec.fit.function(engine, **spec.fit.arguments)
            warn_if_one_class(engine, model)
        except LostTask:
            raise  # the stage is failing: it starts again as a whole
        except Exception as exc:  # a bug or bad input: the same again on a restart, so it ends the fit
            return {"error_type": type(exc).__name__, "error": str(exc)}
        finally:
            logger.removeHandler(warnings)
        return {"served": engine.rounds, "model": model.to_bytes(), "warnings": warnings.messages}
    finally:
        coordinator.stop()
        coordinator.close()
