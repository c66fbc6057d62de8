"""The steps the jobs share: load and split the data, fit features + estimator, evaluate, write outputs.

A fitted model is a ``PipelineModel``: the feature stages of the loader
(fitted on the training part only) followed by the ``BSVMModel``, so that
``jobs/evaluate.py`` and ``jobs/predict.py`` encode new rows exactly as
training did.  Training time counts the estimator's fit alone, on the
encoded and cached training rows (reading and encoding are reported apart).
"""

import logging
import os
import re
import time
import uuid
from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.ml import Pipeline, PipelineModel
from pyspark.sql import SparkSession

from core.labels import LabelCountError
from spark_bsvm.app import loaders, methods, report
from spark_bsvm.engine.session import cancel_jobs, tagged_jobs, wait_for_tagged_tasks

log = logging.getLogger("spark_bsvm")

# What the directories the jobs replace whole hold at their top level, as (names, what they are): a saved
# PipelineModel; Spark's Parquet output (part files, their checksums, commit markers, a killed write's _temporary)
SAVED_MODEL = (re.compile(r"metadata|stages"), "a model saved by jobs/train.py")
SCORES = (re.compile(r"part-.*|\..*\.crc|_SUCCESS|_committed_.*|_started_.*|_temporary"),
          "scores written by jobs/predict.py")
DECISION_COLUMN = "decision"  # f(x) in the scores, beside the label (when the rows have one) and the prediction
# the files of [output] as the shipped configs name them, for the example in a message
OUTPUT_FILE_NAMES = {"report": "report.json", "plot": "error_vs_support.png"}


@dataclass
class Split:
    """Training and test rows (raw columns + label) and the loader's unfitted feature stages."""

    train: object
    test: object
    loaded: loaders.Loaded
    positive_label: object = None


def split_data(spark, data, model_width=None):
    """The rows of ``[data]`` split into train and test (``test_path``, or ``test_fraction`` by ``seed``).
    ``model_width``: the features of the saved model the rows are for (LIBSVM files are read that wide)."""
    if data["test_path"] or model_width is not None:
        data = loaders.with_libsvm_width(spark, data, [data["path"], data["test_path"]], model_width)
    loaded = loaders.with_scaling(loaders.load(spark, data), data["scale"])
    frame = loaded.frame.dropDuplicates() if data["deduplicate"] else loaded.frame
    if data["test_path"]:
        test = loaders.load(spark, data, path=data["test_path"]).frame
        return Split(frame, test.dropDuplicates() if data["deduplicate"] else test, loaded, data["positive_label"])
    frame = frame.persist(StorageLevel.MEMORY_AND_DISK)  # read (and de-duplicated) once for both parts
    train, test = frame.randomSplit([1.0 - data["test_fraction"], data["test_fraction"]], seed=data["seed"])
    return Split(train, test, loaded, data["positive_label"])


def fit(split, model_config, warm_start_from=None):
    """(PipelineModel, timings) of the configured method on ``split.train``.

    ``warm_start_from``: the path of a saved model whose support set the fit
    starts from, through the method's hook in ``spark_bsvm.app.methods`` (a
    ValueError if it has none).  Its support vectors must have the features
    this fit's stages produce (e.g. the same one-hot categories).
    """
    name = model_config["method"]
    estimator = methods.build_estimator(name, model_config["params"], features_col=split.loaded.features_col)
    if warm_start_from is not None:
        estimator = methods.warm_started(name, estimator, warm_start_from)
    start = time.perf_counter()
    features = Pipeline(stages=split.loaded.stages).fit(split.train)
    train = features.transform(split.train).select(split.loaded.features_col, "label")
    train = train.persist(StorageLevel.MEMORY_AND_DISK)
    n_train = train.count()
    prepared = time.perf_counter()
    log.info("training on %d rows with %s", n_train, name)
    try:
        svm = estimator.fit(train)
    except LabelCountError as exc:  # its fix is the estimators' (OneVsRest, StringIndexer): a job's is in [data]
        raise ValueError(label_count_message(exc.found, split.positive_label)) from None
    finally:
        train.unpersist()
    done = time.perf_counter()
    timings = {"train_rows": n_train, "training_seconds": done - prepared, "features_seconds": prepared - start}
    svm.expansion.metadata.update(timings)  # saved with the model, for jobs/evaluate.py
    return PipelineModel(features.stages + [svm]), timings


def label_count_message(found, positive_label):
    """What a job says when its training rows hold the distinct labels ``found``, not two, with the [data] setting
    to change: ``positive_label`` that matched no row (or every row), or is needed for more than two labels."""
    if positive_label is not None:
        which = "no" if found == [0.0] else "every"
        return (f"[data] positive_label = {positive_label!r} equals {which} training row's label, so the rows hold "
                "one class: give the positive class's label as the file writes it (KDD Cup 99's \"normal.\" ends "
                "with a dot)")
    if len(found) > 2:
        shown = ", ".join(repr(v) for v in found[:10]) + (", ..." if len(found) > 10 else "")
        return (f"the training rows hold {len(found)} labels ({shown}), and a job trains one model for two classes: "
                "set [data] positive_label to the positive class's label (every other label becomes negative)")
    return (f"every training row has the label {found[0]!r}: check that [data] label_column names the label "
            "column, and that the file holds rows of both classes")


def describe_run(config, timings, evaluation, pipeline_model):
    """The JSON report of one fit: data, method, params, timings, the evaluation, the training record and what
    the fit recorded on its validation rows (``report.validation_record``; None without them)."""
    data = config["data"]
    name = config["model"]["method"]
    svm = report.svm_stage(pipeline_model)
    return dict(evaluation, **timings, method=name, params=methods.method_params(name, config["model"]["params"]),
                data={k: data[k] for k in ("source", "path", "test_path", "test_fraction", "seed",
                                           "deduplicate", "scale", "positive_label")},
                training=report.training_record(svm), validation=report.validation_record(svm))


def save_model(config, pipeline_model):
    """Save the fitted pipeline to ``[output] model`` when set, replacing the model saved there."""
    path = config["output"]["model"]
    if path:
        save_replacing(pipeline_model, path)
        print(f"model written to {path}")


def save_replacing(model, path):
    """``model.write().save`` at ``path`` (``replaced_whole``), so that a failed or killed save leaves the model
    saved there before."""
    replaced_whole(path, lambda staged: model.write().save(staged))


REPLACE_ATTEMPTS = 5  # times a run moves aside what other runs put at its path before it gives up
FAILED_WRITE_SECONDS = 30.0  # at most this long for a failed write's other tasks to end before its folder goes


def replaced_whole(path, write):
    """The directory at ``path`` (any Hadoop filesystem) replaced by what ``write(staged)`` writes, such that a
    run failing or killed while writing leaves what was there before: ``write`` fills ``<path>.saving-<tag>``
    beside it, renamed into place once whole, and deleted where ``write`` fails, once the failed job's tasks still
    at work have ended (each may write its folders again; at most ``FAILED_WRITE_SECONDS``; its jobs carry a tag of
    their own).  Spark's own overwrite deletes the old directory first.  A kill
    between the renames leaves the old one at ``<path>.replaced-<tag>-<k>``, and one while writing an
    unfinished ``<path>.saving-<tag>``; neither is ever read in its place.

    Runs replacing one path at once (a scheduled run overlapping the one before) each put a whole directory
    there, the last one's staying: the new directory goes into place by a rename that fails where the path
    exists (``_rename_refusing``), where a plain Hadoop rename moved it into the directory another run had
    just put there (a model holding a stray folder, which the next run's ``check_replaceable`` refused); the
    run that finds the path taken moves that directory aside too, and tries again."""
    hadoop_path, target, filesystem = _hadoop_filesystem(path)
    tag = uuid.uuid4().hex[:12]
    staged = hadoop_path(f"{path.rstrip('/')}.saving-{tag}")
    spark, jobs = SparkSession.active(), f"spark-bsvm-save-{tag}"
    try:
        with tagged_jobs(spark, jobs, f"writing {path}", interrupt=False):
            write(staged.toString())
    except BaseException:
        _write_ended(spark, jobs, staged)
        filesystem.delete(staged, True)
        raise
    aside = []
    for attempt in range(REPLACE_ATTEMPTS):
        replaced = hadoop_path(f"{path.rstrip('/')}.replaced-{tag}-{attempt}")
        if filesystem.exists(target) and filesystem.rename(target, replaced):  # else another run moved it first
            aside.append(replaced)
        try:
            placed = _rename_refusing(filesystem, staged, target)
        except Exception as exc:
            if aside and not filesystem.exists(target):
                filesystem.rename(aside.pop(), target)
            raise OSError(f"could not move the new {path} from {staged} into place: {exc}") from exc
        if placed:
            for older in aside:
                filesystem.delete(older, True)
            return
    raise OSError(f"could not move the new {path} into place: other runs put theirs there {REPLACE_ATTEMPTS} times "
                  f"while this one moved it aside; the new one is at {staged}, the ones moved aside at "
                  f"{path.rstrip('/')}.replaced-{tag}-*")


def _write_ended(spark, jobs, staged):
    """End the failed write's jobs labelled ``jobs`` (a Ctrl-C leaves them running: pyspark cannot cancel a job
    from inside the call that waits on it) and wait, at most ``FAILED_WRITE_SECONDS``, for their tasks still at
    work, which would make their folders again in ``staged`` once it is deleted."""
    try:
        cancel_jobs(spark, jobs)
        if not wait_for_tagged_tasks(spark, jobs, FAILED_WRITE_SECONDS):
            log.warning("a failed write's tasks still ran after %gs: they may leave folders in %s",
                        FAILED_WRITE_SECONDS, staged)
    except Exception as exc:  # a session stopped meanwhile: its jobs ended with it, and the write's error stands
        log.debug("could not wait for the failed write's tasks: %s", exc)


def _rename_refusing(filesystem, source, target):
    """Rename the Hadoop path ``source`` to ``target`` of ``filesystem``, or False where ``target`` exists (Hadoop's
    ``FileContext.rename`` without its OVERWRITE option: one atomic step on HDFS, a test and a rename on a local
    disk); on a filesystem that has no ``FileContext``, the same test, then ``FileSystem.rename``."""
    context = SparkSession.active().sparkContext
    fs = context._jvm.org.apache.hadoop.fs
    # relative paths as the filesystem resolves them (FileContext has a working directory of its own)
    source, target = filesystem.makeQualified(source), filesystem.makeQualified(target)
    try:
        files = fs.FileContext.getFileContext(target.toUri(), filesystem.getConf())
    except Exception as exc:  # py4j's error for Hadoop's UnsupportedFileSystemException
        if "UnsupportedFileSystemException" not in str(exc):
            raise
        return not filesystem.exists(target) and filesystem.rename(source, target)
    try:
        files.rename(source, target, context._gateway.new_array(getattr(fs, "Options$Rename"), 0))
    except Exception as exc:
        if "FileAlreadyExistsException" in str(exc):
            return False
        raise
    return True


def check_replaceable(path, kind, option):
    """A ValueError naming ``option`` when ``path`` exists and holds anything but ``kind`` (``SAVED_MODEL`` or
    ``SCORES``): the jobs replace those whole, and would delete a folder of data or other outputs given by
    mistake (``--output out/quickstart``, the folder of the model being scored); or when it lies under a file,
    where the write would fail after the work; or, for ``SCORES``, when its Parquet files hold columns other
    than the scores' (Spark's Parquet data, the input itself, has the same file names).  Call it before any
    Spark job: it reads the filesystem's listing (any Hadoop filesystem) and, for Parquet, the files' footers."""
    if not path:
        return
    names, what = kind
    _, target, filesystem = _hadoop_filesystem(path)
    if not filesystem.exists(target):
        folder = target.getParent()
        while folder is not None and not filesystem.exists(folder):
            folder = folder.getParent()
        if folder is not None and not filesystem.getFileStatus(folder).isDirectory():
            raise ValueError(f"{option} {path} cannot be written: {folder.toString()} is a file, not a folder; "
                             "give a path under a folder")
        return
    if not filesystem.getFileStatus(target).isDirectory():
        raise ValueError(f"{option} {path} is a file, not {what}: the job would replace it; give a new directory")
    listed = [entry.getPath().getName() for entry in filesystem.listStatus(target)]
    strays = sorted(name for name in listed if not names.fullmatch(name))
    if strays:
        raise ValueError(f"{option} {path} holds {', '.join(strays[:5])}{', ...' if len(strays) > 5 else ''}, "
                         f"which is not {what}: the job replaces that directory whole and would delete them; "
                         "give a new directory")
    if kind is SCORES and any(name.startswith("part-") for name in listed):
        columns = _parquet_columns(path)
        if DECISION_COLUMN not in columns or len(set(columns) - {"label", DECISION_COLUMN}) > 1:
            raise ValueError(f"{option} {path} holds Parquet data of the columns {columns[:6]}"
                             f"{' ...' if len(columns) > 6 else ''}, not {what} (label, prediction, decision): the "
                             "job replaces that directory whole and would delete them; give a new directory")


def _parquet_columns(path):
    """The column names of the Parquet data at ``path``, read from its files' footers, or [] when Spark finds no
    schema there (files that are not Parquet): no rows are read."""
    from pyspark.errors import AnalysisException

    try:
        return SparkSession.active().read.parquet(path).columns
    except AnalysisException:
        return []


def check_writable_files(output):
    """A ValueError naming the key and the fix when ``[output]`` report or plot cannot be written: a folder at the
    path, a file where a folder above it should be, a folder this process may not write in, a plot format
    matplotlib does not write.  Call it before Spark starts: the jobs write them after the fit and the model."""
    for key in ("report", "plot"):
        path = output[key]
        if not path:
            continue
        if os.path.isdir(path):
            raise ValueError(f"[output] {key} {path} is a folder; give a file in it, e.g. "
                             f"--set output.{key}={os.path.join(path, OUTPUT_FILE_NAMES[key])}")
        folder = os.path.dirname(os.path.abspath(path))
        while not os.path.exists(folder):
            folder = os.path.dirname(folder)
        if not os.path.isdir(folder):
            raise ValueError(f"[output] {key} {path} cannot be written: {folder} is a file, not a folder; give a "
                             "path under a folder")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise ValueError(f"[output] {key} {path} cannot be written: this user may not write in {folder}; give "
                             "a path in a folder you can write")
    if output["plot"]:
        report.check_plot_format(output["plot"])


def _hadoop_filesystem(path):
    """(Hadoop's ``Path`` class, ``path`` as one, its ``FileSystem``) in the active Spark session's JVM."""
    context = SparkSession.active().sparkContext
    hadoop_path = context._jvm.org.apache.hadoop.fs.Path
    target = hadoop_path(path)
    return hadoop_path, target, target.getFileSystem(context._jsc.hadoopConfiguration())


def write_outputs(config, pipeline_model, run_report, test):
    """Write the plot (adding its points to the report) and the JSON report where ``[output]`` says."""
    output = config["output"]
    if output["plot"]:
        X, y = report.held_out_sample(pipeline_model, test, output["plot_rows"], seed=config["data"]["seed"])
        curve = report.error_vs_support(report.svm_stage(pipeline_model).expansion, X, y, output["plot"])
        run_report["error_vs_support"] = curve
        print(curve["note"] or f"plot written to {curve['plot']}")
    if output["report"]:
        report.write_json(run_report, output["report"])
        print(f"report written to {output['report']}")
