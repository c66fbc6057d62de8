"""evaluate and predict on a model saved by the train job; the report's plot with and without matplotlib."""

import json
import os
import re
import sys
import time

import numpy as np
import pytest
from pyspark.ml import PipelineModel

from jobs import evaluate, predict, retrain, train
from spark_bsvm.app import cli, training_run
from tests.conftest import wait_until

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def trained(spark, job_cwd, tmp_path_factory):
    """A small quick-start model saved by jobs/train.py, with the error it printed."""
    out = tmp_path_factory.mktemp("trained")
    model = str(out / "model")
    args = ["--set", "data.rows=900", "--set", "model.params.spsvm.maxBasis=30"]
    train.main(args + ["--set", f"output.model={model}"])
    return args, model, out


def test_evaluate_reproduces_the_train_split_and_writes_report_and_plot(trained, capsys, tmp_path):
    args, model, out = trained
    capsys.readouterr()
    assert evaluate.main(["--config", train.DEFAULT_CONFIG, "--model", model] + args + [
        "--set", f"output.report={tmp_path}/eval.json", "--set", f"output.plot={tmp_path}/curve.png"]) == 0
    text = capsys.readouterr().out
    report = json.loads((tmp_path / "eval.json").read_text())
    assert f"test error: {100 * report['test_error']:.2f}%" in text
    assert report["training"]["method"] == "spsvm" and report["training_seconds"] > 0
    curve = report["error_vs_support"]
    # the final model, scored on the same test rows as the report's error
    assert curve["model"][0][0] == report["support_size"] and abs(curve["model"][0][1] - report["test_error"]) < 1e-12
    # SpSVM-2 records its path: the model at each basis size, the last one the model itself; no pruning curve
    assert [s for s, _ in curve["recorded"]][-1] == report["support_size"] and len(curve["recorded"]) > 5
    assert abs(curve["recorded"][-1][1] - report["test_error"]) < 1e-12 and curve["pruned"] == []
    if _has_matplotlib():
        assert (tmp_path / "curve.png").read_bytes()[:4] == b"\x89PNG"


def _has_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def test_evaluate_refuses_a_report_path_it_cannot_write_before_spark_starts(monkeypatch, capsys, tmp_path):
    """The report was written after the model was read and scored: a path under a file ended in a traceback."""
    (tmp_path / "a file").write_text("")
    monkeypatch.setattr(cli, "session", lambda: pytest.fail("Spark was started"))
    assert cli.run(evaluate.main, ["--config", train.DEFAULT_CONFIG, "--model", str(tmp_path / "model"), "--set",
                                   f"output.report={tmp_path}/a file/eval.json"]) == cli.EXIT_BAD_INPUT
    assert f"[output] report {tmp_path}/a file/eval.json cannot be written: {tmp_path}/a file is a file" in \
        capsys.readouterr().err


def test_evaluate_refuses_test_labels_the_model_does_not_know(spark, trained, capsys, tmp_path):
    """Labels coded otherwise than in training (1 and 2 against 0 and 1) were all counted as a class of the model's:
    a test error, and a retraining decision, about another question, exit 0."""
    from core.synthetic import make_rings

    args, model, _ = trained
    X, y = make_rings(200, 10, seed=3)
    rows = [(*map(float, x), 2.0 if label > 0 else 1.0) for x, label in zip(X, y)]
    spark.createDataFrame(rows, [f"x{j}" for j in range(10)] + ["label"]).write.parquet(str(tmp_path / "coded"))
    assert cli.run(evaluate.main, ["--config", train.DEFAULT_CONFIG, "--model", model, "--set", "data.source=parquet",
                                   "--set", f"data.path={tmp_path}/coded", "--set", "data.label_column=label",
                                   "--set", f"output.report={tmp_path}/e.json"]) == cli.EXIT_BAD_INPUT
    assert "error: the test rows hold the label 2.0, and the model knows the labels 0.0 and 1.0: code the labels " \
           "as the training data did" in capsys.readouterr().err
    assert not (tmp_path / "e.json").exists()


def test_the_plot_is_skipped_with_a_note_without_matplotlib(trained, capsys, tmp_path, monkeypatch):
    args, model, _ = trained
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    assert evaluate.main(["--config", train.DEFAULT_CONFIG, "--model", model] + args + [
        "--set", f"output.plot={tmp_path}/curve.png", "--set", f"output.report={tmp_path}/e.json"]) == 0
    assert "plot skipped: matplotlib is not installed (pip install -e '.[plot]')" in capsys.readouterr().out
    assert not (tmp_path / "curve.png").exists()
    assert json.loads((tmp_path / "e.json").read_text())["error_vs_support"]["recorded"]


def test_predict_writes_a_prediction_and_decision_per_row(spark, trained, capsys, tmp_path):
    args, model, _ = trained
    assert predict.main(["--config", train.DEFAULT_CONFIG, "--model", model, "--output",
                         str(tmp_path / "scores")] + args) == 0
    assert re.search(r"^900 rows scored", capsys.readouterr().out, re.M)
    rows = spark.read.parquet(str(tmp_path / "scores")).collect()
    assert all((r["decision"] > 0) == (r["prediction"] == 1.0) for r in rows)
    assert sum(r["prediction"] == r["label"] for r in rows) / len(rows) > 0.7


def test_predict_replaces_its_scores_but_refuses_a_directory_holding_anything_else(spark, trained, capsys, tmp_path):
    """--output out/quickstart (the folder of the model being scored) deleted the model, its report and plot, and
    exited 0: Spark's overwrite replaces whatever directory it is given."""
    args, model, out = trained
    scores = str(tmp_path / "scores")
    for _ in range(2):  # a second run replaces the scores of the first
        assert predict.main(["--config", train.DEFAULT_CONFIG, "--model", model, "--output", scores] + args) == 0
    assert spark.read.parquet(scores).count() == 900
    capsys.readouterr()
    assert cli.run(predict.main, ["--config", train.DEFAULT_CONFIG, "--model", model, "--output", str(out)] + args
                   ) == cli.EXIT_BAD_INPUT
    assert capsys.readouterr().err == (f"error: --output {out} holds model, which is not scores written by "
                                       "jobs/predict.py: the job replaces that directory whole and would delete "
                                       "them; give a new directory\n")
    assert PipelineModel.load(model).stages[-1].numSupportVectors > 0


def test_predict_refuses_an_output_holding_spark_parquet_data_that_is_not_scores(spark, trained, capsys, tmp_path):
    """--output naming the input's own Parquet folder (part files and _SUCCESS, as the scores' are) replaced the
    user's rows with their scores, exit 0."""
    args, model, _ = trained
    rows = str(tmp_path / "rows.parquet")
    spark.createDataFrame([(float(i), float(i % 2)) for i in range(6)], ["x0", "label"]).write.parquet(rows)
    assert cli.run(predict.main, ["--config", train.DEFAULT_CONFIG, "--model", model, "--output", rows] + args
                   ) == cli.EXIT_BAD_INPUT
    assert capsys.readouterr().err == (f"error: --output {rows} holds Parquet data of the columns ['x0', 'label'], "
                                       "not scores written by jobs/predict.py (label, prediction, decision): the job "
                                       "replaces that directory whole and would delete them; give a new directory\n")
    assert spark.read.parquet(rows).columns == ["x0", "label"] and spark.read.parquet(rows).count() == 6


def test_a_predict_run_failing_while_it_writes_keeps_the_scores_before(spark, trained, tmp_path, monkeypatch):
    """Spark's overwrite deleted the scores of the run before as its job started: a run whose write failed (a
    lost executor, a full disk, a kill) left none.  The new scores are written beside them and renamed into place
    once whole."""
    from pyspark.sql import functions as F

    args, model, _ = trained
    scores = str(tmp_path / "scores")
    assert predict.main(["--config", train.DEFAULT_CONFIG, "--model", model, "--output", scores] + args) == 0
    frames = type(spark.range(1))  # the session's own DataFrame class, which defines write
    write = frames.write
    failing = F.udf(lambda: 1 // 0, "int")  # fails in the write's tasks
    monkeypatch.setattr(frames, "write", property(lambda frame: write.fget(frame.withColumn("lost", failing()))))
    with pytest.raises(Exception, match="ZeroDivisionError"):
        predict.main(["--config", train.DEFAULT_CONFIG, "--model", model, "--output", scores] + args)
    monkeypatch.undo()
    assert spark.read.parquet(scores).count() == 900
    assert sorted(os.listdir(tmp_path)) == ["scores"]


def test_a_failed_write_s_folder_goes_once_its_other_tasks_have_ended(spark, tmp_path):
    """A write whose job failed while another of its tasks ran on: that task, which Spark's kill reached only later,
    made its folders in the new directory after the run had deleted it, and the directory stayed beside the
    output.  The run now waits for the failed job's tasks to end before it deletes the directory."""
    attempts, done, written = tmp_path / "attempts", tmp_path / "done", tmp_path / "written"
    written.mkdir()

    def write(staged):
        def task(index, rows):
            if index == 0:  # fails at once, in each of its 3 attempts
                with open(attempts, "a") as marks:
                    marks.write("failed\n")
                raise ZeroDivisionError("the write failed")
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not (attempts.exists() and attempts.read_text().count("\n") == 3):
                time.sleep(0.05)  # the job fails now
            time.sleep(0.5)  # within the 2 s Spark gives a task it stops before it kills its Python worker
            os.makedirs(os.path.join(staged, "_temporary", "late"))
            done.touch()
            yield from rows

        spark.sparkContext.parallelize(range(2), 2).mapPartitionsWithIndex(task).collect()

    with pytest.raises(Exception, match="the write failed"):
        training_run.replaced_whole(str(written / "out"), write)
    # the late task's folders made (before the run's end now, after it before)
    assert wait_until(done.exists, 60) and os.listdir(written) == []


def test_train_refuses_a_model_path_holding_other_files_before_reading_data(spark, job_cwd, tmp_path, capsys,
                                                                            monkeypatch):
    """[output] model = a folder of data (not a model's folder) was deleted after the fit, to put the model there."""
    (tmp_path / "nightly.csv").write_text("1,2,0\n")

    def no_data(*_):
        raise AssertionError("the data were read")

    monkeypatch.setattr(training_run, "split_data", no_data)
    assert cli.run(train.main, ["--set", f"output.model={tmp_path}"]) == cli.EXIT_BAD_INPUT
    assert f"[output] model {tmp_path} holds nightly.csv, which is not a model saved by jobs/train.py" in \
        capsys.readouterr().err
    assert (tmp_path / "nightly.csv").read_text() == "1,2,0\n"


def test_predict_refuses_input_that_the_config_s_generated_source_would_not_read(monkeypatch, capsys, tmp_path):
    """The quick start's config with --input mine.parquet scored the generated rings, not the file, and exited 0."""
    from tests.jobs.test_retrain_job import no_spark

    monkeypatch.setattr(cli, "session", no_spark)
    assert cli.run(predict.main, ["--config", train.DEFAULT_CONFIG, "--input", "mine.parquet", "--output",
                                  str(tmp_path / "scores")]) == cli.EXIT_BAD_INPUT
    assert capsys.readouterr().err == ("error: --input mine.parquet is read in the [data] format, and source "
                                       "'generated' generates its rows: set data.source to the format of the file "
                                       "(and data.label_column, data.features_column where it needs them)\n")


def test_evaluate_without_a_model_says_how_to_give_one(capsys):
    assert cli.run(evaluate.main, ["--config", train.DEFAULT_CONFIG, "--set", 'output.model=""']
                   ) == cli.EXIT_BAD_INPUT
    assert "no model to evaluate: pass --model or set [output] model" in capsys.readouterr().err


@pytest.mark.parametrize("job, extra", [(evaluate, []), (predict, ["--output", "scores"])])
def test_a_missing_model_is_one_line_and_exit_2(spark, job, extra, capsys, tmp_path):
    missing = str(tmp_path / "never-trained")
    assert cli.run(job.main, ["--config", train.DEFAULT_CONFIG, "--model", missing] + extra) == cli.EXIT_BAD_INPUT
    assert capsys.readouterr().err == (f"error: no saved model at {missing}: train one first (jobs/train.py saves "
                                       "it at [output] model) or pass --model\n")


def test_a_missing_model_prints_no_java_stack_trace_before_its_line(tmp_path):
    """A real process (Spark's log goes to the JVM's stderr): Spark's read warned with ~90 lines of stack trace
    before the job's one line."""
    import os
    import subprocess

    from tests.spark_bsvm.app.test_registry import ROOT

    missing = tmp_path / "never-trained"
    done = subprocess.run([sys.executable, str(ROOT / "jobs" / "evaluate.py"), "--model", str(missing), "--config",
                           train.DEFAULT_CONFIG], cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == cli.EXIT_BAD_INPUT and "Exception" not in done.stderr
    assert done.stderr.endswith(f"error: no saved model at {missing}: train one first (jobs/train.py saves it at "
                                "[output] model) or pass --model\n")


@pytest.mark.parametrize("source", ["parquet", "csv", "libsvm"])
def test_missing_input_data_is_one_line_and_exit_2(spark, source, capsys, tmp_path):
    """The nightly retraining's file not there (yet): the fix named, not Spark's traceback and exit 1."""
    missing = str(tmp_path / "2026-12-01.data")
    args = ["--set", f"retrain.registry={tmp_path / 'registry'}", "--set", f"data.source={source}",
            "--set", f"data.path={missing}"] + (["--set", "data.label_column=label"] * (source == "parquet"))
    assert cli.run(retrain.main, args) == cli.EXIT_BAD_INPUT
    assert capsys.readouterr().err == (f"error: no {source} input at {missing}: check [data] path, test_path or "
                                       "--input\n")


def test_the_tuning_config_reports_and_plots_the_validation_path_beside_the_test_path(spark, job_cwd, tmp_path):
    config = str(train.DEFAULT_CONFIG).replace("quickstart.toml", "tuning.toml")
    assert train.main(["--config", config, "--set", "data.rows=900", "--set", "model.params.spsvm.maxBasis=20",
                       "--set", "model.params.spsvm.regParamGrid=[0.1, 1.0]",
                       "--set", f"output.report={tmp_path}/t.json", "--set", f"output.plot={tmp_path}/t.png"]) == 0
    report = json.loads((tmp_path / "t.json").read_text())
    curve, validation = report["error_vs_support"], report["validation"]
    # the plotted validation curve is the chosen setting's validation path, as the fit recorded it
    assert [tuple(point) for point in curve["validation"]] == [tuple(p) for p in validation["by_support_size"]]
    assert len(curve["validation"]) == 20 and len(validation["grid"]) == 4
    assert curve["model"][0][0] == validation["kept_size"] == report["support_size"]
    if _has_matplotlib():
        assert (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG"


def test_libsvm_files_narrower_than_the_training_file_are_read_at_its_width(spark, job_cwd, tmp_path, capsys):
    """LIBSVM's own a9a / a9a.t differ in their highest feature index: Spark read each file at its own width,
    and the fit failed on vectors of two sizes after training; a scoring file wider than the model is refused
    in one line."""
    rng = np.random.default_rng(0)

    def write(name, rows, width):
        X = rng.standard_normal((rows, width))
        labels = np.where(X[:, 0] + X[:, 1] > 0, 1, -1)
        lines = [f"{l} " + " ".join(f"{j + 1}:{v:.4f}" for j, v in enumerate(x)) for l, x in zip(labels, X)]
        path = tmp_path / name
        path.write_text("\n".join(lines) + "\n")
        return str(path)

    train_file, narrow, wide = write("train.svm", 200, 4), write("test.svm", 60, 3), write("wide.svm", 20, 5)
    model = str(tmp_path / "model")
    args = ["--config", train.DEFAULT_CONFIG, "--set", "data.source=libsvm", "--set", f"data.path={train_file}",
            "--set", "model.params.spsvm.maxBasis=10"]
    assert train.main(args + ["--set", f"data.test_path={narrow}", "--set", f"output.model={model}"]) == 0
    assert "test_rows=60" in capsys.readouterr().out
    assert predict.main(args + ["--model", model, "--input", narrow, "--output", str(tmp_path / "scores")]) == 0
    assert spark.read.parquet(str(tmp_path / "scores")).count() == 60
    assert cli.run(predict.main, args + ["--model", model, "--input", wide, "--output", str(tmp_path / "s2")]) == 2
    assert f"{wide} has features up to index 5, but the model was trained on 4" in capsys.readouterr().err


def test_predict_scores_parquet_rows_that_have_no_label(spark, job_cwd, tmp_path, capsys):
    """Rows to score seldom come with their label: predict.py's docstring promised to write it only when there."""
    from core.synthetic import make_rings

    X, y = make_rings(300, 4, seed=2)
    columns = ["a", "b", "c", "d"]
    rows = [(*map(float, x), float(label > 0)) for x, label in zip(X, y)]
    spark.createDataFrame(rows, columns + ["label"]).write.parquet(str(tmp_path / "train"))
    spark.createDataFrame([r[:4] for r in rows[:50]], columns).write.parquet(str(tmp_path / "new"))
    args = ["--config", train.DEFAULT_CONFIG, "--set", "data.source=parquet", "--set", f"data.path={tmp_path}/train",
            "--set", "data.label_column=label", "--set", "model.params.spsvm.maxBasis=10"]
    assert train.main(args + ["--set", f"output.model={tmp_path}/model"]) == 0
    assert predict.main(args + ["--model", f"{tmp_path}/model", "--input", f"{tmp_path}/new",
                                "--output", f"{tmp_path}/scores"]) == 0
    scores = spark.read.parquet(f"{tmp_path}/scores")
    assert scores.columns == ["prediction", "decision"] and scores.count() == 50
    assert cli.run(train.main, args + ["--set", f"data.path={tmp_path}/new"]) == cli.EXIT_BAD_INPUT  # training needs it
    assert "label_column = 'label' is not a column of" in capsys.readouterr().err


def test_predict_refuses_csv_rows_without_their_label_column_and_names_the_fix(spark, job_cwd, tmp_path, capsys):
    """csv rows to score without the label column: the loader took the last feature for the label, and the job
    refused the rows with Spark's "No such struct field `_c3`" and "give it rows with the columns it was trained
    on", which they were."""
    from core.synthetic import make_rings

    X, y = make_rings(300, 4, seed=2)
    np.savetxt(tmp_path / "train.csv", np.column_stack([X, y > 0]), delimiter=",", fmt="%.6f")
    np.savetxt(tmp_path / "new.csv", X[:50], delimiter=",", fmt="%.6f")
    np.savetxt(tmp_path / "labelled.csv", np.column_stack([X[:50], np.zeros(50)]), delimiter=",", fmt="%.6f")
    args = ["--config", train.DEFAULT_CONFIG, "--set", "data.source=csv", "--set", f"data.path={tmp_path}/train.csv",
            "--set", "model.params.spsvm.maxBasis=10", "--model", f"{tmp_path}/model"]
    assert train.main(args[:-2] + ["--set", f"output.model={tmp_path}/model"]) == 0
    capsys.readouterr()
    assert cli.run(predict.main, args + ["--input", f"{tmp_path}/new.csv", "--output", f"{tmp_path}/scores"]
                   ) == cli.EXIT_BAD_INPUT
    assert capsys.readouterr().err == (
        f"error: {tmp_path}/new.csv has 4 columns, and the model was trained on csv rows of 5 (4 features and the "
        "label, at [data] label_column = -1): rows to score from csv need the label column too, as csv files have no "
        "header and their columns are told apart by position; give each row a label of any value at that position, "
        "or write the rows as Parquet, which may leave the label out (data.source=parquet, the feature columns named "
        "as Spark named the training file's: _c0, _c1, ... but the label's)\n")
    assert predict.main(args + ["--input", f"{tmp_path}/labelled.csv", "--output", f"{tmp_path}/scores"]) == 0
    assert spark.read.parquet(f"{tmp_path}/scores").count() == 50
