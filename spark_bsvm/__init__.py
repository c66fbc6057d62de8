"""spark-bsvm: budgeted and sparse kernel SVMs as Spark ML estimators."""

from spark_bsvm.estimators import CSVC, BudgetSVM
from spark_bsvm.model import BSVMModel

__all__ = ["CSVC", "BudgetSVM", "BSVMModel"]

from spark_bsvm.estimators import SlantSparsifier  # noqa: E402

__all__ += ["SlantSparsifier"]
