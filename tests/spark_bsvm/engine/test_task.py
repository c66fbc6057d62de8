"""The barrier task as Spark ships it: on an executor without spark-bsvm it ends with one clear line."""

import ast
import os
import subprocess
import sys

import pytest
from pyspark import cloudpickle

from spark_bsvm.engine.stage import MISSING, TaskSpec, raise_task_errors
from spark_bsvm.engine.task import make_task

# an executor's Python worker: unpickle the task Spark sent, run it on no rows, print its output rows (an Arrow
# batch's, from a task of mapInArrow; a dict, from a task of the plan's own batches: stage.run_barrier_stage)
EXECUTOR = ("import pickle, sys; task = pickle.loads(sys.stdin.buffer.read()); out = next(task(iter([]))); "
            "print(repr([out] if isinstance(out, dict) else out.to_pylist()))")


@pytest.mark.parametrize("input_schema", [None, b"schema"], ids=["mapInArrow", "plan's batches"])
def test_an_executor_without_the_package_reports_it_in_one_line(tmp_path, input_schema):
    # spark-bsvm is installed in editable mode here: a package of the same name that cannot be imported
    # hides it from the "executor" below, as if it were not installed
    stub = tmp_path / "no-spark-bsvm" / "spark_bsvm"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'spark_bsvm'\", "
                                      "name='spark_bsvm')\n")
    spec = TaskSpec("0" * 64, n_features=2, classes=[0.0, 1.0], has_weight=False, n_partitions=1, n_examples=2,
                    scale_gamma=1.0, address=("127.0.0.1", 9))
    executor = subprocess.run([sys.executable, "-c", EXECUTOR],
                              input=cloudpickle.dumps(make_task(spec, input_schema)), cwd=tmp_path,
                              env=dict(os.environ, PYTHONPATH=str(stub.parent)), capture_output=True, timeout=120)
    assert executor.returncode == 0, executor.stderr.decode()
    (row,) = ast.literal_eval(executor.stdout.decode())
    assert row["error_type"] == MISSING
    with pytest.raises(RuntimeError) as raised:
        raise_task_errors([row])
    message = str(raised.value)
    assert "\n" not in message
    assert "cannot import what a spark-bsvm fit needs (No module named 'spark_bsvm'): ship spark-bsvm to the " \
           "executors: --py-files with a zip of core/ and spark_bsvm/" in message



def test_a_training_task_imports_neither_the_estimators_nor_pandas_nor_scipy_sparse():
    """What a fresh Python worker imports for its first task (the executors' cold start): the engine and
    core, not ``spark_bsvm.ml`` and the pyspark.ml and pandas modules behind it, nor, while its rows are dense
    (dense vectors or an array column), scipy.sparse (0.10-0.16 s); the estimators still come from the
    package's top level."""
    import subprocess
    import sys

    code = ("import sys, pyarrow as pa, spark_bsvm.engine.task, core.partition\n"
            "print(sorted(m for m in ('spark_bsvm.ml', 'pandas', 'pyspark.ml.classification', 'scipy.sparse') "
            "if m in sys.modules))\n"
            "from spark_bsvm.engine.blocks import rows_from_arrow\n"
            "vector = pa.struct([('type', pa.int8()), ('size', pa.int32()), ('indices', pa.list_(pa.int32())), "
            "('values', pa.list_(pa.float64()))])\n"
            "rows_from_arrow(pa.array([{'type': 1, 'size': None, 'indices': None, 'values': [1.0, 2.0]}] * 3, "
            "type=vector), 2)\n"
            "rows_from_arrow(pa.array([[1.0, 2.0]] * 3), 2)\n"
            "print('scipy.sparse' in sys.modules)\n"
            "from spark_bsvm import SpSVM; print(SpSVM.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["[]", "False", "spark_bsvm.ml.estimators"]
