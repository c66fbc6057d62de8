"""Data loaders for the jobs: one function per input format, all returning a ``Loaded``.

A ``Loaded`` is a DataFrame of raw columns with a double ``label`` column,
plus the unfitted Spark ML stages that build the feature vector from the
raw columns (a VectorAssembler, KDD Cup 99's one-hot encoders, a scaler).
The jobs fit those stages on the training part only and save them with the
model (a PipelineModel), so evaluation and prediction apply the same
encoding to new rows.

Formats (``[data] source``):
    libsvm            LIBSVM/SVMlight text through Spark's ``libsvm`` source
    csv               delimited text such as UCI ``covtype.data(.gz)``; label at ``label_column``
    kddcup99          KDD Cup 99 (41 features, 3 categorical, label last with a trailing dot)
    parquet           a vector column or numeric columns, plus a label column
    generated         the quick-start rings (``core.synthetic.make_rings``)
    forest_synthetic  the Forest-shaped set (``core.synthetic.make_forest_like``), written once as Parquet
"""

import functools
from contextlib import contextmanager
from dataclasses import dataclass

from pyspark.ml.feature import MinMaxScaler, OneHotEncoder, StandardScaler, StringIndexer, VectorAssembler
from pyspark.ml.functions import array_to_vector
from pyspark.ml.linalg import VectorUDT
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, NumericType

from spark_bsvm.app.generated_data import rings_frame, write_forest_parquet

FEATURES = "features"

# KDD Cup 99 (kddcup.names): 41 features, label last; these three are symbolic
KDD_COLUMNS = 42
KDD_CATEGORICAL = {1: "protocol_type", 2: "service", 3: "flag"}


@dataclass
class Loaded:
    """Raw rows with a double ``label``, the unfitted stages building ``features_col`` from them."""

    frame: object
    stages: list
    features_col: str = FEATURES


def load(spark, data, path=None, labelled=True):
    """The ``Loaded`` rows of the ``[data]`` config section (``path`` overrides ``data["path"]``).
    ``labelled=False``: rows to score, which Parquet may give without their label column (the text formats
    hold a label in every row)."""
    source = data["source"]
    if source not in SOURCES:
        raise ValueError(f"[data] source {source!r} is unknown; use one of {sorted(SOURCES)}")
    path = path or data["path"]
    if path is None and source not in ("generated",):
        raise ValueError(f"[data] source {source!r} needs a path: set [data] path (or --set data.path=...)")
    with reported_missing(f"no {source} input at {path}: check [data] path, test_path or --input"):
        read = functools.partial(load_parquet, labelled=False) if source == "parquet" and not labelled \
            else SOURCES[source]
        loaded = read(spark, data, path)
    if "label" not in loaded.frame.columns:
        return loaded
    return Loaded(_binary_label(loaded.frame, data["positive_label"]), loaded.stages, loaded.features_col)


@contextmanager
def reported_missing(message):
    """Spark's error for a path that does not exist (on Spark's default filesystem, which may not be the local
    one) as ``ValueError(message)``, the jobs' one line and exit 2; its other errors as they are."""
    from pyspark.errors import AnalysisException

    try:
        yield
    except AnalysisException as exc:
        if "PATH_NOT_FOUND" in str(exc):  # the condition's name, in the message of every pyspark version
            raise ValueError(message) from None
        raise


def with_scaling(loaded, scale):
    """``loaded`` with a scaler stage appended (``none``, ``minmax`` to [0, 1], ``standard`` to unit variance)."""
    if scale == "none":
        return loaded
    if scale == "minmax":
        scaler = MinMaxScaler(inputCol=loaded.features_col, outputCol="features_scaled")
    else:  # withMean=False keeps sparse vectors sparse
        scaler = StandardScaler(inputCol=loaded.features_col, outputCol="features_scaled", withMean=False)
    return Loaded(loaded.frame, loaded.stages + [scaler], "features_scaled")


def load_libsvm(spark, data, path):
    """LIBSVM text (1-based indices) through Spark's ``libsvm`` source: a sparse ``features`` vector."""
    reader = spark.read.format("libsvm")
    if data["num_features"]:
        reader = reader.option("numFeatures", data["num_features"])
    return Loaded(reader.load(path), [])


def with_libsvm_width(spark, data, paths, model_width=None):
    """``data`` with ``num_features`` set for LIBSVM files whose highest feature index differs, which Spark
    would read as vectors of different sizes (a test file that lacks the training file's last features, as
    LIBSVM's own a9a and a9a.t do): the widest of ``paths``, or ``model_width``, the features a saved model
    was trained on, which no file may exceed.  Each file's width is inferred once, as its load would have:
    the loads that follow, given ``num_features``, infer nothing.  Other sources, and a ``num_features`` set
    in the config, are left as they are."""
    paths = [path for path in paths if path]
    if data["source"] != "libsvm" or data["num_features"] or not paths:
        return data
    widths = {}
    for path in paths:
        with reported_missing(f"no libsvm input at {path}: check [data] path, test_path or --input"):
            widths[path] = spark.read.format("libsvm").load(path).schema[FEATURES].metadata["numFeatures"]
    if model_width is None:
        return dict(data, num_features=max(widths.values()))
    for path, width in widths.items():
        if width > model_width:
            raise ValueError(f"{path} has features up to index {width}, but the model was trained on "
                             f"{model_width}: score rows with the training data's features")
    return dict(data, num_features=model_width)


def check_csv_label(frame, data, path, model_width):
    """A ValueError when ``frame``, csv rows to score read from ``path``, has fewer columns than the rows of the
    model's training file, ``model_width`` features and the label: a file without its label column, where the
    loader took a feature for the label and the model's stages failed on a feature column missing by Spark's
    name for it (``_c3``).  Other sources are left as they are."""
    if data["source"] != "csv" or len(frame.columns) > model_width:
        return
    raise ValueError(f"{path} has {len(frame.columns)} columns, and the model was trained on csv rows of "
                     f"{model_width + 1} ({model_width} features and the label, at [data] label_column = "
                     f"{data['label_column']}): rows to score from csv need the label column too, as csv files have "
                     "no header and their columns are told apart by position; give each row a label of any value "
                     "at that position, or write the rows as Parquet, which may leave the label out "
                     "(data.source=parquet, the feature columns named as Spark named the training file's: _c0, "
                     "_c1, ... but the label's)")


def load_csv(spark, data, path):
    """Delimited text without header (gzip is read transparently); every column but the label is a feature."""
    frame = spark.read.csv(path, sep=data["separator"], header=False, inferSchema=False)
    columns = frame.columns
    position = data["label_column"]
    if not isinstance(position, int) or not -len(columns) <= position < len(columns):
        raise ValueError(f"[data] label_column = {position!r} is not a column position of {path} "
                         f"({len(columns)} columns): use 0 for the first column, -1 for the last")
    label = columns[position]
    features = [c for c in columns if c != label]
    _check_first_csv_row(frame.first(), features, label, path, data["positive_label"])
    frame = frame.select(*(F.col(c).cast("double").alias(c) for c in features), F.col(label).alias("label"))
    return Loaded(frame, [VectorAssembler(inputCols=features, outputCol=FEATURES, handleInvalid="error")])


def _check_first_csv_row(row, features, label, path, positive_label):
    """A ValueError naming the likely cause when ``row``, the file's first (a one-row Spark job; the file's
    columns took one already), has a feature that is not a number (a header line: the files are read without
    one) or a text label with no ``positive_label`` to compare it with.  Spark would fail the first job that
    casts them, after the session's other work, in a traceback."""
    if row is None:
        return
    for name in features:
        if row[name] is not None and not _is_number(row[name]):
            raise ValueError(f"the first row of {path} has {row[name]!r} where a feature's number should be: "
                             "remove its header line (csv files are read without one), or give the file's "
                             "feature columns only numbers")
    if positive_label is None and row[label] is not None and not _is_number(row[label]):
        raise ValueError(f"the first row of {path} has the label {row[label]!r}, which is no number: set [data] "
                         f"positive_label to the positive class's value (e.g. --set data.positive_label={row[label]})")


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def load_kddcup99(spark, data, path):
    """KDD Cup 99: columns 1-3 one-hot encoded with Spark ML (unseen values get their own slot), label last."""
    frame = spark.read.csv(path, sep=",", header=False, inferSchema=False)
    if len(frame.columns) != KDD_COLUMNS:
        raise ValueError(f"{path} has {len(frame.columns)} columns, KDD Cup 99 has {KDD_COLUMNS} "
                         "(41 features and the label)")
    names = [KDD_CATEGORICAL.get(i, f"x{i}") for i in range(KDD_COLUMNS - 1)]
    numeric = [n for i, n in enumerate(names) if i not in KDD_CATEGORICAL]
    categorical = list(KDD_CATEGORICAL.values())
    raw = frame.columns
    frame = frame.select(*(F.col(raw[i]).cast("double").alias(n) if n in numeric else F.col(raw[i]).alias(n)
                           for i, n in enumerate(names)), F.col(raw[-1]).alias("label"))
    indexed = [f"{c}_index" for c in categorical]
    encoded = [f"{c}_onehot" for c in categorical]
    stages = [StringIndexer(inputCols=categorical, outputCols=indexed, handleInvalid="keep"),
              OneHotEncoder(inputCols=indexed, outputCols=encoded, handleInvalid="keep"),
              VectorAssembler(inputCols=numeric + encoded, outputCol=FEATURES)]
    return Loaded(frame, stages)


def load_parquet(spark, data, path, labelled=True):
    """Parquet with a vector (or array) column ``features_column``, or numeric ``feature_columns``.
    ``labelled=False``: rows to score, which may come without the label column."""
    frame = spark.read.parquet(path)
    label = data["label_column"]
    has_label = isinstance(label, str) and label in frame.columns
    if labelled and not has_label:
        raise ValueError(f"[data] label_column = {label!r} is not a column of {path}; its columns are "
                         f"{frame.columns}")
    frame = frame.withColumnRenamed(label, "label") if has_label and label != "label" else frame
    kept = ["label"] if has_label else []
    vector = data["features_column"]
    if vector is not None:
        if vector not in frame.columns:
            raise ValueError(f"[data] features_column {vector!r} is not a column of {path}: {frame.columns}")
        kind = frame.schema[vector].dataType
        if isinstance(kind, ArrayType):
            frame = frame.withColumn(vector, array_to_vector(vector))
        elif not isinstance(kind, VectorUDT):
            raise ValueError(f"[data] features_column {vector!r} is {kind.simpleString()}, not a vector or "
                             "array; list numeric columns in feature_columns instead")
        return Loaded(frame.select(vector, *kept), [], vector)
    columns = data["feature_columns"] or [c for c in frame.columns if c != "label"]
    bad = [c for c in columns if c not in frame.columns or not isinstance(frame.schema[c].dataType, NumericType)]
    if bad:
        raise ValueError(f"[data] feature columns {bad} of {path} are missing or not numeric; set "
                         "feature_columns to numeric columns or features_column to a vector column")
    frame = frame.select(*(F.col(c).cast("double").alias(c) for c in columns), *kept)
    return Loaded(frame, [VectorAssembler(inputCols=columns, outputCol=FEATURES, handleInvalid="error")])


def _binary_label(frame, positive):
    """``label`` as double; with ``positive`` set, 1.0 where the raw label equals it and 0.0 elsewhere."""
    if positive is None:
        return frame.withColumn("label", F.col("label").cast("double"))
    raw = F.col("label")
    match = raw == F.lit(positive) if isinstance(positive, str) else raw.cast("double") == float(positive)
    return frame.withColumn("label", F.when(match, 1.0).otherwise(0.0))


def _generated(spark, data, path):
    frame = rings_frame(spark, data)
    columns = [c for c in frame.columns if c != "label"]
    return Loaded(frame, [VectorAssembler(inputCols=columns, outputCol=FEATURES)])


def _forest_synthetic(spark, data, path):
    write_forest_parquet(path, rows=data["rows"], noise=data["noise"], seed=data["seed"])
    return load_parquet(spark, dict(data, label_column="label", features_column=None, feature_columns=None),
                        path)


SOURCES = {"libsvm": load_libsvm, "csv": load_csv, "kddcup99": load_kddcup99, "parquet": load_parquet,
           "generated": _generated, "forest_synthetic": _forest_synthetic}
