"""The pyspark.ml face: params, the estimators, the one model they return, its summaries and one-vs-rest
probabilities."""

from spark_bsvm.ml.estimators import (CSVC, L0SVM, BudgetSVM, BudgetSVMModel, CSVCModel, ElasticBudgetSVM,
                                      ElasticBudgetSVMModel, L0SVMModel, SlantSparsifier, SlantSparsifierModel,
                                      SpSVM, SpSVMModel)
from spark_bsvm.ml.model import BSVMModel
from spark_bsvm.ml.multiclass import with_one_vs_rest_probability
from spark_bsvm.ml.summary import BSVMSummary, BSVMTrainingSummary

__all__ = ["CSVC", "BudgetSVM", "SpSVM", "SlantSparsifier", "ElasticBudgetSVM", "L0SVM", "BSVMModel", "CSVCModel",
           "BudgetSVMModel", "SpSVMModel", "SlantSparsifierModel", "ElasticBudgetSVMModel", "L0SVMModel",
           "BSVMSummary", "BSVMTrainingSummary", "with_one_vs_rest_probability"]
