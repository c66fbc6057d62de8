"""Saving the trained model: a failed or killed save leaves the model saved before, and overlapping saves
leave one whole model."""

import os

import pytest
from pyspark.ml import PipelineModel
from pyspark.ml.feature import StandardScaler

from spark_bsvm.app.training_run import SAVED_MODEL, check_replaceable, save_replacing

pytestmark = pytest.mark.spark


class HalfWritten:
    """A model whose save writes part of a directory and fails: a full disk, a killed executor."""

    def write(self):
        return self

    def save(self, path):
        os.makedirs(os.path.join(path, "stages"))
        raise RuntimeError("No space left on device")


@pytest.fixture
def pipeline(spark):
    from pyspark.ml.linalg import Vectors

    frame = spark.createDataFrame([(Vectors.dense([1.0, 2.0]),), (Vectors.dense([3.0, 5.0]),)], ["features"])
    return lambda: PipelineModel([StandardScaler(inputCol="features", outputCol="scaled").fit(frame)])


def test_a_save_replaces_the_model_and_leaves_nothing_beside_it(tmp_path, pipeline):
    path = str(tmp_path / "my model")
    first, second = pipeline(), pipeline()
    save_replacing(first, path)
    save_replacing(second, path)
    assert PipelineModel.load(path).stages[0].uid == second.stages[0].uid
    assert os.listdir(tmp_path) == ["my model"]


def test_a_failed_save_keeps_the_model_saved_before(tmp_path, pipeline):
    path = str(tmp_path / "model")
    good = pipeline()
    save_replacing(good, path)
    with pytest.raises(RuntimeError, match="No space left"):
        save_replacing(HalfWritten(), path)
    assert PipelineModel.load(path).stages[0].uid == good.stages[0].uid  # Spark's overwrite() had deleted it
    assert os.listdir(tmp_path) == ["model"]


class _Overlapped:
    """A Hadoop filesystem after whose first rename of ``path`` aside (a run replacing the model there) the one
    function left in ``pending`` runs (a whole save of another run to the same path): two runs' steps
    interleaved."""

    def __init__(self, filesystem, path, pending):
        self._filesystem, self._path, self._pending = filesystem, path, pending

    def __getattr__(self, name):  # everything but rename as the filesystem's own
        return getattr(self._filesystem, name)

    def rename(self, source, target):
        renamed = self._filesystem.rename(source, target)
        if self._pending and source.toUri().getPath() == self._path:
            self._pending.pop()()
        return renamed


def test_overlapping_saves_to_one_path_leave_one_whole_model(tmp_path, pipeline, monkeypatch):
    """Two runs saving one model at once: the second moves the first's new model into place between the
    first's two renames.  The last one's whole model stays, with nothing beside it or inside it, where the
    first one's rename moved its model into the second's (a stray folder: the next run refused the path)."""
    from spark_bsvm.app import training_run

    path = str(tmp_path / "model")
    save_replacing(pipeline(), path)
    first, second = pipeline(), pipeline()
    hadoop_filesystem = training_run._hadoop_filesystem

    pending = [lambda: save_replacing(second, path)]

    def overlapped(at):
        hadoop_path, target, filesystem = hadoop_filesystem(at)
        return hadoop_path, target, _Overlapped(filesystem, path, pending)

    monkeypatch.setattr(training_run, "_hadoop_filesystem", overlapped)
    save_replacing(first, path)
    monkeypatch.undo()
    assert sorted(os.listdir(path)) == ["metadata", "stages"]
    assert PipelineModel.load(path).stages[0].uid == first.stages[0].uid
    assert os.listdir(tmp_path) == ["model"]
    check_replaceable(path, SAVED_MODEL, "[output] model")


def test_a_model_path_under_a_file_is_refused_before_the_fit(spark, tmp_path):
    """[output] model under a file failed in Hadoop's ParentNotDirectoryException when the fitted model was
    saved, after the whole fit."""
    (tmp_path / "runs").write_text("")
    with pytest.raises(ValueError, match=rf"\[output\] model {tmp_path}/runs/model cannot be written: "
                                         rf"{tmp_path}/runs is a file, not a folder; give a path under a folder"):
        check_replaceable(str(tmp_path / "runs" / "model"), SAVED_MODEL, "[output] model")
    check_replaceable(str(tmp_path / "new" / "model"), SAVED_MODEL, "[output] model")  # folders made as it saves
