"""Scheduled retraining: a challenger against the registry's current model, promoted only if not worse.

One run (``retrain``):
  1. take the registry's lock (``ModelRegistry.lock``): another run holding it
     makes this one wait up to ``[retrain] lock_wait_minutes``, then give up
     with ``RegistryLocked``; remove what crashed runs left in the registry;
  2. if a version records this run's input fingerprint, the input was
     already handled: finish its promotion if a crash interrupted it, and
     report its decision again (re-runs are idempotent: no new version, and
     no Spark session is started);
  3. split the data, train the challenger (warm-started from the current
     model's support set when ``[retrain] warm_start`` and the method allow);
  4. evaluate the challenger and the current model on the same held-out rows;
  5. publish the challenger as a new version with the decision in its
     record; promote it when error(challenger) <= error(current) + margin.

The fingerprint hashes the [data], [model] and margin settings and, for
local input files, their sizes and modification times (remote inputs count
by path only: give each night's data its own path).  A local path with a
glob (``/data/*.csv``) counts every file under the folder above its first
wildcard, so a file that comes to match it is new input.
"""

import hashlib
import json
import os
import re

from pyspark import StorageLevel
from pyspark.ml import PipelineModel

from spark_bsvm.app import methods, report, training_run
from spark_bsvm.app.registry import ModelRegistry, local_uri

PROMOTED, KEPT = "promoted", "kept"
# what Hadoop's glob reads as a pattern (as Spark does in a path): *, ?, [abc], {a,b} and the backslash escape
_GLOB_CHARACTER = re.compile(r"[*?\[{\\]")


def input_fingerprint(config):
    """A hex digest of everything that determines the challenger and the decision."""
    data = config["data"]
    files = {}
    for path in (data["path"], data["test_path"]):
        if path and ("://" not in path or path.startswith("file://")):
            files[path] = _file_stats(_glob_folder(path.removeprefix("file://")))
    keyed = {"data": data, "model": config["model"], "margin": config["retrain"]["margin"],
             "warm_start": config["retrain"]["warm_start"], "files": files}
    return hashlib.sha256(json.dumps(keyed, sort_keys=True, default=str).encode()).hexdigest()


def _glob_folder(path):
    """``path``, or for a glob the folder above its first wildcard: the files the glob matches may change while
    its text stays the same."""
    wildcard = _GLOB_CHARACTER.search(path)
    return path if wildcard is None else os.path.dirname(path[:wildcard.start()]) or "."


def _file_stats(path):
    """[(relative path, size, mtime_ns)] of a file or of every file under a directory."""
    if os.path.isfile(path):
        info = os.stat(path)
        return [(".", info.st_size, info.st_mtime_ns)]
    stats = []
    for folder, _, names in sorted(os.walk(path)):
        for name in sorted(names):
            full = os.path.join(folder, name)
            info = os.stat(full)
            stats.append((os.path.relpath(full, path), info.st_size, info.st_mtime_ns))
    return stats


def retrain(config, session):
    """(outcome, version, record) of one retraining run; outcome is ``PROMOTED`` or ``KEPT``.

    ``session()`` gives the Spark session; it is called only when there is a challenger to train.
    ``RegistryLocked`` when another run holds the registry for longer than ``[retrain] lock_wait_minutes``.
    """
    settings = config["retrain"]
    methods.check_model(config["model"])  # before the registry, the data or Spark are touched
    if settings["warm_start"]:
        methods.check_warm_start(config["model"]["method"])  # before anything is read or trained
    registry = ModelRegistry(settings["registry"])
    with registry.lock(wait_seconds=60.0 * settings["lock_wait_minutes"]):
        registry.clean_staging()
        fingerprint = input_fingerprint(config)
        done = registry.find("fingerprint", fingerprint)
        if done is not None:
            return _replay(registry, done)
        return _train_and_decide(session(), config, registry, fingerprint)


def _train_and_decide(spark, config, registry, fingerprint):
    """Steps 3-5 of the module doc, holding the registry's lock."""
    settings = config["retrain"]
    current = registry.current()
    current_model = PipelineModel.load(registry.model_uri(current)) if current is not None else None
    warm = registry.model_uri(current) if settings["warm_start"] and current is not None else None
    split = training_run.split_data(spark, config["data"])
    if current_model is not None:  # the rows' columns, before the challenger's fit rather than after it
        report.transformed(current_model, split.test, f"the current model (version {current})")
    challenger, timings = training_run.fit(split, config["model"], warm_start_from=warm)
    test = split.test.persist(StorageLevel.MEMORY_AND_DISK)
    challenger_eval = report.evaluate(challenger, test)
    current_eval = report.evaluate(current_model, test) if current_model is not None else None
    promote = current_eval is None or (challenger_eval["test_error"]
                                       <= current_eval["test_error"] + settings["margin"])
    record = {"fingerprint": fingerprint, "decision": PROMOTED if promote else KEPT, "baseline_version": current,
              "margin": settings["margin"], "warm_started": warm is not None,
              "challenger": training_run.describe_run(config, timings, challenger_eval, challenger),
              "current": current_eval}
    version = registry.publish(lambda path: challenger.write().save(local_uri(path)), record)
    if promote:
        registry.promote(version)
    test.unpersist()
    return record["decision"], version, record


def _replay(registry, version):
    """The outcome of an input handled before; completes a promotion that a crash cut short (the registry's
    current version is still the one the challenger was measured against).  A promotion that another version
    has superseded since (a later run's, or one made by hand) is reported, not made again: a scheduler's
    retry or backfill of an old input must not roll the registry back."""
    record = dict(registry.record(version), replayed=True)
    current = registry.current()
    if record["decision"] == PROMOTED and current != version:
        if current == record["baseline_version"]:
            registry.promote(version)
        else:
            record["superseded_by"] = current
    return record["decision"], version, record
