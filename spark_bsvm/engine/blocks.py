"""From a DataFrame to the numpy blocks the tasks hold: checks on the driver, Arrow to numpy in the task."""

import numpy as np
from pyspark.errors.exceptions.base import IllegalArgumentException

from core.labels import two_classes


class ColumnError(IllegalArgumentException, ValueError):
    """A missing or mistyped column.  An ``IllegalArgumentException``, as MLlib raises for one (MLflow's
    autolog finds a model's input columns by that type and "does not exist"), and a ``ValueError``."""


def check_features_column(df, features_col):
    """A ``ColumnError`` unless ``df`` has the vector (or numeric array) column ``features_col``."""
    from pyspark.ml.linalg import VectorUDT
    from pyspark.sql.types import ArrayType, NumericType

    fields = {field.name: field.dataType for field in df.schema.fields}
    _check_present(fields, "features", features_col)
    features = fields[features_col]
    if not (isinstance(features, VectorUDT)
            or isinstance(features, ArrayType) and isinstance(features.elementType, NumericType)):
        raise ColumnError(f"features column {features_col!r} has type {features.simpleString()}, not a vector or an "
                          "array of numbers: assemble the feature columns with pyspark.ml.feature.VectorAssembler")


def features_as_array(df, features_col):
    """The checked features column ``features_col`` of ``df`` as an array<double> column (vectors or arrays of
    numbers in, dense rows out: what Arrow hands a pandas UDF as one numpy array per row)."""
    from pyspark.ml.functions import vector_to_array
    from pyspark.ml.linalg import VectorUDT
    from pyspark.sql import functions as F

    check_features_column(df, features_col)
    features = F.col(features_col)
    if isinstance(df.schema[features_col].dataType, VectorUDT):
        features = vector_to_array(features)
    return features.cast("array<double>")


def _check_present(fields, role, name):
    if name not in fields:
        raise ColumnError(f"the {role} column {name!r} does not exist in the DataFrame (its columns: "
                          f"{sorted(fields)}); set {role}Col to one of them")


def check_schema(df, features_col, label_col, weight_col=None):
    """A ``ColumnError`` naming a missing or mistyped column, from the schema alone (no Spark job)."""
    from pyspark.sql.types import BooleanType, NumericType, StringType

    check_features_column(df, features_col)
    fields = {field.name: field.dataType for field in df.schema.fields}
    for role, name in [("label", label_col)] + ([("weight", weight_col)] if weight_col else []):
        _check_present(fields, role, name)
    if not isinstance(fields[label_col], (NumericType, StringType, BooleanType)):
        raise ColumnError(f"label column {label_col!r} has type {fields[label_col].simpleString()}: labels must be "
                          "numbers, strings or booleans with exactly two values")
    if weight_col and not isinstance(fields[weight_col], NumericType):
        raise ColumnError(f"weight column {weight_col!r} has type {fields[weight_col].simpleString()}, not a "
                          "number")


def check_training_data(prepared, features_col, label_col, weight_col=None):
    """(the two label values, the row count, {partition id: rows} of the non-empty partitions) of the
    training data, or a ValueError naming the problem.  Weights must be finite and >= 0 (the estimators'
    rule), and the engine itself takes positive weights only (as ``LocalEngine``): the estimators drop the
    rows of weight 0 first.  The rows per partition come with the checks' one pass over the data (Spark
    Connect has no cheaper way to them)."""
    from pyspark.sql import functions as F

    bad_weight = zero_weight = F.lit(False)
    if weight_col:
        w = F.col("weight")
        bad_weight = w.isNull() | F.isnan(w) | (w < 0) | (w == float("inf"))
        zero_weight = w == 0
    groups = prepared.withColumn("partition", F.spark_partition_id()).groupBy("label", "partition").agg(
        F.count(F.lit(1)).alias("rows"), F.sum(F.col("features").isNull().cast("long")).alias("null_features"),
        F.sum(bad_weight.cast("long")).alias("bad_weights"), F.sum(zero_weight.cast("long")).alias("zero_weights"),
    ).collect()
    n_rows = sum(g["rows"] for g in groups)
    if n_rows == 0:
        raise ValueError("the training data is empty: the DataFrame has no rows")
    null_labels = sum(g["rows"] for g in groups if g["label"] is None)
    if null_labels:
        raise ValueError(f"label column '{label_col}' has {null_labels} null value(s); drop or fill those rows")
    null_features = sum(g["null_features"] for g in groups)
    if null_features:
        raise ValueError(f"features column '{features_col}' has {null_features} null value(s); "
                         "drop or impute those rows")
    bad_weights = sum(g["bad_weights"] for g in groups)
    if bad_weights:
        raise ValueError(f"weight column '{weight_col}' has {bad_weights} value(s) that are null, NaN, infinite "
                         "or negative; weights must be >= 0 and finite")
    zero_weights = sum(g["zero_weights"] for g in groups)
    if zero_weights:  # the estimators drop these rows before: only SparkEngine's own callers get here
        raise ValueError(f"weight column '{weight_col}' has {zero_weights} weight(s) of 0: SparkEngine trains on "
                         "positive weights only; drop those rows (they contribute nothing), as the estimators do")
    partition_rows = {}
    for g in groups:
        partition_rows[g["partition"]] = partition_rows.get(g["partition"], 0) + g["rows"]
    return two_classes(list({g["label"] for g in groups})), int(n_rows), partition_rows


def _check_sizes(sizes, n_features):
    if np.any(sizes != n_features):
        raise ValueError(f"feature vectors must all have {n_features} entries (the size of the first row), "
                         f"found sizes {sorted(set(sizes.tolist()) - {n_features})[:5]}; "
                         "assemble the features consistently")


def rows_from_arrow(column, n_features):
    """The features column of a task's Arrow batches as a dense array or a CSR block.

    Either a list<double> column (an array<double> or array<float> features column: dense rows) or a
    VectorUDT column (Arrow struct type/size/indices/values, dense and sparse rows mixed).
    """
    import pyarrow as pa
    import scipy.sparse as sp

    if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
        _check_sizes(column.value_lengths().fill_null(0).to_numpy(zero_copy_only=False), n_features)
        flat = column.flatten().to_numpy(zero_copy_only=False)
        return np.ascontiguousarray(flat.reshape(len(column), n_features), dtype=np.float64)
    kinds = column.field("type").to_numpy(zero_copy_only=False)
    values = column.field("values")
    sizes = np.where(kinds == 1, values.value_lengths().to_numpy(zero_copy_only=False),
                     column.field("size").fill_null(0).to_numpy(zero_copy_only=False))
    _check_sizes(sizes, n_features)
    if np.all(kinds == 1):  # all dense
        flat = values.flatten().to_numpy(zero_copy_only=False)
        return np.ascontiguousarray(flat.reshape(len(column), n_features), dtype=np.float64)
    # CSR in one pass over Arrow's flattened lists: a sparse row brings its indices, a dense row
    # the positions 0..p-1; explicit zeros are dropped
    lengths = values.value_lengths().fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    data = values.flatten().to_numpy(zero_copy_only=False).astype(np.float64)
    row_of = np.repeat(np.arange(len(column)), lengths)
    starts = np.cumsum(lengths) - lengths
    indices = np.arange(data.size, dtype=np.int64) - starts[row_of]
    from_sparse = np.repeat(kinds == 0, lengths)
    indices[from_sparse] = column.field("indices").flatten().to_numpy(zero_copy_only=False)
    keep = data != 0.0
    indptr = np.concatenate([[0], np.cumsum(np.bincount(row_of[keep], minlength=len(column)))])
    return sp.csr_matrix((data[keep], indices[keep], indptr), shape=(len(column), n_features))


def partition_block(batches, pid, n_features, classes, has_weight):
    """A task's Arrow batches as a ``PartitionData`` (a ValueError names what is wrong with its rows)."""
    import pyarrow as pa

    from core.partition.data import PartitionData

    batches = list(batches)
    table = pa.Table.from_batches(batches) if batches else None
    if table is None or table.num_rows == 0:
        raise ValueError(f"partition {pid} of the training data is empty, although every partition had rows when "
                         "the data were checked: the DataFrame gives other rows each time it is read (a "
                         "nondeterministic source or transformation); cache or checkpoint it before the fit")
    rows = rows_from_arrow(table.column("features").combine_chunks(), n_features)
    labels = np.asarray(table.column("label").to_pylist())
    y = np.where(labels == classes[1], 1.0, -1.0)
    weight = table.column("weight").to_numpy() if has_weight else np.ones(len(y))
    ids = (np.int64(pid) << 40) + np.arange(len(y), dtype=np.int64)
    return PartitionData.build(rows, y, weight, ids)
