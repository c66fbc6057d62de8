"""From a DataFrame to the numpy blocks the tasks hold: the data's checks (a Spark job, or each task's own
checks of its rows judged on the driver), Arrow to numpy in the task."""

from dataclasses import dataclass, replace
from typing import NamedTuple, Optional

import numpy as np
from pyspark.errors.exceptions.base import IllegalArgumentException

from core.kernels import scale_gamma
from core.labels import check_training_classes, two_classes
from core.moments import group_moments, value_moments
from core.rows import LARGEST_FEATURE, FeatureValueError, csr_from_arrays, dense_enough, to_dense
from spark_bsvm.engine.task_threads import use_task_cores
from spark_bsvm.engine.worker_gc import freeze_at_task_start


# what a task on an executor without spark-bsvm (or a package it needs) says, with its host and the import error:
# the functions Spark ships to the tasks refer to nothing of spark-bsvm by name (they would fail to unpickle,
# deep in a Java trace, after Spark's retries) and format this, which they hold
MISSING_PACKAGE = ("executor {host} cannot import what a spark-bsvm fit needs ({error}): ship spark-bsvm to the "
                   "executors: --py-files with a zip of core/ and spark_bsvm/, or pip install its wheel on every "
                   "node (README: Running on a cluster)")


class ColumnError(IllegalArgumentException, ValueError):
    """A missing or mistyped column.  An ``IllegalArgumentException``, as MLlib raises for one (MLflow's
    autolog finds a model's input columns by that type and "does not exist"), and a ``ValueError``."""


def column(name):
    """The DataFrame column named ``name`` as it is spelled, dots, spaces and backticks included (``F.col``
    reads ``a.b`` as the field ``b`` of a struct column ``a``): ``F.col`` of the name quoted in backticks."""
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")


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

    check_features_column(df, features_col)
    features = column(features_col)
    if isinstance(df.schema[features_col].dataType, VectorUDT):
        features = vector_to_array(features)
    return features.cast("array<double>")


def rows_column(df, features_col, n_features, compute, return_type):
    """A column of ``compute(X)`` on the feature rows of each Arrow batch of ``df``: X dense or CSR (as
    ``rows_from_arrow`` gives them) with ``n_features`` columns (rows of another size fail in the task).

    ``compute`` returns a dict of equal-length 1-D arrays for a struct ``return_type`` or a 2-D array for
    ``"array<double>"``.  With pyspark's Arrow UDFs (4.1 and later) the features column reaches numpy as
    one block per batch, vector structs included, without a Python object per row (the pandas UDF of
    older versions builds one numpy array per row: 1,000,000 rows of 54 features took ~1.3 s of the
    task's time that way).  Rows holding NaN, infinity or values above ``LARGEST_FEATURE`` in magnitude fail
    the task with a ValueError that names ``features_col`` and the fix (``_refusing_bad_values``).
    """
    import pyarrow as pa
    from pyspark import TaskContext
    from pyspark.sql import functions as F

    check_features_column(df, features_col)
    compute = _refusing_bad_values(compute, features_col)
    if not hasattr(F, "arrow_udf"):  # pyspark < 4.1
        return _rows_column_pandas(df, features_col, n_features, compute, return_type)

    @F.arrow_udf(return_type)
    def batch(column: pa.Array) -> pa.Array:
        context = TaskContext.get()
        freeze_at_task_start(context)
        use_task_cores(context)
        out = compute(rows_from_arrow(column, n_features))
        if isinstance(out, dict):
            return pa.StructArray.from_arrays([pa.array(v) for v in out.values()], names=list(out))
        offsets = np.arange(out.shape[0] + 1, dtype=np.int32) * out.shape[1]
        return pa.ListArray.from_arrays(offsets, pa.array(out.ravel()))

    return batch(column(features_col))


def _refusing_bad_values(compute, features_col):
    """``compute`` of rows, refusing those holding NaN, infinity or values above ``LARGEST_FEATURE`` in magnitude
    with a ValueError that names the features column ``features_col``, the rule and the fix, where the core's
    (``core.rows.FeatureValueError``) knows no column, nor that the rows were being scored."""
    def scored(X):
        try:
            return compute(X)
        except FeatureValueError as exc:
            found = f"values of magnitude up to {exc.peak:.3g}" if np.isfinite(exc.peak) else "NaN or infinite values"
            raise ValueError(f"features column '{features_col}' holds {found}: a model scores no row holding NaN, "
                             f"infinity or values above {LARGEST_FEATURE:g} in magnitude, as its fit took none; "
                             "impute them (pyspark.ml.feature.Imputer, on the columns before they are assembled) or "
                             "drop those rows (a filter, or VectorAssembler's handleInvalid='skip') before transform, "
                             "or rescale the features (pyspark.ml.feature.StandardScaler)") from None

    return scored


def _rows_column_pandas(df, features_col, n_features, compute, return_type):
    import pandas as pd
    from pyspark import TaskContext
    from pyspark.sql import functions as F

    def rows(arrays):
        context = TaskContext.get()
        freeze_at_task_start(context)
        use_task_cores(context)
        return np.stack(arrays.to_numpy()) if len(arrays) else np.zeros((0, n_features))

    if return_type.startswith("array"):
        def batch(arrays: pd.Series) -> pd.Series:
            return pd.Series(list(compute(rows(arrays))))
    else:
        def batch(arrays: pd.Series) -> pd.DataFrame:
            return pd.DataFrame(compute(rows(arrays)))

    return F.pandas_udf(batch, return_type)(features_as_array(df, features_col))


def _check_present(fields, role, name, note=""):
    if name not in fields:
        raise ColumnError(f"the {role} column {name!r} does not exist in the DataFrame (its columns: "
                          f"{sorted(fields)}); set {role}Col to one of them{note}")


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


def declared_features(field):
    """The feature count that a features column's metadata declares (``ml_attr.num_attrs``, as
    ``VectorAssembler`` and Spark's LIBSVM reader write it; ``field``: the column's ``StructField``), or None
    (an ``array_to_vector`` column, an array column): a bound for the stage's Arrow batches, never trusted as
    the rows' size, which the checks find."""
    declared = (field.metadata.get("ml_attr") or {}).get("num_attrs")
    return declared if isinstance(declared, int) and declared > 0 else None


@dataclass(frozen=True)
class DataSummary:
    """What the checks of the training data found: the two label values (negative first), the rows, the
    rows of each non-empty input partition ({partition id: rows}), the feature count, scikit-learn's
    ``gamma="scale"`` for the training rows, those not marked for validation (``core.kernels.scale_gamma``),
    of the rows, those marked for validation (0 without a ``validation`` column), whether the tasks hold
    the rows as dense blocks (``core.rows.dense_enough`` of the nonzero values counted, of all rows), and the
    input's partitions, empty ones included, where a Spark job of checks read them all (else None)."""

    classes: list
    n_rows: int
    partition_rows: dict
    n_features: int
    scale_gamma: float
    n_validation: int = 0
    dense: bool = False
    n_partitions: Optional[int] = None


def _variance(groups, n_features):
    """Var(X) over every feature value (population variance, as numpy's), from each group's rows, the
    ``mean`` of its values and their ``squares`` about it (``core.moments.value_moments``): the groups'
    squares and those of their means about the mean of all values, each a sum of squares about a mean (no
    cancellation beside a large mean)."""
    n = np.array([g["rows"] for g in groups], dtype=np.float64)
    means = np.array([g["mean"] for g in groups], dtype=np.float64)
    mean = float(n @ means) / n.sum()
    squares = sum(g["squares"] for g in groups) + n_features * float(n @ (means - mean) ** 2)
    return squares / (n.sum() * n_features)


def check_training_data(prepared, features_col, label_col, weight_col=None, row_bytes=None):
    """The ``DataSummary`` of the training data (columns features, label and, with ``weight_col``, weight),
    or a ValueError naming the problem, from one Spark job over the data that ends before any training task
    starts: no rows, null labels, labels other than two values, null features, NaN, infinite, null or too
    large (``LARGEST_FEATURE``) feature values, vectors of different sizes, weights that are null, NaN,
    infinite, negative or 0.  The estimators drop the rows of weight 0 first (they contribute nothing;
    MLlib's meaning); the engine itself takes positive weights only, as ``LocalEngine``.

    Each task of the job checks its partition as a training task checks its own (``partition_groups``) and
    returns its groups, a few numbers each whatever the width of the rows (``judged_groups``): where the
    checks were Spark's ``Summarizer`` per label, partition and mark, each group's state held and shuffled
    every feature's moments, and the driver collected them (rows of 2^20 hashed features: 3.4 s a job on
    two partitions, against 0.2 s; ``bench/HISTORY.md``).  A task counts its rows under the id of the
    partition Spark runs it on (``TaskContext``), as the stage's tasks will read them: an id from SQL
    (``spark_partition_id``) is 0 for every row of a projection over a local relation (a ``VALUES`` clause,
    Spark Connect's ``createDataFrame`` of local rows), which Spark's optimizer computes on the driver
    (``ConvertToLocalRelation``), while the stage reads those rows in several partitions.  ``row_bytes``: a
    bound of a row's bytes in Arrow (``stage.row_bytes`` of the features the column declares), which sizes the
    job's batches by their rows (``session.row_sized_arrow_batches``); None when unknown.  An executor without
    spark-bsvm makes it a RuntimeError that says so (``MISSING_PACKAGE``)."""
    import json

    from spark_bsvm.engine.session import row_sized_arrow_batches

    missing_package = MISSING_PACKAGE

    def checked(batches):  # names nothing of spark-bsvm outside (``MISSING_PACKAGE``)
        import socket

        import pyarrow as pa
        from pyspark import TaskContext

        try:
            from spark_bsvm.engine.blocks import partition_groups, partition_rows
        except ImportError as exc:
            yield pa.RecordBatch.from_pylist([{"groups": None, "missing": missing_package.format(
                host=socket.gethostname(), error=exc)}])
            return
        groups = partition_groups(partition_rows(batches), TaskContext.get().partitionId())
        yield pa.RecordBatch.from_pylist([{"groups": json.dumps(groups), "missing": None}])

    with row_sized_arrow_batches(prepared.sparkSession, row_bytes):
        rows = prepared.mapInArrow(checked, "groups string, missing string").collect()
    for row in rows:
        if row["missing"]:
            raise RuntimeError(row["missing"])
    groups = [g for row in rows for g in json.loads(row["groups"])]
    summary = judged_groups(groups, "validation" in prepared.columns, features_col, label_col, weight_col)
    return replace(summary, n_partitions=len(rows))  # a row from each task, of an empty partition too


def judged_groups(groups, has_validation, features_col, label_col, weight_col=None):
    """The ``DataSummary`` of the training data summarised by ``groups``, or the ValueError that
    ``check_training_data`` describes.  ``groups``: dicts of rows sharing a label, a partition, a validation
    mark and a row size, each of one partition's rows (``partition_groups``: in a job of checks,
    ``check_training_data``, or in the training tasks): ``label``, ``partition``, ``validation`` (the rows
    are marked for validation; a null mark counts as false, and as a ``null_validation``), ``size``, the
    counts ``rows``,
    ``null_features``, ``bad_values``, ``bad_weights``, ``zero_weights``, ``null_validation``, and the
    ``nonzeros``, the ``mean`` and the ``squares`` (``core.moments.value_moments``) of its usable rows'
    values.  ``scale_gamma`` comes from the groups of training rows alone."""
    n_rows = sum(g["rows"] for g in groups)
    if n_rows == 0:
        raise ValueError("the training data is empty: the DataFrame has no rows" + (
            " of weight > 0 (the rows of weight 0 are dropped: they contribute nothing)" if weight_col else ""))
    null_labels = sum(g["rows"] for g in groups if g["label"] is None)
    if null_labels:
        raise ValueError(f"label column '{label_col}' has {null_labels} null value(s); drop or fill those rows")
    # with weights, the caller's other label may be all in the rows of weight 0, which the estimators drop
    classes = two_classes(list({g["label"] for g in groups}), weighted=bool(weight_col))
    null_features = sum(g["null_features"] for g in groups)
    if null_features:
        raise ValueError(f"features column '{features_col}' has {null_features} null value(s); "
                         "drop or impute those rows")
    bad_values = sum(g["bad_values"] for g in groups)
    if bad_values:
        raise ValueError(f"features column '{features_col}' has {bad_values} row(s) with NaN, infinite or null "
                         f"values, or values above {LARGEST_FEATURE:g} in magnitude (the kernels' squared norms "
                         "overflow); drop or impute those rows (pyspark.ml.feature.Imputer), or rescale the "
                         "features (pyspark.ml.feature.StandardScaler)")
    sizes = (min(g["size"] for g in groups), max(g["size"] for g in groups))
    if sizes[0] != sizes[1]:
        raise ValueError(f"features column '{features_col}' holds vectors of different sizes ({sizes[0]} to "
                         f"{sizes[1]} entries); assemble every row with the same features")
    if sizes[0] == 0:
        raise ValueError(f"features column '{features_col}' holds vectors of 0 entries: there are no features")
    bad_weights = sum(g["bad_weights"] for g in groups)
    if bad_weights:
        raise ValueError(f"weight column '{weight_col}' has {bad_weights} value(s) that are null, NaN, infinite "
                         "or negative; weights must be >= 0 and finite")
    zero_weights = sum(g["zero_weights"] for g in groups)
    if zero_weights:  # the estimators drop these rows before: only SparkEngine's own callers get here
        raise ValueError(f"weight column '{weight_col}' has {zero_weights} weight(s) of 0: SparkEngine trains on "
                         "positive weights only; drop those rows (they contribute nothing), as the estimators do")
    n_features = int(sizes[0])
    partition_rows = {}
    for g in groups:
        partition_rows[g["partition"]] = partition_rows.get(g["partition"], 0) + g["rows"]
    training = [g for g in groups if not g["validation"]]
    n_validation = 0
    if has_validation:
        n_validation = _validation_rows(groups, n_rows)
        check_training_classes(classes, [sum(g["rows"] for g in training if g["label"] == c) for c in classes])
    nonzeros = int(sum(g["nonzeros"] for g in groups))
    return DataSummary(classes, int(n_rows), partition_rows, n_features,
                       scale_gamma(n_features, _variance(training, n_features)), n_validation,
                       dense_enough(nonzeros, n_rows, n_features))


def partition_groups(partition, pid):
    """The checks' groups (``judged_groups``) of one task's rows, ``partition`` (``partition_rows``) of
    partition ``pid``, as plain Python values (JSON).  Rows are grouped by label, validation mark (a null mark as
    false) and row size; a group's ``nonzeros``, ``mean`` and ``squares`` are those of its usable rows (neither
    null nor holding a null entry) with rows of zeros in place of the others (``core.moments``: each
    feature's moments, then those of all the group's values).  An empty partition (None) has no groups."""
    if partition is None:
        return []
    table, rows = partition
    labels = table.column("label").combine_chunks().dictionary_encode()  # any label type, nulls included
    values = labels.dictionary.to_pylist() + [None]
    codes = labels.indices.fill_null(len(values) - 1).to_numpy(zero_copy_only=False).astype(np.int64)
    marks = table.column("validation").combine_chunks() if "validation" in table.column_names else None
    held = (np.zeros(codes.size, np.int64) if marks is None
            else marks.fill_null(False).to_numpy(zero_copy_only=False).astype(np.int64))
    kinds = 2 * codes + held  # a row's label code and validation mark
    sizes = rows.sizes
    span = int(sizes.max(initial=0)) + 1
    if sizes.min() == sizes.max():  # rows of one size, as the checks accept them: no sort of the rows
        used = np.flatnonzero(np.bincount(kinds, minlength=2 * len(values)))
        keys, group_of = used * span + sizes[0], np.searchsorted(used, kinds)
    else:
        keys, group_of = np.unique(kinds * span + sizes, return_inverse=True)
    n_groups, width = keys.size, span - 1 or 1
    moments = group_moments(rows.lengths, rows.values, group_of, n_groups, width,
                            ~rows.null & ~rows.null_entries & (sizes > 0), rows.sparse, rows.indices)

    def per_group(flags):
        return np.bincount(group_of, flags, minlength=n_groups).astype(np.int64)

    counts = {"rows": per_group(None), "null_features": per_group(rows.null),
              "bad_values": per_group(moments.pop("bad_values") | rows.null_entries)}
    if "weight" in table.column_names:
        counts["bad_weights"], counts["zero_weights"] = map(per_group, _weight_checks(
            table.column("weight").combine_chunks()))
    if marks is not None:
        counts["null_validation"] = per_group(marks.is_null().to_numpy(zero_copy_only=False))
    groups = []
    for k, key in enumerate(keys.tolist()):
        kind, size = divmod(key, span)
        group = {"label": values[kind // 2], "partition": pid, "validation": bool(kind % 2), "size": size,
                 "bad_weights": 0, "zero_weights": 0, "null_validation": 0,
                 **{name: int(c[k]) for name, c in counts.items()}}
        features = slice(0, max(size, 1))
        mean, squares = value_moments(moments["mean"][k, features], moments["variance"][k, features], group["rows"])
        groups.append(dict(group, nonzeros=int(moments["nonzeros"][k, features].sum()), mean=mean, squares=squares))
    return groups


def _weight_checks(weights):
    """(bad, zero) per row of an Arrow weight column: null, NaN, negative or infinite; exactly 0."""
    values = weights.fill_null(np.nan).to_numpy(zero_copy_only=False).astype(np.float64)
    with np.errstate(invalid="ignore"):
        return ~np.isfinite(values) | (values < 0), values == 0


def _check_sizes(rows, n_features):
    """A ValueError unless every row of the ``FeatureEntries`` ``rows`` is a vector of ``n_features`` entries,
    none of them null (the training data's, or the model's when scoring; the training checks name null rows
    and null entries before this)."""
    if rows.null.any():
        raise ValueError(f"the features column has {np.count_nonzero(rows.null)} null value(s); drop or impute "
                         "those rows")
    if rows.null_entries.any():  # Arrow would hand them on as NaN, and the scoring name them so
        raise ValueError(f"the features column has {np.count_nonzero(rows.null_entries)} row(s) holding a null "
                         "entry; drop or impute those rows (pyspark.ml.feature.Imputer)")
    if np.any(rows.sizes != n_features):
        raise ValueError(f"feature vectors must all have {n_features} entries, found sizes "
                         f"{sorted(set(rows.sizes.tolist()) - {n_features})[:5]}; assemble the features as the "
                         "training rows were")


def rows_from_arrow(column, n_features, dense=False):
    """The features column of a task's Arrow batches as a dense array or a CSR block (with ``dense``,
    ``DataSummary.dense``: a dense array even where the vectors were sparse, as ``LocalEngine`` makes).

    ``column``: an Arrow array or a chunked array (a task's batches, each read where it lies and copied
    once, into the block), either of list<number> (an array features column: dense rows) or of VectorUDT
    (Arrow struct type/size/indices/values, dense and sparse rows mixed).
    """
    return _block(feature_entries(column), n_features, dense)


@dataclass(frozen=True)
class FeatureEntries:
    """A features column's rows as Arrow stores them, in numpy arrays the task owns: ``lengths`` (entries
    stored per row), ``sizes`` (each row's size: a list's length, a vector's size; 0 for a null row),
    ``null`` (null rows), ``null_entries`` (rows holding a null entry, which only lists can), ``values``
    (every row's stored entries, in row order, float64) and ``sparse`` (per row: a sparse vector, whose
    columns are its entries of ``indices``, the sparse rows' indices one after the other; None where no row
    is sparse).  The checks (``partition_groups``) and the block
    (``partition_block``) read the same arrays: a task converts its batches once."""
    lengths: np.ndarray
    sizes: np.ndarray
    null: np.ndarray
    null_entries: np.ndarray
    values: np.ndarray
    sparse: Optional[np.ndarray] = None
    indices: Optional[np.ndarray] = None


def feature_entries(column):
    """The ``FeatureEntries`` of an Arrow features column (an array or a chunked array, of list<number> or
    of VectorUDT's struct)."""
    import pyarrow as pa

    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    chunks = chunks or [pa.array([], column.type)]
    null = _joined((chunk.is_null() for chunk in chunks), np.bool_)
    if pa.types.is_list(chunks[0].type) or pa.types.is_large_list(chunks[0].type):
        lengths = _joined((chunk.value_lengths().fill_null(0) for chunk in chunks), np.int64)
        entries = [chunk.flatten() for chunk in chunks]
        if not pa.types.is_float64(entries[0].type):
            entries = [e.cast(pa.float64()) for e in entries]
        null_entries = np.zeros(lengths.size, bool)
        if any(e.null_count for e in entries):  # a null entry reads as NaN; its row is marked
            missing = _joined((e.is_null() for e in entries), np.bool_)
            null_entries = np.bincount(np.repeat(np.arange(lengths.size), lengths)[missing],
                                       minlength=lengths.size) > 0
        return FeatureEntries(lengths, lengths, null, null_entries, _joined(entries))
    # a vector: type 0 sparse (size, indices, values), 1 dense (values); a null row's fields are null
    fields = [dict(zip((f.name for f in chunk.type), chunk.flatten())) for chunk in chunks]
    kinds = _joined((f["type"].fill_null(1) for f in fields), np.int8)
    lengths = _joined((f["values"].value_lengths().fill_null(0) for f in fields), np.int64)
    declared = _joined((f["size"].fill_null(0) for f in fields), np.int64)
    sizes = np.where(null, 0, np.where(kinds == 1, lengths, declared))
    values = _joined(f["values"].flatten() for f in fields)
    sparse, no_null_entries = kinds == 0, np.zeros(lengths.size, bool)
    if not sparse.any():
        return FeatureEntries(lengths, sizes, null, no_null_entries, values)
    indices = _joined((f["indices"].flatten() for f in fields), np.int32)
    return FeatureEntries(lengths, sizes, null, no_null_entries, values, sparse, indices)


def _block(rows, n_features, dense):
    """``rows_from_arrow``'s block of the ``FeatureEntries`` ``rows`` (a ValueError for rows of another size
    than ``n_features``)."""
    n = rows.lengths.size
    _check_sizes(rows, n_features)
    if rows.sparse is None:  # every row dense: a list, or a dense vector
        return rows.values.reshape(n, n_features)
    data, lengths = rows.values, rows.lengths
    if rows.sparse.all() and np.count_nonzero(data) == data.size:
        # all sparse (VectorAssembler's rows, mostly), no explicit zero: Arrow's lists hold the CSR arrays
        indptr = np.zeros(n + 1, np.int32)
        np.cumsum(lengths, out=indptr[1:])
        block = csr_from_arrays(data, rows.indices, indptr, (n, n_features))
    else:
        # CSR in one pass over the stored entries: a sparse row brings its indices, a dense row the positions
        # 0..p-1; explicit zeros are dropped
        row_of = np.repeat(np.arange(n), lengths)
        starts = np.cumsum(lengths) - lengths
        indices = np.arange(data.size, dtype=np.int64) - starts[row_of]
        indices[np.repeat(rows.sparse, lengths)] = rows.indices
        keep = data != 0.0
        indptr = np.concatenate([[0], np.cumsum(np.bincount(row_of[keep], minlength=n))])
        block = csr_from_arrays(data[keep], indices[keep], indptr, (n, n_features))
    return to_dense(block) if dense else block


def _joined(arrays, dtype=np.float64):
    """Primitive Arrow arrays, one after the other, as a new, writable numpy array of ``dtype`` (the one copy
    a task makes): Arrow's zero-copy views are read-only, and numba compiles every kernel again for read-only
    arrays (a block the task owns has the types of ``LocalEngine``'s, whose kernels the cache holds)."""
    return np.concatenate([array.to_numpy(zero_copy_only=False) for array in arrays], dtype=dtype)


def check_validation_column(df, validation_col):
    """A ``ColumnError`` unless ``df`` has the boolean column ``validation_col`` (True marks a validation row)."""
    from pyspark.sql.types import BooleanType

    fields = {field.name: field.dataType for field in df.schema.fields}
    _check_present(fields, "validationIndicator", validation_col,
                   note=" (OneVsRest gives its classifier only the label, features and weight columns: under it, "
                        "hold out validation rows with validationFraction)")
    if not isinstance(fields[validation_col], BooleanType):
        raise ColumnError(f"validation indicator column {validation_col!r} has type "
                          f"{fields[validation_col].simpleString()}, not boolean: mark the validation rows with "
                          "true and the training rows with false (e.g. F.col(...) == 1)")


def _validation_rows(groups, n_rows):
    """The rows marked for validation in ``groups`` (the checks' groups); a ValueError when the mark is
    null somewhere, or when all or none of the ``n_rows`` rows carry it."""
    nulls = sum(g["null_validation"] for g in groups)
    if nulls:
        raise ValueError(f"the validation indicator column has {nulls} null value(s): mark every row "
                         "true (validation) or false (training)")
    held = sum(g["rows"] for g in groups if g["validation"])
    if held == 0 or held == n_rows:
        raise ValueError(f"{'none' if held == 0 else 'all'} of the {n_rows} training rows are marked for "
                         "validation: hold out some rows and train on the others")
    return held


def partition_rows(batches):
    """A task's Arrow batches as (its table, its features' ``FeatureEntries``), read once for the checks and
    the block; None when its partition has no rows."""
    import pyarrow as pa

    batches = list(batches)
    table = pa.Table.from_batches(batches) if batches else None
    if table is None or not table.num_rows:
        return None
    return PartitionRows(table, feature_entries(table.column("features")))


class PartitionRows(NamedTuple):
    """A task's rows: its Arrow ``table`` and the ``FeatureEntries`` of its features column."""
    table: object
    features: FeatureEntries


def partition_block(partition, pid, n_features, classes, has_weight, has_validation=False, dense=False):
    """A task's rows (``partition_rows``) as a ``PartitionData`` (a ValueError names what is wrong with its
    rows); with ``has_validation``, the rows whose ``validation`` column is true are its validation rows;
    ``dense``: as ``rows_from_arrow``'s."""
    from core.partition.data import PartitionData

    if partition is None:
        raise ValueError(f"partition {pid} of the training data is empty, although every partition had rows when "
                         "the data were checked: the DataFrame gives other rows each time it is read (a "
                         "nondeterministic source or transformation); cache or checkpoint it before the fit")
    table, features = partition
    block = _block(features, n_features, dense)
    labels = table.column("label").to_numpy()  # numbers, strings or booleans, compared with the checks' values
    y = np.where(labels == classes[1], 1.0, -1.0)
    weight = table.column("weight").to_numpy() if has_weight else np.ones(len(y))
    ids = (np.int64(pid) << 40) + np.arange(len(y), dtype=np.int64)
    held = table.column("validation").to_numpy(zero_copy_only=False).astype(bool) if has_validation else None
    return PartitionData.build(block, y, weight, ids, held)
