"""spark-bsvm: budgeted and sparse kernel SVMs as Spark ML estimators."""

from spark_bsvm.estimators import CSVC, BudgetSVM, ElasticBudgetSVM, L0SVM, SlantSparsifier
from spark_bsvm.model import BSVMModel

__all__ = ["CSVC", "BudgetSVM", "SlantSparsifier", "ElasticBudgetSVM", "L0SVM", "BSVMModel"]
