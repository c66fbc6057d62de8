"""SparkEngine against LocalEngine, fault tolerance and the coordinator's security."""

import socket

import numpy as np
import pytest

from core.engine import LocalEngine
from core.kernels import KernelSpec
from core.svc import fit_budget_svm, fit_csvc
from core.synthetic import make_rings
from spark_bsvm.engine import SparkEngine, wire
from tests.conftest import to_df

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
    np.testing.assert_array_equal(a.support_vectors, b.support_vectors)  # same support set
    np.testing.assert_allclose(a.coef, b.coef, rtol=0, atol=atol)
    assert a.bias == pytest.approx(b.bias, abs=atol)


@pytest.mark.parametrize("method", sorted(FITS))
def test_spark_fit_equals_local_fit(spark, data, method):
    X, y = data
    with SparkEngine(to_df(spark, X, y), num_partitions=2) as engine:
        assert (engine.n_examples, engine.n_features, engine.classes) == (600, 4, [-1.0, 1.0])
        on_spark = FITS[method](engine)
    local = FITS[method](LocalEngine(X, y, n_partitions=2))
    _same_model(on_spark, local)
    assert on_spark.metadata["rounds"] == local.metadata["rounds"]


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


def test_coordinator_refuses_a_connection_without_the_secret(spark, data, caplog):
    X, y = data
    with SparkEngine(to_df(spark, X, y), num_partitions=2) as engine:
        host, port = engine._coordinator.listener.getsockname()[:2]
        intruder = socket.create_connection((host, port))
        wire.send_hello(intruder, "0" * 64, 0)
        wire.send(intruder, {"function": "dual_round"})
        model = FITS["csvc"](engine)  # the fit refuses the intruder and goes on undisturbed
        intruder.settimeout(5)
        try:
            closed = intruder.recv(1) == b""
        except ConnectionResetError:
            closed = True
        assert closed  # the coordinator hung up on it
        intruder.close()
    _same_model(model, FITS["csvc"](LocalEngine(X, y, n_partitions=2)))
    assert "wrong secret" in caplog.text


def test_the_listener_closes_with_the_engine(spark, data):
    X, y = data
    engine = SparkEngine(to_df(spark, X, y), num_partitions=2)
    address = engine._coordinator.listener.getsockname()[:2]
    engine.close()
    with pytest.raises(OSError):
        socket.create_connection(address, timeout=2)


@pytest.mark.parametrize("rows, message", [
    ([([0.0, 1.0], 0.0), ([1.0, 2.0], 1.0), ([1.0, 2.0, 3.0], 1.0)],
     r"^feature vectors must all have 2 entries \(the size of the first row\), found sizes \[3\]"),
    ([([0.0, 1.0], 0.0), ([1.0, 2.0], 1.0), ([float("nan"), 1.0], 1.0)], "rows contain NaN or infinity"),
])
def test_bad_rows_are_reported_by_their_task_once_without_retries(spark, rows, message):
    """The task's own message, not a Java trace, and no failed attempt (local[2,3] would retry it)."""
    from pyspark.ml.linalg import Vectors

    df = spark.createDataFrame([(Vectors.dense(x), label) for x, label in rows], ["features", "label"])
    engine = None
    with pytest.raises(ValueError, match=message) as raised:
        with SparkEngine(df, num_partitions=1) as engine:
            fit_csvc(engine, C=1.0, kernel=KERNEL)
    assert "Traceback" not in str(raised.value) and "at org.apache" not in str(raised.value)
    tracker = spark.sparkContext.statusTracker()
    jobs = tracker.getJobIdsForGroup(engine._job_group)
    stages = [tracker.getStageInfo(stage) for job in jobs for stage in tracker.getJobInfo(job).stageIds]
    assert jobs and sum(stage.numFailedTasks for stage in stages if stage) == 0
    assert engine._coordinator.listener.fileno() == -1 and not engine._thread.is_alive()


def test_the_job_group_shows_nothing_of_the_secret(spark, data):
    X, y = data
    with SparkEngine(to_df(spark, X, y), num_partitions=2) as engine:
        assert engine._secret[:6] not in engine._job_group and engine._job_group.startswith("spark-bsvm-fit-")
