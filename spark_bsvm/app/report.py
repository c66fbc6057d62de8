"""Evaluation a person can read: test error, support size, times, confusion counts; JSON and a PNG.

``evaluate`` scores a fitted pipeline (feature stages + ``BSVMModel``) on
held-out rows in one Spark aggregation.  ``error_vs_support`` draws the
test error against the support size: the models along the training path when the method recorded one
(SpSVM-2, the slant sparsifier: ``core.support_path``), the validation error the fit recorded along that path
when it had validation rows (``core.selection``), the final model pruned to its s largest |coef|
for the methods where pruning is what one would do with the model (``PRUNABLE_METHODS``), and the
final model itself.
"""

import json
import os

import numpy as np
from pyspark.ml.functions import vector_to_array
from pyspark.sql import functions as F

from core.atomic_file import atomic_write
from core.support_path import path_mistakes, recorded_path
from spark_bsvm.ml.model import BSVMModel
from spark_bsvm.ml.summary import grid_table, validation_path


def svm_stage(pipeline_model):
    """The ``BSVMModel`` at the end of a fitted pipeline."""
    model = pipeline_model.stages[-1]
    if not isinstance(model, BSVMModel):
        raise ValueError(f"the pipeline's last stage is {type(model).__name__}, not a BSVMModel: "
                         "is this a model saved by the spark-bsvm jobs?")
    return model


def evaluate(pipeline_model, test):
    """Test error, support size and confusion counts of ``pipeline_model`` on ``test`` (with ``label``); a ValueError
    when a test row's label is neither of the model's two classes."""
    svm = svm_stage(pipeline_model)
    negative, positive = svm.classes
    scored = transformed(pipeline_model, test).select("label", svm.getPredictionCol())
    pred = F.col(svm.getPredictionCol())
    row = scored.agg(
        F.count(F.lit(1)).alias("rows"),
        F.sum((~F.col("label").isin(negative, positive)).cast("long")).alias("unknown_labels"),
        F.sum(((F.col("label") == positive) & (pred == positive)).cast("long")).alias("true_positive"),
        F.sum(((F.col("label") != positive) & (pred == positive)).cast("long")).alias("false_positive"),
        F.sum(((F.col("label") != positive) & (pred == negative)).cast("long")).alias("true_negative"),
        F.sum(((F.col("label") == positive) & (pred == negative)).cast("long")).alias("false_negative"),
    ).first().asDict()
    rows = row.pop("rows")
    if rows == 0:
        raise ValueError("the test part is empty: raise [data] test_fraction or give a larger test_path")
    if row.pop("unknown_labels"):  # scored as the negative class, the error would be of another question
        other = scored.select("label").where(~F.col("label").isin(negative, positive)).first()["label"]
        raise ValueError(f"the test rows hold the label {other!r}, and the model knows the labels {negative!r} and "
                         f"{positive!r}: code the labels as the training data did (or set [data] positive_label)")
    counts = {k: int(v or 0) for k, v in row.items()}
    errors = counts["false_positive"] + counts["false_negative"]
    return {"test_rows": int(rows), "test_error": errors / rows, "support_size": svm.numSupportVectors,
            "classes": {"negative": negative, "positive": positive}, "confusion": counts}


def transformed(pipeline_model, rows, whose="the model"):
    """``pipeline_model.transform(rows)``, a plan (no Spark job runs); rows lacking a column its stages read are a
    ValueError in one line that names the column, where Spark raised its own error and trace."""
    from pyspark.errors import AnalysisException, IllegalArgumentException

    try:
        return pipeline_model.transform(rows)
    except (AnalysisException, IllegalArgumentException) as exc:
        raise ValueError(f"{whose} cannot score these rows: {str(exc).splitlines()[0]}; give it rows with the "
                         "columns it was trained on") from None


def validation_record(svm):
    """What the fit recorded on its validation rows, or None without them: ``by_support_size`` [(s, validation
    error)] of the model's setting, the size it kept (``kept_size``) and that size's error, the rule that
    chose it, and ``grid``: with a grid of settings, one row per setting (``BSVMTrainingSummary.validationGrid``)."""
    metadata = svm.expansion.metadata
    record = metadata.get("validation")
    if not record:
        return None
    return {"by_support_size": validation_path(metadata), "kept_size": record["kept_size"],
            "kept_error": record["kept_error"], "select": record["select"], "grid": grid_table(metadata)}


def training_record(svm):
    """The JSON-able training metadata of a ``BSVMModel`` (method, params, rounds, ...)."""
    return json.loads(json.dumps(svm.trainingSummary, default=str))


def write_json(report, path):
    """Write ``report`` as indented JSON to ``path`` atomically (a crash leaves the old file)."""
    with atomic_write(path, "w") as f:
        json.dump(report, f, indent=2, sort_keys=True)
        f.write("\n")


def held_out_sample(pipeline_model, test, rows, seed=0):
    """(X, y) of at most ``rows`` test rows as numpy, features as the SVM sees them (after the stages)."""
    svm = svm_stage(pipeline_model)
    features = pipeline_model.transform(test).select(vector_to_array(svm.getFeaturesCol()).alias("x"), "label")
    total = features.count()
    if total > rows:
        features = features.sample(fraction=min(1.0, 1.2 * rows / total), seed=seed).limit(rows)
    collected = features.collect()
    X = np.array([r["x"] for r in collected], dtype=np.float64).reshape(len(collected), -1)
    return X, np.array([r["label"] for r in collected])


# Pruning to the s largest |coef| (``KernelExpansion.pruned``) means something for the dual methods (Dekel &
# Singer's section 5 prunes their weights; a budget SVM's prune=True does exactly this) and for the elastic budget
# SVM (its own projection drops the smallest |a_j|).  SpSVM-2 and the slant sparsifier record the models they
# passed through instead, and a pruned SpSVM-2 model (its bias is the sum of its coefficients) is no model any fit
# gives; the L0-norm SVM's reweighting has already chosen its few prototypes.
PRUNABLE_METHODS = ("csvc", "budget_l1", "budget_l2", "ebsvm")

# The plot's curves, drawn in this order when the report has points for them: report key -> (legend label,
# matplotlib style).  All but "validation" are test errors on the held-out rows.
CURVES = {
    "recorded": ("training path: test error of the fit's model at each size", {"marker": "o"}),
    "validation": ("training path: validation error (the fit's validation rows)", {"marker": ".", "linestyle": "--"}),
    "pruned": ("pruned: the final model cut to its s largest |coef|", {"marker": "o"}),
    "model": ("the final model", {"marker": "*", "markersize": 14, "linestyle": "none"}),
}


def pruning_curve(expansion, X, y, points=12):
    """[(s, test error of the expansion pruned to its s largest |coef|)] for s on a log grid up to n_s."""
    n = expansion.n_support
    if n == 0:
        return []
    sizes = np.unique(np.geomspace(1, n, num=min(points, n)).round().astype(int))
    return [(int(s), float(np.mean(expansion.pruned(int(s)).predict(X) != y))) for s in sizes]


def recorded_curve(expansion, X, y):
    """[(s, test error)] of the models along the path the fit recorded (``core.support_path``); [] when it
    recorded none."""
    path = recorded_path(expansion)
    if path is None or not len(y):
        return []
    signs = np.where(np.asarray(y) == expansion.classes[1], 1.0, -1.0)
    errors = path_mistakes(expansion, path, X, signs) / len(signs)
    return [(int(s), float(e)) for s, e in zip(path.sizes, errors)]


def error_vs_support(expansion, X, y, path):
    """Plot test error against support size to ``path`` (PNG); returns the plotted points.

    Returns ``{"recorded": [(s, error)], "validation": [(s, error)], "pruned":
    [(s, error)], "model": [(n_s, error)], "plot": path or None, "note": ...}``:
    the training path's test error ([] for methods that record none), its
    validation error as the fit recorded it ([] without validation rows), the
    pruning curve ([] unless the method is in ``PRUNABLE_METHODS``) and the
    final model.  The PNG is
    skipped with a note when matplotlib (the ``plot`` extra) is not installed.
    """
    method = expansion.metadata.get("method", "model")
    error = float(np.mean(expansion.predict(X) != y)) if len(y) else float("nan")
    curve = {"recorded": recorded_curve(expansion, X, y),
             "validation": validation_path(expansion.metadata),
             "pruned": pruning_curve(expansion, X, y) if method in PRUNABLE_METHODS else [],
             "model": [(int(expansion.n_support), error)],
             "plot": None, "note": None}
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        curve["note"] = "plot skipped: matplotlib is not installed (pip install -e '.[plot]')"
        return curve
    fig, ax = plt.subplots(figsize=(6, 4))
    for key, (label, style) in CURVES.items():
        if curve.get(key):
            sizes, errors = zip(*curve[key])
            ax.plot(sizes, 100 * np.array(errors), label=label, **style)
    ax.set_xscale("log")
    ax.set_xlabel("support size")
    ax.set_ylabel(f"error (%); test: {len(y)} held-out rows")
    ax.set_title(f"{method}: error vs support size")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)
    curve["plot"] = path
    return curve


def check_plot_format(path):
    """A ValueError when matplotlib, installed, writes no file of the format ``path``'s extension names (none:
    PNG); without matplotlib the plot is skipped with a note, whatever its name."""
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        return
    extension = os.path.splitext(path)[1].lstrip(".").lower()
    formats = FigureCanvasBase.get_supported_filetypes()
    if extension and extension not in formats:
        raise ValueError(f"[output] plot {path}: matplotlib writes no .{extension} file; name it .png (or one of "
                         f"{', '.join(sorted(formats))})")


def summary_line(report):
    """The one line every job prints: test error, support size, training time."""
    return (f"test error: {100 * report['test_error']:.2f}%   support vectors: {report['support_size']}   "
            f"training time: {report['training_seconds']:.1f}s")
