"""spark-bsvm: budgeted and sparse kernel SVMs as Spark ML estimators."""

from spark_bsvm.estimators import CSVC, BudgetSVM, ElasticBudgetSVM
from spark_bsvm.model import BSVMModel

__all__ = ["CSVC", "BudgetSVM", "BSVMModel", "ElasticBudgetSVM"]
