"""spark-bsvm: budgeted and sparse kernel SVMs as Spark ML estimators.

Packages: ``ml`` (params, estimators, model), ``engine`` (the barrier-stage
coordinator and its wire format), ``app`` (what the jobs share).

The estimators are imported when first named (``from spark_bsvm import SpSVM``): a training task
imports ``spark_bsvm.engine`` alone, and the pyspark.ml and pandas modules behind the estimators would
add ~0.4 s to every fresh Python worker's first task (bench/bench_engines.py's cold start).
"""

__all__ = ["CSVC", "BudgetSVM", "SpSVM", "SlantSparsifier", "ElasticBudgetSVM", "L0SVM", "BSVMModel"]


def __getattr__(name):
    if name in __all__:
        from spark_bsvm import ml

        return getattr(ml, name)
    raise AttributeError(f"module 'spark_bsvm' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
