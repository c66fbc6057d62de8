"""spark-bsvm: budgeted and sparse kernel SVMs as Spark ML estimators."""

from spark_bsvm.estimators import CSVC, BudgetSVM, SpSVM
from spark_bsvm.model import BSVMModel

__all__ = ["CSVC", "BudgetSVM", "SpSVM", "BSVMModel"]
