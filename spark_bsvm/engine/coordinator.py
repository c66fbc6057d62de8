"""SparkEngine: the partition functions of ``core.partition`` on Spark executors, coordinated by the driver.

One fit is one long-lived barrier stage (``stage.run_barrier_stage``):
each task connects to a small coordinator on the driver
(``spark_bsvm.engine.rounds``), checks its rows and sends what it found, which
the coordinator judges (``stage.TrainingData.judge``: the data's checks, with
no Spark job of their own before the stage), converts its partition once to
numpy blocks, and serves round requests until the fit ends.  Rounds cost a
socket round trip, not a Spark job (``bench/bench_engines.py`` measures what
a round costs beyond the partition work).

The coordinator listens only while a fit runs, on ``spark.driver.bindAddress``
(else ``spark.driver.host``, as Spark's own driver ports), tells the tasks to
connect to ``spark.driver.host``, and serves only tasks that present the
per-fit secret.

Fault tolerance: a barrier stage whose task fails is aborted as a whole
and started again (``stage_restarts`` times at most); the new tasks
connect again, and the driver re-sends the round as its ``rebuild``
request, which rebuilds each partition's state from the driver's current
model.  The fit resumes where it was.
"""

import logging
import secrets
import time

from pyspark import InheritableThread

from core.engine import Engine
from core.partition import function_name
from spark_bsvm.engine import wire
from spark_bsvm.engine.rounds import Coordinator, LostTask
from spark_bsvm.engine.session import cancel_jobs, stage_partly_ended
from spark_bsvm.engine.stage import STAGE_RESTARTS, TrainingData, failed_stage, raise_task_errors
from spark_bsvm.engine.task import make_task

log = logging.getLogger("spark_bsvm")


STAGE_END_SECONDS = 60.0  # seconds the driver waits for a stage to end after its fit (then cancels it)
CANCEL_POLL_SECONDS = 0.5  # how often ``SparkEngine.close`` cancels a stage that no task of it reached


def fit_tag():
    """A fresh tag for one fit's Spark jobs (shown in the UI: nothing of the secret)."""
    return f"spark-bsvm-fit-{secrets.token_hex(8)}"


class SparkEngine(Engine):
    """Runs rounds on the partitions of a Spark DataFrame held by one barrier stage.

    The arguments up to ``check_data`` are ``stage.TrainingData``'s.  Use as a context manager (or call
    ``close``) so the stage and the coordinator end.  ``description`` names the fit in the Spark UI.
    ``address``: the (host, port) the tasks connect to.
    ``validation_col``: ``stage.TrainingData``'s (the validation rows the engine's ``n_validation`` counts).
    ``shared_results``: ``stage.TrainingData``'s (the data's checks shared by the fits of one ``fitMultiple``).
    ``stage_restarts``: how many times the training stage is started again after a task was lost (Spark
    aborts the stage); the new tasks resume from the driver's model.  ``fault_injection``: test hook,
    ``{"round": k, "marker": path}`` makes partition 0 fail once at its k-th round (with ``"times": n``, at
    the k-th round of each attempt, n times in all); ``{"unreachable": pid, "port": port}`` sends partition
    pid's task to a closed port.
    ``round_times``: the ``rounds.RoundTimes`` of the rounds so far; when the engine closes, the progress
    log says where the rounds after the first spent their time.
    """

    def __init__(self, df, features_col="features", label_col="label", weight_col=None, num_partitions=None,
                 check_data=None, fault_injection=None, description="spark-bsvm fit",
                 stage_restarts=STAGE_RESTARTS, validation_col=None, shared_results=None):
        data = TrainingData(df, features_col, label_col, weight_col, num_partitions, check_data, description,
                            validation_col, shared_results, checks_in_stage=True)
        self._data, self._fault_injection, self._stage_restarts = data, fault_injection, stage_restarts
        self._spark, self._progress, self._description = data.spark, data.progress, description
        self._start_stage()
        if data.checks_in_stage:
            self._judge_checks()
        self.n_partitions, self.n_examples = data.n_partitions, data.n_examples
        self.n_features, self.classes, self.scale_gamma = data.n_features, data.classes, data.scale_gamma
        self.n_validation = data.n_validation
        data.progress.info("%s: all %d training tasks connected; training", description, self.n_partitions)

    def _start_stage(self):
        """Start the training stage over the fit's data, with a coordinator of its own, and wait until every
        task has connected."""
        data, fault_injection = self._data, self._fault_injection
        self._secret = secret = secrets.token_hex(32)
        self._job_group = tag = fit_tag()
        self._job_error = self._rows = None
        host = self._spark.conf.get("spark.driver.host", "127.0.0.1")
        bind = self._spark.conf.get("spark.driver.bindAddress", None) or host
        try:
            self._coordinator = Coordinator(bind, range(data.n_partitions), secret, check=self._check_stage)
        except OSError as exc:
            raise RuntimeError(f"cannot listen on {bind} (spark.driver.bindAddress, else spark.driver.host; {exc}): "
                               "this process is not where the Spark driver runs (a Spark Connect client?); "
                               "coordinate the fit on the executors with coordinatorMode='executor'") from exc
        self.address = address = (host, self._coordinator.address[1])  # where the tasks connect
        self.round_times, self._times_logged = self._coordinator.times, False

        def run_stage():
            try:  # each start of the stage takes the spec as it is then (the figures, once the checks are judged)
                self._rows = data.run_stage(
                    lambda input_schema: make_task(data.task_spec(secret, address=address,
                                                                  fault_injection=fault_injection), input_schema),
                    tag, self._stage_restarts)
            except Exception as exc:  # reported to the driver loop
                self._job_error = exc

        # the caller's job group and tags go with it (cancelling them stops the fit), as its scheduler pool does
        self._thread = InheritableThread(run_stage, name="spark-bsvm-stage", daemon=True, session=self._spark)
        self._thread.start()
        try:
            self._coordinator.accept_all()
        except BaseException:
            self.close()
            raise

    def _judge_checks(self):
        """Judge the checks the tasks made of their rows (``TrainingData.judge``: a ValueError names bad data),
        then tell the tasks what their blocks hold; when the rows must first be dealt again, end this stage and
        start one over the dealt rows (whose tasks get the figures in their spec)."""
        data = self._data
        try:
            for _ in range(4):
                try:
                    answers = self._coordinator.gather(timed=False)
                    break
                except LostTask:  # the restarted stage's tasks check their rows again
                    self._coordinator.accept_all()
            else:
                raise RuntimeError("training tasks were lost four times while they checked their rows; giving up")
            again = data.judge([g for pid in sorted(answers) for g in answers[pid][wire.GROUPS]])
        except BaseException:
            self.close()
            raise
        if again:
            self.close()
            self._progress.info("%s: the partitions were uneven or empty; the rows are dealt into %d partitions",
                                self._description, data.n_partitions)
            self._start_stage()
        else:
            self._progress.info("%s: the training tasks checked %d rows x %d features", self._description,
                                data.n_examples + data.n_validation, data.n_features)
            self._coordinator.send_all({"function": wire.CHECKED, "classes": data.classes,
                                        "n_features": data.n_features, "dense": data.dense})

    def _check_stage(self):
        tasks = len(self._coordinator.partitions)
        waiting = 0 < len(self._coordinator.conns) < tasks  # the barrier stage runs, tasks missing
        if waiting and self._thread.is_alive() and stage_partly_ended(self._spark, self._job_group):
            # a task ended without connecting, so it could not reach this coordinator; the connected
            # ones end on STOP, and the stage's rows name the problem
            self._coordinator.stop()
            self._thread.join(timeout=STAGE_END_SECONDS)
        if self._thread.is_alive():
            return
        # the stage has ended (its thread sets the error or the rows before it ends, so both are read after)
        if self._job_error is not None:  # bad input never gets here: tasks report it as an error frame
            raise failed_stage(self._job_error) from self._job_error
        raise_task_errors(self._rows or [])  # a task that could not reach the coordinator, say
        raise RuntimeError("the training stage ended before the fit did")

    def run(self, function, request, rebuild=None):
        name = function_name(function)  # the tasks look it up in the same table: no code on the wire
        message = dict(request, function=name)
        for _ in range(4):
            try:
                self._coordinator.send_all(message)
                answers = self._coordinator.gather()
                return [answers[pid] for pid in sorted(answers)]
            except (LostTask, ConnectionError, OSError):
                if rebuild is None:
                    raise RuntimeError("a training task was lost and this round cannot rebuild its state")
                log.warning("a training task was lost; waiting for the restarted stage to reconnect")
                self._coordinator.accept_all()
                message = dict(rebuild(), function=name)
        raise RuntimeError("training tasks were lost four times in one round; giving up")

    def close(self):
        """Stop the tasks, end the stage and close the coordinator (idempotent).  The stage gets
        ``STAGE_END_SECONDS`` to end, then is cancelled and gets as long again."""
        try:
            self._log_round_times()
            self._coordinator.stop()
            if self._coordinator.conns or self._coordinator.arrived:  # the tasks end on STOP
                self._thread.join(timeout=STAGE_END_SECONDS)
            else:  # no task to tell: the stage never started
                self._cancel_until_ended()
            if self._thread.is_alive():
                self._cancel()
                self._thread.join(timeout=STAGE_END_SECONDS)
        finally:
            self._coordinator.close()

    def _cancel_until_ended(self):
        """Cancel the stage's jobs every ``CANCEL_POLL_SECONDS`` until its thread ends, for at most
        ``STAGE_END_SECONDS``: a cancel before that thread has submitted the job finds none, and the job submitted
        after it would wait for its slots (a stage kept from them) until the next cancel."""
        deadline = time.monotonic() + STAGE_END_SECONDS
        while self._thread.is_alive() and time.monotonic() < deadline:
            self._cancel()
            self._thread.join(timeout=CANCEL_POLL_SECONDS)

    def _cancel(self):
        """Cancel the stage's jobs; a failure to cancel is logged at debug level, so that it never hides the error
        that ends the fit (a session stopping meanwhile: its jobs end with it)."""
        try:
            cancel_jobs(self._spark, self._job_group)
        except Exception as exc:
            log.debug("cancelling the training stage's jobs: %s", exc)

    def _log_round_times(self):
        """Log where the rounds after the first went, once."""
        rounds, seconds, slowest, mean = self.round_times.totals(first=1)
        if rounds and not self._times_logged:
            self._times_logged = True
            self._progress.info(
                "%s: %d rounds after the first took %.2f s: the slowest task of each worked %.2f s (of which "
                "%.2f s beyond the tasks' mean: partitions of uneven work), the wire %.2f s",
                self._description, rounds, seconds, slowest, slowest - mean, seconds - slowest)
