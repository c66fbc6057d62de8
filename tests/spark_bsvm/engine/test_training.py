"""One fit in either coordinator mode: the same model, errors reported once, an unreachable coordinator
named at once."""

import contextlib
import logging
import os
import signal
import socket
import threading
import time

import numpy as np
import pytest

from core.engine import LocalEngine
from core.kernels import KernelSpec
from core.spsvm import fit_spsvm
from core.svc import fit_budget_svm, fit_csvc
from core.synthetic import make_rings
from spark_bsvm.engine import SparkEngine, training
from spark_bsvm.engine.rounds import Coordinator
from spark_bsvm.engine.session import tagged_job_stages
from spark_bsvm.engine.stage import stage_failure
from spark_bsvm.engine.training import resolve_mode, train
from tests.conftest import logged, to_df, wait_until

pytestmark = pytest.mark.spark
KERNEL = KernelSpec("rbf", gamma=0.5)
FITS = {
    "csvc": (fit_csvc, dict(C=3.0, kernel=KERNEL, tol=1e-6, working_set_size=64)),
    "spsvm": (fit_spsvm, dict(max_basis=10, lam=0.1, kernel=KERNEL, kappa=5, seed=3)),
}


@contextlib.contextmanager
def refused_port():
    """A port of 127.0.0.1 that refuses connections while the block runs: bound, never listening, so that no
    other socket takes it meanwhile (a port closed at once was once taken by Spark's own server in between)."""
    with socket.socket() as reserved:
        reserved.bind(("127.0.0.1", 0))
        yield reserved.getsockname()[1]


@pytest.fixture(scope="module")
def data(spark):
    X, y = make_rings(400, 4, seed=23)
    return X, y, to_df(spark, X, y)


@pytest.mark.parametrize("method", sorted(FITS))
def test_both_coordinator_modes_give_the_local_model(data, method, caplog):
    X, y, df = data
    function, arguments = FITS[method]
    local = function(LocalEngine(X, y, n_partitions=2), **arguments)
    caplog.clear()
    for mode in ("driver", "executor"):
        model = train(df, function, arguments, num_partitions=2, mode=mode)
        np.testing.assert_array_equal(model.support_vectors, local.support_vectors)
        np.testing.assert_allclose(model.coef, local.coef, rtol=0, atol=1e-9)
        assert model.bias == pytest.approx(local.bias, abs=1e-9)
        assert model.metadata.get("rounds") == local.metadata.get("rounds")
    said = [r.getMessage() for r in caplog.records if r.name == "spark_bsvm.progress"]
    assert said[:4] == ["spark-bsvm fit: the training tasks check their rows",
                        "spark-bsvm fit: starting 2 training tasks (each checks its rows, converts them and compiles "
                        "its kernels before the first round)",
                        "spark-bsvm fit: the training tasks checked 400 rows x 4 features",
                        "spark-bsvm fit: all 2 training tasks connected; training"]
    # the executor mode's fit: its checks' job, then the stage
    assert "spark-bsvm fit: checking the training data" in said
    assert ("spark-bsvm fit: starting 2 training tasks on 400 rows x 4 features (each converts its rows and "
            "compiles its kernels before the first round)") in said


def test_auto_mode_is_the_driver_on_classic_sessions(spark):
    assert resolve_mode(spark, "auto") == "driver" and resolve_mode(spark, "executor") == "executor"
    with pytest.raises(ValueError, match=r"coordinatorMode must be one of \('auto', 'driver', 'executor'\)"):
        resolve_mode(spark, "client")


def test_bad_rows_in_executor_mode_are_refused_by_the_checks_before_the_stage(spark):
    from pyspark.ml.linalg import Vectors

    rows = [(Vectors.dense([0.0, 1.0]), 0.0), (Vectors.dense([1.0, 2.0]), 1.0), (Vectors.dense([1.0, 2.0, 3.0]), 1.0)]
    df = spark.createDataFrame(rows, ["features", "label"])
    with pytest.raises(ValueError, match=r"^features column 'features' holds vectors of different sizes \(2 to 3 "
                                         r"entries\)") as raised:
        train(df, fit_csvc, dict(C=1.0, kernel=KERNEL), num_partitions=1, mode="executor")
    assert "Traceback" not in str(raised.value)


def test_two_fits_of_one_partition_share_two_slots_side_by_side(data):
    """What CrossValidator(parallelism=2) does with numPartitions = slots // parallelism: both barrier
    stages run at once on local[2] (each fit waits for the other to hold its task before it trains, so
    a fit that waited for the other's slots would break the barrier), and give the sequential models."""
    _, _, df = data
    together = threading.Barrier(2, timeout=120)

    def fit_when_both_run(name):
        function, arguments = FITS[name]

        def fit(engine, **kwargs):
            together.wait()  # the engine is up: its task holds a slot
            return function(engine, **kwargs)
        return train(df, fit, arguments, num_partitions=1, mode="driver")

    sequential = {name: train(df, *FITS[name], num_partitions=1, mode="driver") for name in FITS}
    concurrent, errors = {}, []

    def run(name):
        try:
            concurrent[name] = fit_when_both_run(name)
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(name,)) for name in FITS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not errors and not any(thread.is_alive() for thread in threads)
    for name in FITS:
        np.testing.assert_array_equal(concurrent[name].support_vectors, sequential[name].support_vectors)
        np.testing.assert_array_equal(concurrent[name].coef, sequential[name].coef)
        assert concurrent[name].bias == sequential[name].bias


def test_the_coordinating_tasks_warnings_reach_the_driver(data, caplog):
    X, y, df = data
    arguments = dict(budget=2, C=1.0, kernel=KERNEL, working_set_size=64)
    model = train(df, fit_budget_svm, arguments, num_partitions=2, mode="executor")
    assert model.n_support > 2 and caplog.text.count("budget-L1 SVM kept") == 1  # logged in the task, shown here


def test_tasks_that_cannot_reach_the_coordinator_fail_the_fit_with_the_fix(data, monkeypatch):
    _, _, df = data
    with refused_port() as port:
        # the tasks are told a port that refuses them (on spark.driver.host), as behind a firewall
        monkeypatch.setattr(Coordinator, "address", property(lambda self: ("127.0.0.1", port)))
        with pytest.raises(RuntimeError, match=rf"cannot reach the spark-bsvm coordinator at \S+:{port} .*"
                                               r"set spark.driver.host .* coordinatorMode='executor'"):
            with SparkEngine(df, num_partitions=2):
                pass


def test_one_task_that_cannot_reach_the_coordinator_ends_the_fit_with_its_message(data):
    """Partition 1 is told a closed port while partition 0 connects: the coordinator sees a task of its
    stage end, stops the connected one and raises the lost task's message (the coordinator's 600 s wait
    would end in a TimeoutError instead)."""
    _, _, df = data
    with refused_port() as port:
        with pytest.raises(RuntimeError, match=rf"cannot reach the spark-bsvm coordinator at [^ ]+:{port} "):
            with SparkEngine(df, num_partitions=2, fault_injection={"unreachable": 1, "port": port}):
                pass


def test_a_task_that_cannot_reach_the_coordinating_task_ends_the_fit_with_its_message(data):
    """Coordinated on the executors: partition 1 is told a closed port; its own message (the address, its
    executor, the fix) ends the fit, not the coordinating task's timeout while it waited for partition 1, and
    no stage starts again."""
    _, _, df = data
    with refused_port() as port:
        with pytest.raises(RuntimeError, match=rf"^the training task on executor \S+ cannot reach the spark-bsvm "
                                               rf"coordinator at \S+ on port {port} \(.*\); executors must be able "
                                               r"to open TCP connections to each other on ports 61000-65535$"):
            train(df, fit_csvc, dict(C=3.0, kernel=KERNEL), num_partitions=2, mode="executor",
                  fault_injection={"unreachable": 1, "port": port, "meeting_timeout": 1.0})


@contextlib.contextmanager
def foreign_server(monkeypatch, serve):
    """The port of a server that is not the fit's coordinator, where the tasks are sent while the block runs
    (on spark.driver.host), and which hands each connection to ``serve``; the connections are closed after."""
    with socket.create_server(("", 0)) as foreign:  # every address: the tasks are told spark.driver.host's
        port = foreign.getsockname()[1]
        monkeypatch.setattr(Coordinator, "address", property(lambda self: ("127.0.0.1", port)))
        stop, conns = threading.Event(), []

        def accept_each_connection():
            foreign.settimeout(0.2)
            while not stop.is_set():
                with contextlib.suppress(OSError):
                    conns.append(foreign.accept()[0])
                    serve(conns[-1])

        server = threading.Thread(target=accept_each_connection, daemon=True)
        server.start()
        try:
            yield port
        finally:
            stop.set()
            server.join()
            for conn in conns:
                conn.close()


def test_tasks_sent_to_a_server_that_is_not_the_coordinator_name_the_address(data, monkeypatch):
    """The tasks reach a server that accepts their connections and closes them unread (another service on that
    port): each fails with the address, and the fit (no restarts) ends with the task's exception
    first, in one line (its Java trace stays in the cause)."""
    _, _, df = data
    with foreign_server(monkeypatch, lambda conn: conn.close()) as port:
        with pytest.raises(RuntimeError, match=rf"^the training stage failed: ConnectionError: the training task "
                                               rf"reached \S+:{port}, but the connection closed before its "
                                               r"first round: the spark-bsvm coordinator refused it, or something "
                                               r"else listens there \(Spark: Job aborted due to stage failure: "
                                               r"[^\n]*\)$"):
            with SparkEngine(df, num_partitions=2, stage_restarts=0):
                pass


def test_tasks_that_meet_a_coordinator_of_another_version_end_the_fit_saying_so(data, monkeypatch):
    """The tasks reach a coordinator that greets with another spark-bsvm version's handshake (the first, of
    2026-11, as a driver left with it would, then waiting for a hello of its kind): the fit ends at once with
    the versions and the fix, in one line, though the stage may start again (a restart would meet the same
    versions)."""
    _, _, df = data
    with foreign_server(monkeypatch, lambda conn: conn.sendall(b"BSV1" + bytes(16))) as port:
        with pytest.raises(RuntimeError, match=rf"^the training task on executor \S+ met the spark-bsvm "
                                               rf"coordinator at \S+:{port}, but it speaks the handshake "
                                               r"'BSV1' of another spark-bsvm version, where this task speaks "
                                               r"'BSV2': the driver and the executors run different spark-bsvm "
                                               r"versions; install the driver's version on every node, or ship "
                                               r"it with --py-files \(README: Running on a cluster\)$"):
            with SparkEngine(df, num_partitions=2):
                pass


ABORTED = ("An error occurred while calling o164.collectToPython.\n: org.apache.spark.SparkException: Job aborted "
           "due to stage failure: ShuffleMapStage 4 has failed the maximum allowable number of times: 4.\n"
           "org.apache.spark.api.python.PythonException: [PYTHON_EXCEPTION] An exception was thrown from the Python "
           "worker: Traceback (most recent call last):\n  File \"task.py\", line 1, in task\n    serve()\n{raised}\n"
           " SQLSTATE: 38000\n\tat org.apache.spark.api.python.BasePythonRunner.read(PythonRunner.scala:1097)\n")

# a job cancelled with its job group, as Spark 4 words it: the JVM's trace of the scheduler that cancelled it follows
CANCELLED = ("An error occurred while calling o129.collectToPython.\n: org.apache.spark.SparkException: "
             "[SPARK_JOB_CANCELLED] Job 5 cancelled part of cancelled job group g1 SQLSTATE: XXKDA\n"
             "\tat org.apache.spark.errors.SparkCoreErrors$.sparkJobCancelled(SparkCoreErrors.scala:222)\n"
             "\tat org.apache.spark.scheduler.DAGScheduler.handleJobCancellation(DAGScheduler.scala:4404)\n"
             "\tat org.apache.spark.SparkContext.runJob(SparkContext.scala:2499)\n")


@pytest.mark.parametrize("message, expected", [
    (ABORTED.format(raised="ConnectionError: no coordinator here"),
     "ConnectionError: no coordinator here (Spark: Job aborted due to stage failure: ShuffleMapStage 4 has failed "
     "the maximum allowable number of times: 4.)"),
    (ABORTED.format(raised="OSError: inner\n\nThe above exception was the direct cause of the following exception:\n"
                           "\nTraceback (most recent call last):\n  File \"b.py\", line 2, in g\n    g()\n"
                           "RuntimeError: outer,\non two lines"),
     "RuntimeError: outer, on two lines (Spark: Job aborted due to stage failure: ShuffleMapStage 4 has failed the "
     "maximum allowable number of times: 4.)"),
    ("Job aborted due to stage failure: lost executors", "Job aborted due to stage failure: lost executors"),
    ("An error occurred while calling o1.collect.\n: Job 3 cancelled", "An error occurred while calling o1.collect."
                                                                        "\n: Job 3 cancelled"),
    (CANCELLED, "An error occurred while calling o129.collectToPython.\n: org.apache.spark.SparkException: "
                "[SPARK_JOB_CANCELLED] Job 5 cancelled part of cancelled job group g1 SQLSTATE: XXKDA"),
], ids=["task-error", "chained", "spark-only", "other", "cancelled"])
def test_a_failed_stage_is_told_by_the_tasks_exception_then_sparks_reason(message, expected):
    assert stage_failure(RuntimeError(message)) == expected


def test_a_lost_coordinating_task_restarts_the_fit_to_the_same_model(data, tmp_path):
    """The Python worker hosting the coordinator (executor mode) is killed at the fit's 5th round: Spark
    aborts the barrier stage, the fit starts a new one and starts over, to the same model."""
    _, _, df = data
    function, arguments = FITS["spsvm"]
    undisturbed = train(df, function, arguments, num_partitions=2, mode="executor")
    marker = tmp_path / "coordinator-killed"
    restarted = train(df, function, arguments, num_partitions=2, mode="executor",
                      fault_injection={"round": 5, "marker": str(marker)})
    assert marker.exists()  # the worker really died
    np.testing.assert_array_equal(restarted.support_vectors, undisturbed.support_vectors)
    np.testing.assert_array_equal(restarted.coef, undisturbed.coef)
    assert restarted.bias == undisturbed.bias


@pytest.mark.parametrize("mode", ["driver", "executor"])
def test_a_task_out_of_memory_ends_the_fit_at_once_naming_the_memory_and_the_fix(data, mode, tmp_path):
    """A MemoryError in a round would meet the same rows in the same memory in a new stage: four restarts, then
    "lost four times", the cause only in the executor's log.  The task reports it, and the fit ends with it: the
    same MemoryError in either mode (in the executor mode, the fault is in partition 0's own work, which the
    coordinating task runs)."""
    _, _, df = data
    marker = tmp_path / "faults-injected"
    with pytest.raises(MemoryError, match=r"^a training task on .+ ran out of memory \(MemoryError: fault "
                                          r"injected by a test\): give the executors' Python workers more memory "
                                          r"\(spark.executor.memory.*numPartitions\)$"):
        train(df, fit_csvc, dict(C=3.0, kernel=KERNEL, tol=1e-9, working_set_size=64), num_partitions=2, mode=mode,
              fault_injection={"round": 4, "marker": str(marker), "times": 4, "memory": True})
    assert marker.read_text() == "x"  # no stage started again


@pytest.mark.parametrize("mode", ["driver", "executor"])
def test_a_frame_coalesced_to_the_partition_count_is_dealt_again_for_the_barrier_stage(spark, data, mode, caplog):
    """Spark refuses a barrier stage over a coalesce even at the wanted count, when the job is submitted; the
    fit deals the coalesced partitions again and trains as on them repartitioned by hand (checkpointed first:
    Spark's optimizer would drop a coalesce below a repartition)."""
    X, y, _ = data
    coalesced = to_df(spark, X, y, n_partitions=4).coalesce(2)
    function, arguments = FITS["csvc"]
    with caplog.at_level(logging.INFO, logger="spark_bsvm.progress"):
        model = train(coalesced, function, arguments, num_partitions=2, mode=mode)
    assert "Spark refused a barrier stage over merged partitions (a coalesce?); the rows are dealt into 2 " \
           "partitions" in caplog.text
    reference = train(coalesced.localCheckpoint().repartition(2), function, arguments, num_partitions=2, mode=mode)
    np.testing.assert_array_equal(model.support_vectors, reference.support_vectors)
    np.testing.assert_allclose(model.coef, reference.coef, rtol=0, atol=1e-9)


def test_the_engine_names_its_own_rule_for_zero_weights(spark, data):
    X, y, _ = data
    weights = np.ones(len(y))
    weights[:3] = 0.0
    df = to_df(spark, X, y, weights=weights)
    with pytest.raises(ValueError, match=r"^weight column 'weight' has 3 weight\(s\) of 0: SparkEngine trains on "
                                         r"positive weights only; drop those rows"):
        train(df, *FITS["csvc"], weight_col="weight", num_partitions=2)


@pytest.mark.parametrize("mode", ["driver", "executor"])
def test_data_that_cannot_be_separated_is_reported_in_one_line(spark, data, mode, caplog):
    rows = np.tile([[0.5, -1.0, 2.0, 0.0]], (40, 1))  # one row, 20 times with each label
    labels = np.tile([0.0, 1.0], 20)
    model = train(to_df(spark, rows, labels), fit_csvc, FITS["csvc"][1], num_partitions=2, mode=mode)
    assert len(set(model.predict(rows).tolist())) == 1
    (warning,) = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warning == (f"the model predicts {float(model.predict(rows[:1])[0])!r} for all 40 training rows: it "
                       "separates nothing (rows with the same features and different labels, constant features, or "
                       "too few support vectors / too strong a regulariser for a rare class?)")
    caplog.clear()
    train(data[2], fit_csvc, FITS["csvc"][1], num_partitions=2, mode=mode)  # rings: both classes, no warning
    assert not [r for r in caplog.records if r.levelname == "WARNING"]


def training_job_at_work(spark, tag):
    """The job of a fit whose jobs carry ``tag`` (``training.fit_tag``) while its stage shows its 2 tasks at work,
    else None: the training stage, not the job of checks before it, whose stage the status tracker, which can lag
    seconds behind, may still show at work."""
    return next((job for job, _, stages in tagged_job_stages(spark, tag)
                 if any(stage.numActiveTasks == 2 for stage in stages)), None)


@pytest.mark.parametrize("mode", ["driver", "executor"])
def test_cancelling_the_caller_s_job_group_stops_the_fit_and_leaves_the_group(spark, mode, caplog, monkeypatch):
    """A notebook's cancel, a scheduler's timeout: the fit's jobs carry the caller's job group and tags (the
    driver mode's stage thread inherits them), which the fit's own label no longer replaced; the fit ran to
    its end after the cancel, and the executor mode's left the caller's thread without its group.  The fit's
    error says that the job was cancelled, without the JVM's trace of the scheduler that cancelled it."""
    X, y = make_rings(6000, 4, seed=5)  # uncancelled, ~17 s of rounds: longer than the status tracker may lag
    df = to_df(spark, X, y).cache()
    df.count()
    context, outcome = spark.sparkContext, {}
    # the driver mode's coordinator logs its tasks' connection here, in the training stage (the stage that checks
    # the rows and deals them again may come first); the executor mode's, in a task: its stage's start instead
    signal = "training tasks connected" if mode == "driver" else "starting 2 training tasks"

    def user_request():
        context.setJobGroup("user-request", "a notebook cell", interruptOnCancel=True)
        context.addJobTag("user-tag")
        try:
            train(df, fit_spsvm, dict(max_basis=2500, lam=1e-3, kernel=KERNEL, kappa=50, tol=0.0), num_partitions=2,
                  mode=mode)
            outcome["ended"] = "the fit ran to its end"
        except Exception as exc:  # the cancelled stage's error
            outcome["ended"], outcome["message"] = type(exc).__name__, str(exc)
        outcome["group"], outcome["tags"] = context.getLocalProperty("spark.jobGroup.id"), set(context.getJobTags())
        context.clearJobTags()
        context.setLocalProperty("spark.jobGroup.id", None)

    monkeypatch.setattr(training, "fit_tag", lambda: "cancelled-fit")
    try:
        with logged(signal) as started:
            request = threading.Thread(target=user_request)
            request.start()
            assert started.wait(120)
        if mode == "executor":  # the training stage running, its tasks at work (or the fit already over)
            wait_until(lambda: not request.is_alive() or training_job_at_work(spark, "cancelled-fit") is not None, 120)
        context.cancelJobGroup("user-request")
        request.join(60)
    finally:
        df.unpersist()
    assert not request.is_alive() and outcome["ended"] != "the fit ran to its end"
    # Spark's reason, without the JVM's trace of the scheduler that cancelled the job
    assert "cancelled" in outcome["message"] and "\tat " not in outcome["message"]
    assert outcome["group"] == "user-request" and outcome["tags"] == {"user-tag"}


@pytest.mark.parametrize("submitted_after", [0.0, 4.0])
def test_a_stage_kept_from_its_slots_times_out_saying_why_and_at_once(spark, data, monkeypatch, submitted_after):
    """Another job holds one of the two slots, so the barrier stage never starts: the timeout names that cause
    (it hinted at the network), and the fit ends with it (a minute of waiting for a stage with no task to
    stop came after).  Also when the stage's job is submitted only after the timeout (a loaded driver): the
    one cancel at the timeout found no job, and the job submitted after it waited a minute for its slots."""
    from spark_bsvm.engine import rounds, stage

    monkeypatch.setattr(rounds.Coordinator.accept_all, "__defaults__", (3.0,))
    submit = stage.run_barrier_stage

    def submitted_late(*args, **kwargs):
        time.sleep(submitted_after)
        return submit(*args, **kwargs)

    monkeypatch.setattr(stage, "run_barrier_stage", submitted_late)
    context = spark.sparkContext
    X, y, df = data

    def other_work():
        context.setJobGroup("other-work", "holds a slot")
        with contextlib.suppress(Exception):  # cancelled below
            context.parallelize([0], 1).map(lambda _: time.sleep(120)).collect()

    holder = threading.Thread(target=other_work, daemon=True)
    holder.start()
    tracker = context.statusTracker()
    assert wait_until(lambda: tracker.getJobIdsForGroup("other-work") and tracker.getActiveStageIds(), 120), \
        "the job holding a slot never ran"
    started = time.monotonic()
    try:
        with pytest.raises(TimeoutError, match=r"only 0 of 2 training tasks connected .* in 3s; a barrier stage starts "
                                               r"only once all its tasks have slots at once"):
            train(df, *FITS["csvc"], num_partitions=2, mode="driver")
        assert submitted_after <= time.monotonic() - started < 30  # the late submission did come
    finally:
        context.cancelJobGroup("other-work")
        holder.join(30)


def test_an_interrupt_of_the_caller_waiting_on_an_executor_coordinated_fit_cancels_its_stage(spark, monkeypatch):
    """Ctrl-C (a notebook's interrupt) while the caller's thread waits on the executor mode's training stage:
    pyspark's SIGINT handler cannot cancel the job from inside that thread's call into the JVM, so the stage went
    on holding every task slot until its fit ended, after the caller had its KeyboardInterrupt; the fit cancels
    it."""
    X, y = make_rings(6000, 4, seed=5)  # uncancelled, ~17 s of rounds: longer than the status tracker may lag
    df = to_df(spark, X, y).cache()
    df.count()
    tracker, interrupted, ended = spark.sparkContext.statusTracker(), [], threading.Event()
    monkeypatch.setattr(training, "fit_tag", lambda: "interrupted-fit")

    def interrupt_while_the_tasks_train(starting):
        while not (interrupted or ended.is_set()):
            job = training_job_at_work(spark, "interrupted-fit") if starting.is_set() else None
            if job is not None:
                interrupted.append(job)
                os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)

    try:
        with logged("starting 2 training tasks on") as starting:
            interrupter = threading.Thread(target=interrupt_while_the_tasks_train, args=(starting,), daemon=True)
            interrupter.start()
            with pytest.raises(KeyboardInterrupt):
                train(df, fit_spsvm, dict(max_basis=2500, lam=1e-3, kernel=KERNEL, kappa=50, tol=0.0),
                      num_partitions=2, mode="executor")
        interrupter.join(60)
        (job,) = interrupted
        wait_until(lambda: tracker.getJobInfo(job).status != "RUNNING", 120)  # by the cancel, or by the fit's end
        assert tracker.getJobInfo(job).status == "FAILED"
    finally:
        ended.set()
        df.unpersist()
