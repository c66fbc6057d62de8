"""Choose a job config's method params on a validation split of its training part, never its test part.

Takes the same train/test split as the jobs (``[data]`` of the config), samples ``--rows`` rows of the
training part, holds ``--valid-fraction`` of them out, fits the config's method (``--set
model.method=...`` to change it) at every point of the ``--grid`` and prints the validation error of
each point.  The best point goes into the method's table of the config (``[model.params.<method>]``).

    python -m bench.select_job_params --config conf/kddcup99.toml --set model.method=spsvm \\
        --set model.params.spsvm.maxBasis=200 --grid regParam=0.0625,0.25,1,4 --grid gamma=0.5,1,2
"""

import copy
import itertools
import sys
import time

from bench.common import print_table
from spark_bsvm.app import cli, report, training_run
from spark_bsvm.app.config import parse_value


def parse_grid(items):
    """``["name=v1,v2", ...]`` -> {name: [values]} (values as in ``--set``)."""
    grid = {}
    for item in items:
        name, sep, values = item.partition("=")
        if not sep or not name or not values:
            raise ValueError(f"--grid {item!r} must look like name=value1,value2,...")
        grid[name.strip()] = [parse_value(v.strip()) for v in values.split(",")]
    return grid


def main(argv=None):
    parser = cli.job_parser(__doc__)
    parser.add_argument("--grid", action="append", default=[], metavar="PARAM=V1,V2,...",
                        help="an estimator param and its values (repeatable; the grid is their product)")
    parser.add_argument("--rows", type=int, default=40_000, help="training rows sampled (default 40,000)")
    parser.add_argument("--valid-fraction", type=float, default=0.25, help="of the sample held out (default 0.25)")
    args = parser.parse_args(argv)
    config = cli.load(args)
    grid = parse_grid(args.grid)
    method = config["model"]["method"]
    spark = cli.session()
    split = training_run.split_data(spark, config["data"])
    n_train = split.train.count()
    sample = split.train.sample(fraction=min(1.0, 1.05 * args.rows / n_train), seed=1).limit(args.rows)
    fit_part, valid_part = sample.randomSplit([1.0 - args.valid_fraction, args.valid_fraction], seed=2)
    selection = training_run.Split(fit_part.cache(), valid_part.cache(), split.loaded, split.positive_label)
    rows = []
    for values in itertools.product(*grid.values()):
        model_config = copy.deepcopy(config["model"])
        model_config["params"].setdefault(method, {}).update(zip(grid, values))
        start = time.perf_counter()
        model, timings = training_run.fit(selection, model_config)
        result = report.evaluate(model, selection.test)
        rows.append(list(values) + [100 * result["test_error"], result["support_size"], timings["train_rows"],
                                    time.perf_counter() - start])
        print(f"{dict(zip(grid, values))}: validation error {rows[-1][len(grid)]:.3f}%", flush=True)
    print(f"\n{method} on {config['data']['source']}: {n_train} training rows, sampled {args.rows}, "
          f"validated on {args.valid_fraction:g} of them")
    print_table(list(grid) + ["valid err %", "SVs", "fit rows", "seconds"], rows)
    return cli.EXIT_OK


if __name__ == "__main__":
    sys.exit(cli.run(main))
