"""Evaluate a saved model on the test part of [data]: test error, support size, confusion counts.

Writes the JSON report and the error-vs-support-size PNG where [output]
says (report, plot).  --model defaults to [output] model of the config.

    python jobs/evaluate.py --config conf/quickstart.toml --model out/quickstart/model
"""

import sys

from spark_bsvm.app import cli, report, training_run


def main(argv=None):
    parser = cli.job_parser(__doc__)
    cli.add_model_option(parser)
    args = parser.parse_args(argv)
    config = cli.load(args)
    path = cli.model_path(args, config, "evaluate")
    training_run.check_writable_files(config["output"])
    spark = cli.session()
    model = cli.load_model(path)
    svm = report.svm_stage(model)
    split = training_run.split_data(spark, config["data"], model_width=svm.numFeatures)
    training = report.training_record(svm)
    run_report = dict(report.evaluate(model, split.test), model=path, training=training,
                      training_seconds=training.get("training_seconds", float("nan")))
    print(f"model {path} ({training.get('method')}) on {run_report['test_rows']} test rows")
    print(report.summary_line(run_report))
    print("confusion: " + ", ".join(f"{k} {v}" for k, v in run_report["confusion"].items()))
    training_run.write_outputs(config, model, run_report, split.test)
    return cli.EXIT_OK


if __name__ == "__main__":
    sys.exit(cli.run(main))
