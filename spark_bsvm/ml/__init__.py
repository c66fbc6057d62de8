"""The pyspark.ml face: params, the estimators and the one model they return."""

from spark_bsvm.ml.estimators import (CSVC, L0SVM, BudgetSVM, BudgetSVMModel, CSVCModel, ElasticBudgetSVM,
                                      ElasticBudgetSVMModel, L0SVMModel, SlantSparsifier, SlantSparsifierModel,
                                      SpSVM, SpSVMModel)
from spark_bsvm.ml.model import BSVMModel

__all__ = ["CSVC", "BudgetSVM", "SpSVM", "SlantSparsifier", "ElasticBudgetSVM", "L0SVM", "BSVMModel", "CSVCModel",
           "BudgetSVMModel", "SpSVMModel", "SlantSparsifierModel", "ElasticBudgetSVMModel", "L0SVMModel"]
