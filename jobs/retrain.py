"""Scheduled retraining against a model registry (see spark_bsvm/app/retraining.py for the steps).

Trains a challenger on [data], evaluates it and the registry's current model
on the same held-out rows, publishes the challenger as a new version and
promotes it when its test error is at most the current one's plus
[retrain] margin.  Running it again on the same input changes nothing and
exits with the same code.

One run per registry at a time: a run that finds another one holding the
registry waits up to [retrain] lock_wait_minutes (default 0), then prints one
line naming the holder and exits with [retrain] locked_exit_code.  A killed
run's lock is freed with its process.  A re-run on handled input answers
from the registry without starting Spark.

exit codes:
    0  the challenger was promoted (or became the first version)
    3  the challenger was kept out, CURRENT is unchanged ([retrain] kept_exit_code)
    4  another retraining held the registry; nothing done ([retrain] locked_exit_code)
    2  bad arguments, config or input data (message on stderr)
    1  failed (traceback on stderr); CURRENT is unchanged unless the run got past promotion

    spark-submit --properties-file conf/spark-defaults.conf jobs/retrain.py \\
        --config conf/retrain.toml --set data.source=parquet --set data.label_column=label \\
        --set data.path=/data/2026-11-23.parquet
"""

import sys
from pathlib import Path

from spark_bsvm.app import cli, report, retraining
from spark_bsvm.app.registry import RegistryLocked

DEFAULT_CONFIG = str(Path(__file__).resolve().parents[1] / "conf" / "retrain.toml")


def main(argv=None):
    args = cli.job_parser(__doc__, DEFAULT_CONFIG).parse_args(argv)
    config = cli.load(args, require=("data", "model", "retrain"))
    cli.configure_logging()
    try:
        outcome, version, record = retraining.retrain(config, cli.session)
    except RegistryLocked as exc:
        hint = "" if config["retrain"]["lock_wait_minutes"] else "; --set retrain.lock_wait_minutes=N waits for it"
        print(f"not retrained: {exc}{hint}", file=sys.stderr)
        return config["retrain"]["locked_exit_code"]
    current = record["current"]
    again = " (input handled before: nothing retrained)" if record.get("replayed") else ""
    if record.get("superseded_by") is not None:
        again += f"; version {record['superseded_by']} is current now, and stays so"
    print(f"challenger: version {version}, {report.summary_line(record['challenger'])}")
    if current is not None:
        print(f"current (version {record['baseline_version']}): test error {100 * current['test_error']:.2f}%   "
              f"support vectors: {current['support_size']}")
    print(f"decision: {outcome}, margin {record['margin']}{again}")
    return cli.EXIT_OK if outcome == retraining.PROMOTED else config["retrain"]["kept_exit_code"]


if __name__ == "__main__":
    sys.exit(cli.run(main))
