"""MLflow (the optional ``mlflow`` extra): log_model / load_model round trip, and autolog with our model classes
on its allowlist logging the model with its signature.  Skipped when mlflow is not installed."""

import pytest

from spark_bsvm import CSVC
from tests.conftest import rings_frame

mlflow = pytest.importorskip("mlflow")
pytestmark = pytest.mark.spark


@pytest.fixture()
def tracking(tmp_path, monkeypatch):
    """A local file store under tmp_path as the tracking URI, for one test (MLflow 3 wants an opt-in for it)."""
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri((tmp_path / "mlruns").as_uri())
    yield
    mlflow.set_tracking_uri(previous)


@pytest.fixture(scope="module")
def train(spark):
    return rings_frame(spark, 120, seed=41)[2]


def test_log_model_and_load_model_round_trip(train, tracking):
    import mlflow.spark

    model = CSVC(gamma=0.5, numPartitions=2, calibrationFraction=0.25).fit(train)
    with mlflow.start_run():
        info = mlflow.spark.log_model(model, "model", pip_requirements=["spark-bsvm"])  # no inference run
    loaded = mlflow.spark.load_model(info.model_uri)  # a PipelineModel holding our model
    assert type(loaded.stages[-1]) is type(model) and loaded.stages[-1].platt == model.platt
    expected = model.transform(train).select("rawPrediction", "probability", "prediction").collect()
    assert loaded.transform(train).select("rawPrediction", "probability", "prediction").collect() == expected


def test_autolog_logs_an_allowlisted_model_with_its_signature(train, tracking, monkeypatch):
    import mlflow.pyspark.ml

    # autolog infers the pip requirements in a subprocess that loads the model (~12 s): not what is tested
    monkeypatch.setattr(mlflow.models, "infer_pip_requirements", lambda *args, **kwargs: ["spark-bsvm"])

    mlflow.pyspark.ml.autolog(log_model_allowlist={"spark_bsvm.ml.estimators.*"}, log_datasets=False,
                              log_post_training_metrics=False)
    try:
        with mlflow.start_run() as run:
            CSVC(C=2.0, gamma=0.5, numPartitions=2).fit(train)
    finally:
        mlflow.pyspark.ml.autolog(disable=True)
    assert mlflow.get_run(run.info.run_id).data.params["C"] == "2.0"
    uri = f"runs:/{run.info.run_id}/model"
    signature = mlflow.models.get_model_info(uri).signature
    assert signature is not None and signature.inputs.input_names() == ["features"]  # the label is no input
    assert type(mlflow.spark.load_model(uri).stages[-1]).__name__ == "CSVCModel"
