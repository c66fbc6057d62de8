"""What every job in ``jobs/`` shares: ``--config``/``--set`` arguments, the Spark session, exit codes.

Exit codes of every job (``jobs/retrain.py`` adds its own, see there):
    0  done
    1  failed (an unexpected error; the traceback is printed)
    2  bad arguments, config or input data (the message says what to change)
"""

import argparse
import logging
import os
import sys

from spark_bsvm.app import config as config_module
from spark_bsvm.engine.session import is_connect

EXIT_OK = 0
EXIT_BAD_INPUT = 2
# Spark's reads warn with a Java stack trace (~90 lines) where a path is missing, before the job's one line
# names it; its streaming sinks' logger is the one that does (conf/log4j2.properties does the same)
MISSING_PATH_LOGGER = "org.apache.spark.sql.execution.streaming"


def job_parser(doc, default_config=None):
    """An argument parser with ``--config`` and repeatable ``--set``; its help lists every config key."""
    parser = argparse.ArgumentParser(description=doc, epilog=config_module.describe(),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=default_config, required=default_config is None,
                        help="TOML config file (see conf/)" + (f"; default: {default_config}" if default_config
                                                               else ""))
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override one config value, e.g. --set model.params.C=10 (repeatable; values "
                             "are TOML: 10, 1e-3, true, \"text\", [1, 2]; bare words are strings, and so is any value "
                             "of a key that takes only text, e.g. data.path=2026-12-01)")
    return parser


def load(args, require=config_module.REQUIRED_SECTIONS):
    """The validated config named by ``args.config`` with ``args.overrides``."""
    return config_module.load_config(args.config, args.overrides, require=require)


def default_spark_session():
    """The active SparkSession, spark-submit's, or a local one built for this machine; a ValueError, before
    any session starts, for a Spark Connect one (``SPARK_REMOTE`` set, or active).

    The local session uses every core (``local[*]``), the running Python
    for the workers, and 4g of driver memory unless ``SPARK_DRIVER_MEMORY``
    or ``spark.driver.memory`` says otherwise.
    """
    from pyspark.sql import SparkSession

    remote = os.environ.get("SPARK_REMOTE")
    active = SparkSession.getActiveSession()
    if (active is not None and is_connect(active)) or (active is None and remote):
        where = f"SPARK_REMOTE={remote}" if active is None else "the active session is a Spark Connect one"
        raise ValueError(f"the jobs need a classic Spark session ({where}): they reach the JVM (Hadoop's FileSystem "
                         "to replace a saved model, Spark's logging), which a Spark Connect client cannot; unset "
                         "SPARK_REMOTE and run the job with spark-submit --master ..., or use the estimators of "
                         "spark_bsvm.ml from the Connect client")
    if active is not None:
        return active
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # started by spark-submit: its --master and --conf decide
        return SparkSession.builder.getOrCreate()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    return (SparkSession.builder.master("local[*]").appName("spark-bsvm")
            .config("spark.driver.memory", os.environ.get("SPARK_DRIVER_MEMORY", "4g"))
            .config("spark.ui.showConsoleProgress", "false")
            .getOrCreate())


def configure_logging():
    """The jobs' log lines on stderr: time, level, logger and message; spark-bsvm's at INFO."""
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    logging.getLogger("spark_bsvm").setLevel(logging.INFO)  # one line per decomposition round


def session():
    """The job's Spark session (active, spark-submit's, or local), Spark's console logging at WARN."""
    configure_logging()
    spark = default_spark_session()
    spark.sparkContext.setLogLevel("WARN")
    log4j = spark.sparkContext._jvm.org.apache.logging.log4j
    log4j.core.config.Configurator.setLevel(MISSING_PATH_LOGGER, log4j.Level.ERROR)
    return spark


def add_model_option(parser):
    """The ``--model`` option of the jobs that read a saved model."""
    parser.add_argument("--model", help="saved model directory (default: [output] model)")


def model_path(args, config, use):
    """The saved model's path: ``--model``, else ``[output] model``; without either a ValueError (before Spark
    starts) that ``use`` completes ("evaluate", ...)."""
    path = args.model or config["output"]["model"]
    if not path:
        raise ValueError(f"no model to {use}: pass --model or set [output] model")
    return path


def load_model(path):
    """The ``PipelineModel`` saved at ``path``; a missing one is a ValueError in one line (the jobs' exit 2)."""
    from pyspark.ml import PipelineModel

    from spark_bsvm.app import loaders

    with loaders.reported_missing(f"no saved model at {path}: train one first (jobs/train.py saves it at "
                                  "[output] model) or pass --model"):
        return PipelineModel.load(path)


def run(main, argv=None):
    """``main(argv)``'s exit code; a ValueError (bad config or data) prints its message and gives 2."""
    try:
        return main(argv)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
