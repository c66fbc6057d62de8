"""The Python workers' objects frozen at each task's start: skipped by the collection after the task, collected
whole every ``FULL_COLLECTION_EVERY`` tasks, frozen by the training tasks of a fit."""

import gc
import weakref

import pytest

from core.svc import fit_csvc
from core.synthetic import make_rings
from spark_bsvm.engine import worker_gc
from spark_bsvm.engine.training import train
from tests.conftest import to_df


class Task:
    """A ``TaskContext`` as ``freeze_long_lived`` sees one."""

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
    worker_gc.freeze_long_lived(Task(1))
    del node
    gc.collect()  # the daemon's collection after the task
    assert alive() is not None
    gc.unfreeze()
    gc.collect()
    assert alive() is None


def test_objects_made_during_a_task_are_not_frozen_by_its_later_calls():
    worker_gc.freeze_long_lived(Task(1))
    alive, node = cycle()
    worker_gc.freeze_long_lived(Task(1))  # a transform's next Arrow batch: the same task
    del node
    gc.collect()
    assert alive() is None
    assert worker_gc._worker == {"task": 1, "tasks": 1}


def test_a_full_collection_every_so_many_tasks_frees_what_was_frozen(monkeypatch):
    monkeypatch.setattr(worker_gc, "FULL_COLLECTION_EVERY", 3)
    alive, node = cycle()
    worker_gc.freeze_long_lived(Task(7))
    del node
    worker_gc.freeze_long_lived(Task(8))
    gc.collect()
    assert alive() is not None  # frozen at the first task, and the second did not thaw it
    worker_gc.freeze_long_lived(Task(9))
    assert alive() is None
    assert gc.get_freeze_count() > 0  # frozen again after the full collection
    assert worker_gc.FULL_COLLECTION_EVERY == 3 and worker_gc._worker["tasks"] == 3


def test_outside_a_task_nothing_is_frozen():
    worker_gc.freeze_long_lived(None)
    assert gc.get_freeze_count() == 0 and worker_gc._worker["tasks"] == 0


@pytest.mark.spark
def test_the_workers_of_a_fit_hold_frozen_objects(spark):
    """After a fit, a Python job of the same session finds the objects of a worker that ran one of its tasks
    frozen: its next task starts without waiting for a full collection.  (Idle workers are reused oldest first,
    so a worker of an earlier job may take one of the probe's two tasks, not both.)"""
    import pyarrow as pa

    X, y = make_rings(200, 4, seed=5)
    train(to_df(spark, X, y), fit_csvc, {"C": 1.0}, num_partitions=2)

    def frozen(batches):
        import gc

        for _ in batches:
            pass
        yield pa.RecordBatch.from_pydict({"frozen": [gc.get_freeze_count()]})

    counts = [row.frozen for row in spark.range(0, 2, 1, 2).mapInArrow(frozen, "frozen long").collect()]
    assert len(counts) == 2 and max(counts) > 0
