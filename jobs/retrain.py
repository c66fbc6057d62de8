"""Scheduled retraining against a model registry (see spark_bsvm/app/retraining.py for the steps).

Trains a challenger on [data], evaluates it and the registry's current model
on the same held-out rows, publishes the challenger as a new version and
promotes it when its test error is at most the current one's plus
[retrain] margin.  Running it again on the same input changes nothing and
exits with the same code.

exit codes:
    0  the challenger was promoted (or became the first version)
    3  the challenger was kept out, CURRENT is unchanged ([retrain] kept_exit_code)
    2  bad arguments, config or input data (message on stderr)
    1  failed (traceback on stderr); CURRENT is unchanged unless the run got past promotion

    spark-submit --properties-file conf/spark-defaults.conf jobs/retrain.py \\
        --config conf/retrain.toml --set data.path=/data/2026-11-23.parquet
"""

import sys
from pathlib import Path

from spark_bsvm.app import cli, report, retraining

DEFAULT_CONFIG = str(Path(__file__).resolve().parents[1] / "conf" / "retrain.toml")


def main(argv=None):
    args = cli.job_parser(__doc__, DEFAULT_CONFIG).parse_args(argv)
    config = cli.load(args, require=("data", "model", "retrain"))
    outcome, version, record = retraining.retrain(cli.session(), config)
    current = record["current"]
    again = " (input handled before: nothing retrained)" if record.get("replayed") else ""
    print(f"challenger: version {version}, {report.summary_line(record['challenger'])}")
    if current is not None:
        print(f"current (version {record['baseline_version']}): test error {100 * current['test_error']:.2f}%   "
              f"support vectors: {current['support_size']}")
    print(f"decision: {outcome}, margin {record['margin']}{again}")
    return cli.EXIT_OK if outcome == retraining.PROMOTED else config["retrain"]["kept_exit_code"]


if __name__ == "__main__":
    sys.exit(cli.run(main))
