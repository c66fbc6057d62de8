"""Train a budgeted or sparse kernel SVM from a config file and report it.

Loads the data of [data], holds out a test part, fits the [model] method on
the rest, and prints the test error, the support size and the training
time; [output] says where the model, the JSON report and the PNG go.

    python jobs/train.py                                    # conf/quickstart.toml
    spark-submit --master local[2] --properties-file conf/spark-defaults.conf \\
        jobs/train.py --config conf/kddcup99.toml --set model.method=budget_l1
"""

import sys
from pathlib import Path

from spark_bsvm.app import cli, methods, report, training_run

DEFAULT_CONFIG = str(Path(__file__).resolve().parents[1] / "conf" / "quickstart.toml")


def main(argv=None):
    args = cli.job_parser(__doc__, DEFAULT_CONFIG).parse_args(argv)
    config = cli.load(args)
    methods.check_model(config["model"])
    training_run.check_writable_files(config["output"])
    spark = cli.session()
    training_run.check_replaceable(config["output"]["model"], training_run.SAVED_MODEL, "[output] model")
    split = training_run.split_data(spark, config["data"])
    model, timings = training_run.fit(split, config["model"])
    evaluation = report.evaluate(model, split.test)
    run_report = training_run.describe_run(config, timings, evaluation, model)
    rounds = run_report["training"].get("rounds")  # the decomposition methods count rounds
    print(f"method={config['model']['method']} train_rows={timings['train_rows']} "
          f"test_rows={evaluation['test_rows']}" + ("" if rounds is None else f" rounds={rounds}"))
    print(report.summary_line(run_report))
    training_run.save_model(config, model)
    training_run.write_outputs(config, model, run_report, split.test)
    return cli.EXIT_OK


if __name__ == "__main__":
    sys.exit(cli.run(main))
