"""The main job trains a real model and reports it."""

import re

import pytest

from core.model import KernelExpansion
from jobs.train import main


def test_main_job_prints_error_and_support_size(tmp_path, capsys):
    path = tmp_path / "model.npz"
    assert main(["--engine", "local", "--n-train", "800", "--n-test", "400", "--budget", "40",
                 "--save", str(path)]) == 0
    out = capsys.readouterr().out
    error = float(re.search(r"test error: ([0-9.]+)%", out).group(1))
    n_support = int(re.search(r"support vectors: (\d+)", out).group(1))
    assert 0 < n_support < 800
    assert error < 30.0  # a real model, far from the 50% of a coin
    assert KernelExpansion.load(path).n_support == n_support


@pytest.mark.spark
def test_main_job_runs_on_spark(spark, capsys):
    assert main(["--n-train", "600", "--n-test", "300", "--method", "csvc"]) == 0
    assert float(re.search(r"test error: ([0-9.]+)%", capsys.readouterr().out).group(1)) < 30.0


def test_main_job_prunes_to_the_budget(capsys):
    assert main(["--engine", "local", "--n-train", "500", "--n-test", "100", "--budget", "30", "--prune"]) == 0
    assert int(re.search(r"support vectors: (\d+)", capsys.readouterr().out).group(1)) == 30
