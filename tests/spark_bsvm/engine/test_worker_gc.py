"""The Python workers' objects frozen at each task's start: skipped by the collection after the task, collected
whole every ``FULL_COLLECTION_EVERY`` tasks; frozen by a fit's training tasks and by a transform's."""

import gc
import weakref

import pytest

from core.svc import fit_csvc
from core.synthetic import make_rings
from spark_bsvm.engine import worker_gc
from spark_bsvm.engine.training import train
from tests.conftest import to_df


class Task:
    """A ``TaskContext`` as ``freeze_at_task_start`` sees one."""

    def __init__(self, attempt):
        self.attempt = attempt

    def taskAttemptId(self):
        return self.attempt


class Node:
    """An object that can sit in a reference cycle (the collector tracks it)."""


@pytest.fixture(autouse=True)
def fresh_worker(monkeypatch):
    """This process as a worker that has run no task yet; everything thawed again after the test."""
    monkeypatch.setattr(worker_gc, "_worker", {"task": None, "tasks": 0})
    gc.unfreeze()
    yield
    gc.unfreeze()


def cycle():
    """A weak reference to an object in a reference cycle, and the object (held by the caller until it drops it)."""
    node = Node()
    node.loop = node
    return weakref.ref(node), node


def test_a_cycle_alive_at_a_task_start_outlives_the_collections_after_it():
    alive, node = cycle()
    worker_gc.freeze_at_task_start(Task(1))
    del node
    gc.collect()  # the daemon's collection after the task
    assert alive() is not None
    gc.unfreeze()
    gc.collect()
    assert alive() is None


def test_objects_made_during_a_task_are_not_frozen_by_its_later_calls():
    worker_gc.freeze_at_task_start(Task(1))
    alive, node = cycle()
    worker_gc.freeze_at_task_start(Task(1))  # a transform's next Arrow batch: the same task
    del node
    gc.collect()
    assert alive() is None
    assert worker_gc._worker == {"task": 1, "tasks": 1}


def test_a_full_collection_every_so_many_tasks_frees_what_was_frozen(monkeypatch):
    monkeypatch.setattr(worker_gc, "FULL_COLLECTION_EVERY", 3)
    alive, node = cycle()
    worker_gc.freeze_at_task_start(Task(7))
    del node
    worker_gc.freeze_at_task_start(Task(8))
    gc.collect()
    assert alive() is not None  # frozen at the first task, and the second did not thaw it
    worker_gc.freeze_at_task_start(Task(9))
    assert alive() is None
    assert gc.get_freeze_count() > 0  # frozen again after the full collection


def test_outside_a_task_nothing_is_frozen():
    worker_gc.freeze_at_task_start(None)
    assert gc.get_freeze_count() == 0 and worker_gc._worker["tasks"] == 0


def probe_workers(spark, thaw=False):
    """The frozen objects of the session's SQL Python workers, one count per task of a job of 8 tasks (with
    ``thaw``, each task first thaws its worker's objects).  Spark hands out its idle workers oldest first, so
    the tasks go round every idle worker (this session runs at most two tasks at once)."""
    import pyarrow as pa

    def count(batches):
        import gc

        for _ in batches:
            pass
        if thaw:
            gc.unfreeze()
        yield pa.RecordBatch.from_pydict({"frozen": [gc.get_freeze_count()]})

    return [row.frozen for row in spark.range(0, 8, 1, 8).mapInArrow(count, "frozen long").collect()]


@pytest.fixture
def thawed_workers(spark):
    """The Python workers of ``spark`` with nothing frozen (checked)."""
    probe_workers(spark, thaw=True)
    assert max(probe_workers(spark)) == 0


@pytest.mark.spark
def test_the_training_tasks_freeze_their_workers_objects(spark, thawed_workers):
    X, y = make_rings(200, 4, seed=5)
    train(to_df(spark, X, y), fit_csvc, {"C": 1.0}, num_partitions=2)
    assert max(probe_workers(spark)) > 0


@pytest.mark.spark
def test_a_transform_freezes_its_workers_objects(spark):
    from spark_bsvm import CSVC

    X, y = make_rings(200, 4, seed=5)
    df = to_df(spark, X, y)
    model = CSVC(C=1.0, numPartitions=2).fit(df)
    probe_workers(spark, thaw=True)
    assert max(probe_workers(spark)) == 0
    model.transform(df).select("prediction").collect()
    assert max(probe_workers(spark)) > 0
