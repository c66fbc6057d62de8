"""A fit coordinated on the executors: partition 0's barrier task hosts the coordinator and runs the solver.

Under Spark Connect the client may be far from the cluster, so executors cannot reach a socket in the
client's process.  Then partition 0's task listens on its executor's address, posts it to the other
tasks through ``BarrierTaskContext.allGather``, computes its own partition in-process
(``TaskEngine``) and runs the same core training function the driver would run; the trained model
leaves the stage as that task's output row, with the solver's warnings.

That ``allGather`` is the fit's one barrier sync: Spark's task checks a sync's reply once a second
(``BarrierTaskContext.runBarrier`` sleeps 1 s between its checks), so each sync costs a fit ~1 s.  A task that
cannot reach the coordinator ends with its own message (``task.reach_coordinator``), and this task, whose wait
for it then times out, with a message the driver shows only where no task said more
(``stage.raise_task_errors``): the fit's second sync, in which every task told the others whether it had
connected, is gone: an ijcnn1 budget-L1 fit 1.5-1.9 s, where it took 2.6-2.9 s, against 0.3-0.6 s coordinated by
the driver (``bench/bench_coordinator_modes.py``).

A lost task fails the whole barrier stage, this task included: the stage starts again
(``stage.TrainingData.run_stage``) and the fit starts over (the driver-side coordinator instead
resumes from its model).
"""

import contextlib
import json
import logging
import os
import signal

from core.engine import Engine
from core.partition import function_name
from core.separation import warn_if_one_class
from spark_bsvm.engine.blocks import partition_block, partition_rows
from spark_bsvm.engine.rounds import CONNECT_TIMEOUT, Coordinator, LostTask
from spark_bsvm.engine.stage import out_of_memory


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


def host_fit(context, batches, spec):
    """Coordinate the fit ``spec.fit`` from partition 0's task; the task's output row (the model or the
    error that ended the fit)."""
    host = context.getTaskInfos()[0].address.rsplit(":", 1)[0]  # this executor, as the others know it
    coordinator = Coordinator(host, range(1, spec.n_partitions), spec.secret)
    try:
        context.allGather(json.dumps(list(coordinator.address)))
        try:  # a task that gives up sooner reports why in its own row
            coordinator.accept_all(timeout=CONNECT_TIMEOUT + 5.0)
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
