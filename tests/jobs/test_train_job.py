"""The main job trains a real model from the quick-start config and reports it; --help and bad input."""

import importlib.util
import json
import os
import re

import pytest
from pyspark.ml import PipelineModel

from jobs.train import DEFAULT_CONFIG, main
from spark_bsvm.app import cli
from tests.jobs.test_retrain_job import no_spark

SMALL = ["--set", "data.rows=1200", "--set", "model.params.spsvm.maxBasis=40"]


@pytest.mark.spark
def test_main_job_prints_error_and_support_size(spark, job_cwd, tmp_path, capsys):
    out_dir = tmp_path / "out"
    assert main(SMALL + ["--set", f"output.model={out_dir}/model", "--set", f"output.report={out_dir}/r.json"]) == 0
    out = capsys.readouterr().out
    error = float(re.search(r"test error: ([0-9.]+)%", out).group(1))
    n_support = int(re.search(r"support vectors: (\d+)", out).group(1))
    assert re.search(r"training time: [0-9.]+s", out)
    assert 0 < n_support <= 40
    assert error < 30.0  # a real model, far from the 50% of a coin
    report = json.loads((out_dir / "r.json").read_text())
    assert report["support_size"] == n_support and report["method"] == "spsvm"
    assert abs(100 * report["test_error"] - error) < 0.01 and report["train_rows"] + report["test_rows"] == 1200
    confusion = report["confusion"]
    assert sum(confusion.values()) == report["test_rows"]
    assert confusion["false_positive"] + confusion["false_negative"] == round(report["test_error"]
                                                                               * report["test_rows"])
    assert PipelineModel.load(str(out_dir / "model")).stages[-1].numSupportVectors == n_support


@pytest.mark.spark
def test_main_job_prunes_to_the_budget(spark, job_cwd, capsys):
    assert main(SMALL + ["--set", "model.method=budget_l1", "--set", "model.params.budget=30",
                         "--set", "model.params.prune=true"]) == 0
    assert int(re.search(r"support vectors: (\d+)", capsys.readouterr().out).group(1)) == 30


@pytest.mark.spark
@pytest.mark.parametrize("overrides, message", [
    (["data.positive_label=5"], "error: [data] positive_label = 5 equals no training row's label, so the rows hold "
                                "one class: give the positive class's label as the file writes it"),
    (["data.source=csv", "data.path={csv}"], "error: the training rows hold 3 labels (0.0, 1.0, 2.0), and a job "
                                             "trains one model for two classes: set [data] positive_label to the "
                                             "positive class's label (every other label becomes negative)\n"),
    (["data.source=csv", "data.path={csv}", "data.label_column=0"],
     "error: every training row has the label 1.0: check that [data] label_column names the label column"),
], ids=["positive_label matching no row", "three labels", "a constant column as the label"])
def test_labels_that_are_not_two_classes_name_the_data_setting_to_change(spark, job_cwd, tmp_path, capsys,
                                                                         overrides, message):
    """The estimators' fix for these (wrap the estimator in OneVsRest, index the labels with StringIndexer) is
    none a job's user can apply, and a positive_label matching no row was reported as the labels [0.0]."""
    csv = tmp_path / "three.csv"
    csv.write_text("".join(f"1,{i / 10},{i % 3}\n" for i in range(60)))
    args = [item for override in overrides for item in ("--set", override.format(csv=csv))]
    assert cli.run(main, SMALL + args + ["--set", f"output.model={tmp_path}/model"]) == cli.EXIT_BAD_INPUT
    assert message in capsys.readouterr().err
    assert not (tmp_path / "model").exists()


def test_main_job_defaults_to_the_quickstart_config_and_documents_every_option(capsys):
    assert DEFAULT_CONFIG.endswith("conf/quickstart.toml")
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    for option in ("--config", "--set", "[data]", "source (str, required)", "[output]", "plot_rows"):
        assert option in text


def test_a_bad_config_exits_2_with_the_fix(capsys):
    assert cli.run(main, ["--set", "data.sourc=csv"]) == cli.EXIT_BAD_INPUT
    assert "unknown key(s) ['sourc'] in [data]; known keys:" in capsys.readouterr().err


@pytest.mark.parametrize("override, message", [
    ("model.params.spsvm.maxBasiss=30", "[model.params] ['maxBasiss'] are not params of SpSVM (method 'spsvm')"),
    ("model.params.selectSupportSize=best", "selectSupportSize='best' chooses by the validation error, and no rows "
                                            "are held out for it: set validationFraction"),
])
def test_a_bad_model_section_exits_2_before_spark_starts(monkeypatch, capsys, override, message):
    """These were found when the fit began: after Spark's start and the data's read (the Forest config's
    522,910 generated rows), a minute or more for a one-line fix."""
    monkeypatch.setattr(cli, "session", no_spark)
    assert cli.run(main, ["--set", override]) == cli.EXIT_BAD_INPUT
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("override, message", [
    ("output.report={tmp}/a file/report.json", "[output] report {tmp}/a file/report.json cannot be written: "
                                               "{tmp}/a file is a file, not a folder; give a path under a folder"),
    ("output.plot={tmp}/a file/plots/curve.png", "[output] plot {tmp}/a file/plots/curve.png cannot be written: "
                                                 "{tmp}/a file is a file, not a folder"),
    ("output.report={tmp}", "[output] report {tmp} is a folder; give a file in it, e.g. "
                            "--set output.report={tmp}/report.json"),
    pytest.param("output.plot={tmp}/curve.txt", "[output] plot {tmp}/curve.txt: matplotlib writes no .txt file; "
                                                "name it .png", marks=pytest.mark.skipif(
                                                    importlib.util.find_spec("matplotlib") is None,
                                                    reason="without matplotlib the plot is skipped, whatever its name")),
])
def test_report_and_plot_paths_that_cannot_be_written_exit_2_before_spark_starts(monkeypatch, capsys, tmp_path,
                                                                                 override, message):
    """These failed after the fit and the model's save, in a traceback (exit 1), the report or the plot lost."""
    (tmp_path / "a file").write_text("")
    monkeypatch.setattr(cli, "session", no_spark)
    assert cli.run(main, SMALL + ["--set", override.format(tmp=tmp_path)]) == cli.EXIT_BAD_INPUT
    assert message.format(tmp=tmp_path) in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a file"]


def test_a_report_folder_the_user_may_not_write_in_exits_2_before_spark_starts(monkeypatch, capsys, tmp_path):
    """os.access is what a user other than root is told of a folder not theirs (root may write anywhere)."""
    monkeypatch.setattr(os, "access", lambda path, mode: str(path) != str(tmp_path))
    monkeypatch.setattr(cli, "session", no_spark)
    assert cli.run(main, SMALL + ["--set", f"output.report={tmp_path}/out/report.json"]) == cli.EXIT_BAD_INPUT
    assert (f"[output] report {tmp_path}/out/report.json cannot be written: this user may not write in {tmp_path}; "
            "give a path in a folder you can write") in capsys.readouterr().err


def test_a_spark_connect_remote_is_refused_before_any_session_starts(tmp_path):
    """SPARK_REMOTE set: the job exits 2 with one line instead of pyspark's traceback (a master and a remote
    both configured); the training would have ended in the model's save, which needs the JVM."""
    import os
    import subprocess
    import sys

    from tests.spark_bsvm.app.test_registry import ROOT

    done = subprocess.run([sys.executable, str(ROOT / "jobs" / "train.py")] + SMALL, cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), SPARK_REMOTE="sc://localhost:15002"),
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == cli.EXIT_BAD_INPUT
    assert done.stderr.startswith("error: the jobs need a classic Spark session (SPARK_REMOTE=sc://localhost:15002)")
    assert not (tmp_path / "out").exists()


@pytest.mark.spark
def test_an_active_spark_connect_session_is_refused_before_any_job(connect_spark, tmp_path, capsys):
    """From a notebook whose session is a Spark Connect one, the job says why it cannot run there."""
    assert cli.run(main, SMALL + ["--set", f"output.model={tmp_path}/model"]) == cli.EXIT_BAD_INPUT
    assert capsys.readouterr().err.startswith("error: the jobs need a classic Spark session (the active session is "
                                              "a Spark Connect one)")
    assert not (tmp_path / "model").exists()
