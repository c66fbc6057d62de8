"""The pyspark.ml face: params, the estimators and the one model they return."""

from spark_bsvm.ml.estimators import CSVC, BudgetSVM, ElasticBudgetSVM, L0SVM, SlantSparsifier, SpSVM
from spark_bsvm.ml.model import BSVMModel

__all__ = ["CSVC", "BudgetSVM", "SpSVM", "SlantSparsifier", "ElasticBudgetSVM", "L0SVM", "BSVMModel"]
