"""spark-bsvm: budgeted and sparse kernel SVMs as Spark ML estimators."""

from spark_bsvm.estimators import CSVC, BudgetSVM, ElasticBudgetSVM, L0SVM, SlantSparsifier, SpSVM
from spark_bsvm.model import BSVMModel

__all__ = ["CSVC", "BudgetSVM", "SpSVM", "SlantSparsifier", "ElasticBudgetSVM", "L0SVM", "BSVMModel"]
