"""Generated data sets as Spark inputs: the quick-start rings, the Forest-shaped Parquet file."""

import os

import numpy as np

from core.atomic_file import atomic_write
from core.synthetic import FOREST_ROWS, make_forest_like, make_rings

QUICKSTART_ROWS = 9000
_GENERATOR_KEY = b"spark_bsvm.generator"


def _columns_table(X, y):
    """A pyarrow table of columns x0..x{p-1} and label (1.0 for y > 0, else 0.0)."""
    import pyarrow as pa

    arrays = [pa.array(np.ascontiguousarray(X[:, j])) for j in range(X.shape[1])]
    arrays.append(pa.array(np.where(y > 0, 1.0, 0.0)))
    return pa.Table.from_arrays(arrays, names=[f"x{j}" for j in range(X.shape[1])] + ["label"])


def rings_frame(spark, data):
    """The rings of ``make_rings`` as a DataFrame of numeric columns x0.. and label."""
    X, y = make_rings(data["rows"] or QUICKSTART_ROWS, data["features"], noise=data["noise"], seed=data["seed"])
    return spark.createDataFrame(_columns_table(X, y).to_pandas())


def write_forest_parquet(path, rows=None, noise=0.05, seed=0):
    """Write ``make_forest_like(rows, noise, seed)`` to the Parquet file ``path`` unless it already holds it.

    Columns x0..x53 (float64) and label (1.0 / 0.0).  The generator's
    arguments are stored in the file's metadata, so a second call with the
    same arguments reuses the file and different ones rewrite it.  The file
    appears atomically (written beside it, then renamed).  Local paths only.
    Anything else at ``path`` (a file or folder this function did not write:
    the user's own data) is refused with a ValueError, never replaced.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    if "://" in path and not path.startswith("file://"):
        raise ValueError(f"forest_synthetic writes with pyarrow to a local path, got {path}: generate it locally "
                         "(jobs/train.py --set data.path=/tmp/forest.parquet) and copy it, then use "
                         "source = \"parquet\"")
    path = path.removeprefix("file://")
    key = f"make_forest_like(rows={rows or FOREST_ROWS}, noise={noise}, seed={seed})".encode()
    if os.path.exists(path):
        try:
            written = (pq.read_schema(path).metadata or {}).get(_GENERATOR_KEY)
        except (pa.ArrowException, OSError):  # a folder, or a file that is not Parquet
            written = None
        if written == key:
            return path
        if written is None:
            raise ValueError(f"[data] path {path} holds data that the forest_synthetic source did not generate, and "
                             "would be replaced by its rows: to train on it, set data.source (parquet, csv, ...); "
                             "to generate the Forest-shaped set, give data.path a new file")
    X, y = make_forest_like(rows or FOREST_ROWS, noise=noise, seed=seed)
    table = _columns_table(X, y)
    table = table.replace_schema_metadata({_GENERATOR_KEY: key})
    with atomic_write(path) as f:
        pq.write_table(table, f, row_group_size=65536)
    return path
