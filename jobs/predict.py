"""Score rows with a saved model: writes Parquet with the prediction and the decision value f(x).

Reads every row of [data] (no test split; --input overrides [data] path),
encodes them with the model's own feature stages and writes the columns
label (when the input has one: Parquet rows to score may come without it, csv rows may not),
prediction (in the training label values)
and decision (f(x) = sum_j coef_j K(s_j, x) + b).

    python jobs/predict.py --config conf/quickstart.toml --output out/quickstart/scores
"""

import sys

from pyspark.ml.functions import vector_to_array
from pyspark.sql import functions as F

from spark_bsvm.app import cli, loaders, report, training_run
from spark_bsvm.app.config import GENERATED_SOURCES


def main(argv=None):
    parser = cli.job_parser(__doc__)
    cli.add_model_option(parser)
    parser.add_argument("--input", help="rows to score, in the [data] format (default: [data] path)")
    parser.add_argument("--output", required=True,
                        help="Parquet directory to write (scores written there before are replaced once the new "
                             "ones are whole; a directory holding anything else is refused)")
    args = parser.parse_args(argv)
    config = cli.load(args)
    if args.input and config["data"]["source"] in GENERATED_SOURCES:
        raise ValueError(f"--input {args.input} is read in the [data] format, and source "
                         f"{config['data']['source']!r} generates its rows: set data.source to the format of "
                         "the file (and data.label_column, data.features_column where it needs them)")
    path = cli.model_path(args, config, "score with")
    spark = cli.session()
    training_run.check_replaceable(args.output, training_run.SCORES, "--output")
    model = cli.load_model(path)
    svm = report.svm_stage(model)
    data = loaders.with_libsvm_width(spark, config["data"], [args.input or config["data"]["path"]],
                                     model_width=svm.numFeatures)
    rows = loaders.load(spark, data, path=args.input, labelled=False).frame
    loaders.check_csv_label(rows, data, args.input or data["path"], svm.numFeatures)
    scored = report.transformed(model, rows).select(
        *(["label"] if "label" in rows.columns else []), svm.getPredictionCol(),
        F.element_at(vector_to_array(svm.getRawPredictionCol()), 2).alias(training_run.DECISION_COLUMN))
    training_run.replaced_whole(args.output, scored.write.parquet)  # a failed or killed run keeps the scores before
    print(f"{spark.read.parquet(args.output).count()} rows scored by {path} written to {args.output}")
    return cli.EXIT_OK


if __name__ == "__main__":
    sys.exit(cli.run(main))
