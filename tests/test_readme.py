"""The README's commands: each one is run by a test here or elsewhere, or by a bench, named in ``COVERED``.

A command is a line (with its backslash continuations) of an indented or fenced shell block of README.md;
fenced ``python`` blocks are API examples, covered by the tests of that API.  The newcomer's path runs
here exactly as written (quick start, evaluate, predict; bring your own data); the KDD Cup 99 and crontab
lines run as written plus overrides that shrink the data, appended last so that everything else is theirs.
"""

import gzip
import importlib
import re
import shlex
from pathlib import Path

import pytest

from core import benchmark_files
from core.synthetic import make_rings
from tests.conftest import working_directory

ROOT = Path(__file__).resolve().parents[1]

# README command -> the test (path::name) or bench (path) that runs it
COVERED = {
    "pip install -e '.[plot]' && python jobs/train.py":
        "tests/test_readme.py::test_quick_start_evaluate_and_predict_as_written",
    "pip install -e '.[test]' && python -m pytest -q": ".ci/run",
    "python -m bench.select_job_params --config conf/quickstart.toml --grid gamma=0.05,0.1,0.2 "
    "--grid regParam=0.01,0.1,1": "bench/select_job_params.py",
    "python jobs/train.py --config conf/own_data.toml --set data.path=mine.csv":
        "tests/test_readme.py::test_bring_your_own_data_as_written",
    "python jobs/train.py --config conf/own_data.toml --set data.source=parquet --set data.path=mine.parquet "
    "--set data.label_column=label": "tests/test_readme.py::test_bring_your_own_data_as_written",
    "python jobs/evaluate.py --config conf/own_data.toml --set data.source=parquet --set data.path=mine.parquet "
    "--set data.label_column=label": "tests/test_readme.py::test_bring_your_own_data_as_written",
    "zip -r spark_bsvm.zip core spark_bsvm -i '*.py'": "bench/check_cluster_shipping.py",
    "spark-submit --py-files spark_bsvm.zip jobs/train.py": "bench/check_cluster_shipping.py",
    "python jobs/evaluate.py --config conf/quickstart.toml":
        "tests/test_readme.py::test_quick_start_evaluate_and_predict_as_written",
    "python jobs/predict.py --config conf/quickstart.toml --output out/quickstart/scores":
        "tests/test_readme.py::test_quick_start_evaluate_and_predict_as_written",
    "spark-submit --master 'local[2]' --properties-file conf/spark-defaults.conf "
    "jobs/train.py --config conf/kddcup99.toml --set data.deduplicate=true":
        "tests/test_readme.py::test_kddcup99_commands_on_a_sample",
    "python jobs/evaluate.py --config conf/kddcup99.toml --set data.deduplicate=true":
        "tests/test_readme.py::test_kddcup99_commands_on_a_sample",
    "python jobs/predict.py --config conf/kddcup99.toml --output out/kddcup99/scores":
        "tests/test_readme.py::test_kddcup99_commands_on_a_sample",
    "30 2 * * * cd /opt/spark-bsvm && spark-submit --properties-file conf/spark-defaults.conf jobs/retrain.py "
    "--config conf/retrain.toml --set data.source=parquet --set data.label_column=label "
    "--set data.path=/data/$(date +\\%F).parquet >> /var/log/bsvm-retrain.log 2>&1":
        "tests/test_readme.py::test_the_crontab_retraining_line",
    'python -m pytest -q -m "not spark and not data"': "tests/conftest.py::pytest_collection_modifyitems",
    # a Dockerfile's lines: the warm-up into a cache folder, then every process on that folder
    "RUN NUMBA_CACHE_DIR=/opt/spark-bsvm-numba python -m core.warm_up":
        "tests/core/test_warm_up.py::test_after_the_warm_up_a_process_elsewhere_compiles_nothing_but_new_code",
    "ENV NUMBA_CACHE_DIR=/opt/spark-bsvm-numba":
        "tests/core/test_warm_up.py::test_after_the_warm_up_a_process_elsewhere_compiles_nothing_but_new_code",
}


def readme_commands():
    """Every command of README.md's shell blocks, continuations joined, in order."""
    commands, block, fence = [], None, None
    for line in (ROOT / "README.md").read_text().splitlines() + [""]:
        if line.lstrip().startswith("```"):
            fence = None if fence is not None else line.strip()[3:]
            continue
        if fence is not None:
            if fence in ("", "sh", "bash", "shell"):
                block = (block or []) + [line.strip()]
            continue
        if line.startswith("    ") and (block is not None or not line.lstrip().startswith(("|", "-"))):
            block = (block or []) + [line.strip()]
            continue
        if line.strip() or block is None:
            commands += _commands(block or [])
            block = None
    return commands + _commands(block or [])


def _commands(lines):
    joined = re.sub(r"\\\n\s*", "", "\n".join(lines))
    return [line for line in joined.splitlines() if line and not line.startswith("#")]


def test_every_readme_command_is_run_by_a_named_test_or_bench():
    assert sorted(readme_commands()) == sorted(COVERED)
    for where in set(COVERED.values()):
        path, _, name = where.partition("::")
        assert (ROOT / path).is_file(), where
        assert not name or re.search(rf"^def {name}\(", (ROOT / path).read_text(), re.M), where


def _job(command, *extra, shell=None):
    """Run the jobs/<name>.py of a README command in-process with the command's own arguments (``extra``
    appended; ``shell``: {text: what the shell makes of it}); returns its exit code."""
    from spark_bsvm.app import cli

    assert command in COVERED, command
    line = command.split(" >> ")[0]
    for text, expanded in (shell or {}).items():
        line = line.replace(text, expanded)
    words = shlex.split(line)
    script = next(w for w in words if w.startswith("jobs/") and w.endswith(".py"))
    job = importlib.import_module("jobs." + Path(script).stem)
    return cli.run(job.main, words[words.index(script) + 1:] + list(extra))


@pytest.fixture
def checkout_cwd(spark, tmp_path):
    """A fresh working directory (Python's and Spark's) where ``conf/`` is the checkout's, as in a clone."""
    (tmp_path / "conf").symlink_to(ROOT / "conf")
    with working_directory(spark, tmp_path) as path:
        yield path


def _report(path):
    import json

    return json.loads(Path(path).read_text())


@pytest.mark.spark
def test_quick_start_evaluate_and_predict_as_written(spark, checkout_cwd, capsys):
    assert _job("pip install -e '.[plot]' && python jobs/train.py") == 0
    trained = capsys.readouterr().out
    for line in ("model written to out/quickstart/model", "report written to out/quickstart/report.json",
                 "plot written to out/quickstart/error_vs_support.png"):  # the [plot] extra: matplotlib
        assert line in trained
    report = _report("out/quickstart/report.json")
    assert report["support_size"] <= 200 and report["test_error"] < 0.25
    assert _job("python jobs/evaluate.py --config conf/quickstart.toml") == 0
    evaluated = capsys.readouterr().out
    assert f"test error: {100 * report['test_error']:.2f}%" in evaluated  # the same model on the same rows
    assert _job("python jobs/predict.py --config conf/quickstart.toml --output out/quickstart/scores") == 0
    assert "9000 rows scored by out/quickstart/model" in capsys.readouterr().out
    assert spark.read.parquet("out/quickstart/scores").count() == 9000


@pytest.mark.spark
def test_bring_your_own_data_as_written(spark, checkout_cwd, capsys):
    X, y = make_rings(800, 4, seed=4)
    labels = [int(label) for label in y]  # -1 and 1: any two numbers
    (checkout_cwd / "mine.csv").write_text("".join(",".join(f"{v:.17g}" for v in x) + f",{c}\n"
                                                   for x, c in zip(X, labels)))
    spark.createDataFrame([tuple(map(float, x)) + (c,) for x, c in zip(X, labels)], ["x0", "x1", "x2", "x3", "label"]
                          ).write.parquet(str(checkout_cwd / "mine.parquet"))
    errors = []
    for command in [c for c in COVERED if "conf/own_data.toml" in c]:
        assert _job(command) == 0, command
        assert "test error: " in capsys.readouterr().out
        report = _report("out/own_data/report.json")
        assert report["support_size"] <= 200
        errors.append(report["test_error"])
    assert max(errors) < 0.3  # a real model on either format (a coin would be at 0.5)
    assert errors[2] == errors[1]  # evaluate on Parquet: the Parquet model on the same held-out rows


@pytest.mark.spark
@pytest.mark.data
def test_kddcup99_commands_on_a_sample(spark, checkout_cwd, capsys):
    source = benchmark_files.require("kddcup99", "kddcup.data_10_percent.gz", on_missing=pytest.skip)
    with gzip.open(source, "rt") as full, gzip.open(checkout_cwd / "kdd.gz", "wt") as sample:
        for k, line in enumerate(full):  # every 100th row: normal traffic and attacks, some duplicated
            if k % 100 == 0:
                sample.write(line)
    smaller = ("--set", f"data.path={checkout_cwd / 'kdd.gz'}", "--set", "model.params.spsvm.maxBasis=20")
    train, evaluate, predict = [c for c in COVERED if "conf/kddcup99.toml" in c]
    assert _job(train, *smaller) == 0
    trained = capsys.readouterr().out
    assert _job(evaluate, *smaller) == 0
    error = re.search(r"test error: [0-9.]+%", trained).group(0)
    assert error in capsys.readouterr().out  # deduplicated as in training: the same held-out rows
    assert _job(predict, *smaller) == 0
    assert "rows scored by out/kddcup99/model" in capsys.readouterr().out


@pytest.mark.spark
def test_the_crontab_retraining_line(spark, checkout_cwd, capsys):
    X, y = make_rings(700, 10, seed=5)
    night = str(checkout_cwd / "night.parquet")
    spark.createDataFrame([tuple(map(float, x)) + (float(label > 0),) for x, label in zip(X, y)],
                          [f"x{j}" for j in range(10)] + ["label"]).write.parquet(night)
    line = next(c for c in COVERED if c.startswith("30 2 * * *"))
    today = "$(date +\\%F)"  # cron passes % as \%; the shell runs date
    assert today in line
    assert _job(line, "--set", f"data.path={night}", "--set", "model.params.spsvm.maxBasis=20",
                shell={today: "2026-11-25"}) == 0
    assert "decision: promoted" in capsys.readouterr().out
    assert (checkout_cwd / "out" / "registry" / "CURRENT").is_file()
