"""SparkEngine against LocalEngine, fault tolerance and the coordinator's security."""

import logging
import socket

import numpy as np
import pytest

from core.engine import LocalEngine
from core.kernels import KernelSpec
from core.rows import to_dense
from core.svc import fit_budget_svm, fit_csvc
from core.synthetic import make_rings
from spark_bsvm.engine import SparkEngine, rounds, wire
from tests.conftest import rows_frame, to_df
from tests.spark_bsvm.engine.test_rounds import still_open

pytestmark = pytest.mark.spark
KERNEL = KernelSpec("rbf", gamma=0.5)
FITS = {
    "csvc": lambda engine: fit_csvc(engine, C=3.0, kernel=KERNEL, tol=1e-6, working_set_size=64),
    "budget_l1": lambda engine: fit_budget_svm(engine, budget=30, C=1.0, kernel=KERNEL, tol=1e-6,
                                               working_set_size=64),
    "budget_l2": lambda engine: fit_budget_svm(engine, budget=30, C=2.0, norm="l2", kernel=KERNEL, tol=1e-6,
                                               working_set_size=64),
}


@pytest.fixture(scope="module")
def data():
    return make_rings(600, 4, seed=11)


def _same_model(a, b, atol=1e-9):
    assert a.n_support == b.n_support
    np.testing.assert_array_equal(to_dense(a.support_vectors), to_dense(b.support_vectors))  # same support set
    np.testing.assert_allclose(a.coef, b.coef, rtol=0, atol=atol)
    assert a.bias == pytest.approx(b.bias, abs=atol)


@pytest.mark.parametrize("method", sorted(FITS))
def test_spark_fit_equals_local_fit(spark, data, method, caplog):
    """The same model; and the engine times every round and says where the time went when it closes."""
    caplog.set_level(logging.INFO)
    X, y = data
    numbers = []
    with SparkEngine(to_df(spark, X, y), num_partitions=2) as engine:
        assert (engine.n_examples, engine.n_features, engine.classes) == (600, 4, [-1.0, 1.0])
        on_spark = FITS[method](_with_hook(engine, numbers.append))
        times = engine.round_times.rounds
    local = FITS[method](LocalEngine(X, y, n_partitions=2))
    _same_model(on_spark, local)
    assert on_spark.metadata["rounds"] == local.metadata["rounds"]
    assert len(times) == len(numbers) >= on_spark.metadata["rounds"]  # budget-L2: the rounds of several solves
    assert all(seconds >= slowest >= mean > 0 for seconds, slowest, mean in times)
    rounds, seconds, slowest, mean = engine.round_times.totals(first=1)
    assert rounds == len(times) - 1 and seconds == pytest.approx(sum(t[0] for t in times[1:]))
    said = [r.getMessage() for r in caplog.records if "rounds after the first took" in r.getMessage()]
    assert said == [f"spark-bsvm fit: {rounds} rounds after the first took {seconds:.2f} s: the slowest task of each "
                    f"worked {slowest:.2f} s (of which {slowest - mean:.2f} s beyond the tasks' mean: partitions of "
                    f"uneven work), the wire {seconds - slowest:.2f} s"]


@pytest.mark.parametrize("zeros", [0.3, 0.7], ids=["dense-enough", "sparse"])
def test_rows_as_a_vector_assembler_makes_them_train_as_local_blocks_of_the_same_kind(spark, zeros):
    """Rows stored sparse and dense in turn (as VectorAssembler stores them, whichever is smaller): with at least
    half their values nonzero both engines train on dense blocks (``core.rows.dense_enough``), else on CSR
    blocks, and give the same model."""
    import scipy.sparse as sp
    from pyspark.ml.linalg import Vectors

    X, y = make_rings(300, 6, seed=5)
    X = X * (np.random.default_rng(5).random(X.shape) >= zeros)
    rows = [(Vectors.sparse(6, {j: v for j, v in enumerate(x) if v}) if i % 2 else Vectors.dense(x), float(label))
            for i, (x, label) in enumerate(zip(X, y))]
    df = rows_frame(spark, rows, {"features": "vector", "label": "double"})
    with SparkEngine(df, num_partitions=2) as engine:
        on_spark = FITS["csvc"](engine)
    local = FITS["csvc"](LocalEngine(sp.csr_matrix(X), y, n_partitions=2))
    assert sp.issparse(on_spark.support_vectors) == sp.issparse(local.support_vectors) == (zeros > 0.5)
    _same_model(on_spark, local)


def test_a_task_lost_mid_fit_resumes_to_the_same_model(spark, data, tmp_path):
    X, y = data
    marker = tmp_path / "fault-injected"

    def fit(engine):
        return fit_csvc(engine, C=3.0, kernel=KERNEL, tol=1e-9, working_set_size=64)

    with SparkEngine(to_df(spark, X, y), num_partitions=2,
                     fault_injection={"round": 4, "marker": str(marker)}) as engine:
        disturbed = fit(engine)
    assert marker.exists()  # the fault really happened
    # the rebuilt gradients differ from the incremental ones by rounding, so the solver's path may
    # differ below its tolerance: same support set, coefficients equal to the solver's accuracy
    undisturbed = fit(LocalEngine(X, y, n_partitions=2))
    _same_model(disturbed, undisturbed, atol=1e-7)
    assert np.array_equal(disturbed.predict(X), undisturbed.predict(X))


def test_a_task_lost_before_its_checks_reached_the_coordinator_is_checked_again(spark, data, tmp_path, caplog):
    """Partition 0's task fails before it sends its checks: the coordinator, still gathering them, waits for
    the restarted stage, whose tasks check their rows again; the fit is the undisturbed one."""
    X, y = data
    marker = tmp_path / "fault-injected"
    caplog.set_level(logging.INFO)
    with SparkEngine(to_df(spark, X, y), num_partitions=2,
                     fault_injection={"round": 0, "marker": str(marker)}) as engine:
        disturbed = fit_csvc(engine, C=3.0, kernel=KERNEL, tol=1e-9, working_set_size=64)
    assert marker.read_text() == "x"  # the fault really happened, once
    assert "restart 1 of at most" in caplog.text and "the training tasks checked 600 rows x 4 features" in caplog.text
    undisturbed = fit_csvc(LocalEngine(X, y, n_partitions=2), C=3.0, kernel=KERNEL, tol=1e-9, working_set_size=64)
    _same_model(disturbed, undisturbed, atol=1e-12)


def _with_hook(engine, hook):
    """``engine`` with ``hook(round number)`` called before each of its rounds."""
    run, count = engine.run, iter(range(1, 1 << 30))

    def hooked(function, request, rebuild=None):
        hook(next(count))
        return run(function, request, rebuild)

    engine.run = hooked
    return engine


STRANGE_HELLO = wire.HELLO.pack(wire.HANDSHAKE, bytes(16), 0, bytes(32))  # a hello of a wrong secret


def test_a_flood_of_strangers_during_a_fit_changes_nothing_and_is_never_waited_for(spark, data, monkeypatch,
                                                                                   caplog):
    """Idle connections, hellos cut short and wrong secrets arrive between rounds.  Their hello deadline is
    set beyond the fit's length: a round that waited for a stranger would wait that long, and would have
    closed it; every idle and slow stranger is still open and waiting when the fit ends."""
    monkeypatch.setattr(rounds, "HELLO_TIMEOUT", 600.0)
    X, y = data
    idle, slow, intruders = [], [], []

    def flood(round_number):
        if round_number > 10:
            return
        for _ in range(4):
            idle.append(socket.create_connection(address))
        slow.append(socket.create_connection(address))
        slow[-1].sendall(STRANGE_HELLO[:20])
        intruders.append(socket.create_connection(address))
        intruders[-1].sendall(STRANGE_HELLO)
        wire.send(intruders[-1], {"function": "dual_round"})

    with SparkEngine(to_df(spark, X, y), num_partitions=2) as engine:
        address = engine._coordinator.address
        model = FITS["csvc"](_with_hook(engine, flood))
        strangers = idle + slow
        assert len(strangers) == 50 and len(engine._coordinator.newcomers) == 50
        assert all(still_open(sock) for sock in strangers)  # none was read to its deadline
        assert not any(still_open(sock) for sock in intruders)  # refused at once
        assert engine._coordinator.refused == {"it presented a wrong secret": 10}
    local = FITS["csvc"](LocalEngine(X, y, n_partitions=2))
    _same_model(model, local)
    assert model.metadata["rounds"] == local.metadata["rounds"] > 10
    assert "refused a connection to the spark-bsvm coordinator: it presented a wrong secret" in caplog.text
    assert "refused 10 connections during the fit" in caplog.text
    for sock in strangers + intruders:
        sock.close()


def test_the_listener_closes_with_the_engine(spark, data):
    X, y = data
    engine = SparkEngine(to_df(spark, X, y), num_partitions=2)
    address = engine._coordinator.listener.getsockname()[:2]
    engine.close()
    with pytest.raises(OSError):
        socket.create_connection(address, timeout=2)


@pytest.mark.parametrize("rows, message", [
    ([([0.0, 1.0], 0.0), ([1.0, 2.0], 1.0), ([1.0, 2.0, 3.0], 1.0)],
     r"^features column 'features' holds vectors of different sizes \(2 to 3 entries\)"),
    ([([0.0, 1.0], 0.0), ([1.0, 2.0], 1.0), ([float("nan"), 1.0], 1.0)],
     r"^features column 'features' has 1 row\(s\) with NaN, infinite or null values"),
])
def test_bad_rows_are_refused_while_the_engine_is_made(spark, rows, message, caplog):
    """A frame whose partitions an adaptive plan's shuffle makes (Spark may merge them as it runs), dealt into
    the one task's: the coordinator's judgment of the task's checks gives the message, not a Java trace, before
    any round: no task fails, so none is retried (local[2,3] would)."""
    from pyspark.ml.linalg import Vectors

    df = spark.createDataFrame([(Vectors.dense(x), label) for x, label in rows], ["features", "label"])
    df = df.repartition("label")
    engine = None
    with caplog.at_level("INFO", logger="spark_bsvm"):
        with pytest.raises(ValueError, match=message) as raised:
            with SparkEngine(df, num_partitions=1) as engine:
                fit_csvc(engine, C=1.0, kernel=KERNEL)
    assert "Traceback" not in str(raised.value) and "at org.apache" not in str(raised.value)
    assert engine is None  # refused while the engine was being made: its stage and coordinator ended
    assert "makes as it runs; its rows are dealt into 1" in caplog.text and "connected" not in caplog.text


def test_the_tasks_own_checks_give_the_checks_jobs_figures(spark):
    """The figures the engine takes from its tasks' checks (no job of checks) are those of the checks' job."""
    from spark_bsvm.engine.stage import TrainingData

    X, y = make_rings(300, 5, seed=4)
    X[:, 2] = np.where(X[:, 2] > 0.3, X[:, 2], 0.0)  # zeros, so that the nonzeros count
    df = to_df(spark, X, y)
    checked = TrainingData(df, num_partitions=2)
    assert not checked.checks_in_stage
    with SparkEngine(df, num_partitions=2) as engine:
        assert engine._data.checks_in_stage
        for name in ("n_partitions", "n_examples", "n_features", "classes", "n_validation"):
            assert getattr(engine, name) == getattr(checked, name), name
        assert engine._data.dense == checked.dense and engine._data.partition_rows == checked.partition_rows
        assert engine.scale_gamma == pytest.approx(checked.scale_gamma, rel=1e-12)
        assert engine.scale_gamma == pytest.approx(1.0 / (5 * X.var()), rel=1e-12)


def _scala_items(seq):
    iterator = seq.iterator()
    while iterator.hasNext():
        yield iterator.next()


def _shown_outside_the_driver(spark):
    """The text the Spark UI, its REST API and the event log show of this application's jobs, stages and
    SQL queries, and the properties of its running jobs (what a job start event records)."""
    context, gateway = spark.sparkContext._jsc.sc(), spark.sparkContext._gateway
    store = context.statusStore()
    texts = []
    for job in _scala_items(store.jobsList(None)):
        texts += [job.name(), job.description().toString(), job.jobGroup().toString(), job.jobTags().toString()]
    for stage in _scala_items(store.stageList(None, False, False, gateway.new_array(gateway.jvm.double, 0), None)):
        texts += [stage.name(), stage.description().toString(), stage.details(), stage.failureReason().toString()]
    for query in _scala_items(spark._jsparkSession.sharedState().statusStore().executionsList()):
        texts += [query.description(), query.details(), query.physicalPlanDescription()]
    for job in _scala_items(context.dagScheduler().activeJobs()):
        texts.append(job.properties().toString())
    return "\n".join(text for text in texts if text)  # some are null (seen after the training tests' jobs)


def test_nothing_shown_outside_the_driver_carries_a_part_of_the_secret(spark, data, caplog):
    """Read during the fit (the training job runs) and after it, with the log at INFO."""
    caplog.set_level(logging.INFO)
    X, y = data
    shown = []
    with SparkEngine(to_df(spark, X, y), num_partitions=2) as engine:
        FITS["csvc"](_with_hook(engine, lambda round_number: round_number == 3 and shown.append(
            _shown_outside_the_driver(spark))))
        secret, group = engine._secret, engine._job_group
    shown += [_shown_outside_the_driver(spark), caplog.text]
    text = "\n".join(shown)
    # it is all there (the stage's description: its tasks check the rows, so it does not count them)
    assert group in text and "spark-bsvm fit (2 tasks)" in text and len(text) > 10_000
    pieces = {secret[i:i + 8] for i in range(len(secret) - 7)}  # 48 bits leaked before; 32 would be too many
    assert not [piece for piece in pieces if piece in text]


def test_four_lost_tasks_in_one_fit_resume_to_the_undisturbed_model(spark, data, tmp_path):
    """Partition 0's task fails at the 4th round of each attempt, four times: each time Spark aborts the
    barrier stage and the engine starts a new one, which resumes from the driver's model."""
    X, y = data
    marker = tmp_path / "faults-injected"

    def fit(engine):
        return fit_csvc(engine, C=3.0, kernel=KERNEL, tol=1e-9, working_set_size=64)

    with SparkEngine(to_df(spark, X, y), num_partitions=2,
                     fault_injection={"round": 4, "marker": str(marker), "times": 4}) as engine:
        disturbed = fit(engine)
    assert marker.read_text() == "xxxx"  # four faults really happened
    undisturbed = fit(LocalEngine(X, y, n_partitions=2))
    _same_model(disturbed, undisturbed, atol=1e-7)
    assert np.array_equal(disturbed.predict(X), undisturbed.predict(X))


def test_a_stage_that_ends_while_the_coordinator_looks_at_it_reports_its_error():
    """The stage's thread sets its error, then ends; the coordinator's check once read the error first and the
    thread's end second, so a stage ending in between gave "the training stage ended before the fit did" and
    lost the error.  Here the thread ends exactly there."""
    from types import SimpleNamespace

    failure = RuntimeError("Job aborted due to stage failure: the reason")
    engine = SimpleNamespace(_coordinator=SimpleNamespace(conns={}, partitions=[0, 1]), _job_error=None, _rows=None)

    def ending():  # the thread's last act, between the coordinator's two reads
        engine._job_error = failure
        return False

    engine._thread = SimpleNamespace(is_alive=ending)
    with pytest.raises(RuntimeError, match="^the training stage failed: Job aborted due to stage failure: the "
                                           "reason$") as raised:
        SparkEngine._check_stage(engine)
    assert raised.value.__cause__ is failure


@pytest.mark.parametrize("label_type", ["int", "decimal(3,1)", "string"])
def test_labels_of_any_type_train_through_the_tasks_own_checks_to_the_same_model(spark, label_type):
    """The label values travel from the tasks' checks to the coordinator as JSON: a decimal label (which JSON
    cannot carry) is read as a double, as MLlib reads labels; every type gives the double labels' model."""
    from pyspark.sql import functions as F

    X, y = make_rings(200, 4, seed=8)
    df = to_df(spark, X, (y > 0).astype(float))
    expected = fit_csvc(LocalEngine(X, y, n_partitions=2), C=1.0, kernel=KERNEL)
    typed = df.withColumn("label", F.col("label").cast(label_type))
    with SparkEngine(typed, num_partitions=2) as engine:
        assert engine._data.checks_in_stage
        model = fit_csvc(engine, C=1.0, kernel=KERNEL)
    _same_model(model, expected)
