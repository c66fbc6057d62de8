"""Saving the trained model: a failed or killed save leaves the model saved before."""

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


def test_a_model_path_under_a_file_is_refused_before_the_fit(spark, tmp_path):
    """[output] model under a file failed in Hadoop's ParentNotDirectoryException when the fitted model was
    saved, after the whole fit."""
    (tmp_path / "runs").write_text("")
    with pytest.raises(ValueError, match=rf"\[output\] model {tmp_path}/runs/model cannot be written: "
                                         rf"{tmp_path}/runs is a file, not a folder; give a path under a folder"):
        check_replaceable(str(tmp_path / "runs" / "model"), SAVED_MODEL, "[output] model")
    check_replaceable(str(tmp_path / "new" / "model"), SAVED_MODEL, "[output] model")  # folders made as it saves
