"""spark-bsvm: budgeted and sparse kernel SVMs as Spark ML estimators.

Packages: ``ml`` (params, estimators, model), ``engine`` (the barrier-stage
coordinator and its wire format), ``app`` (what the jobs share).
"""

from spark_bsvm.ml import CSVC, BSVMModel, BudgetSVM, ElasticBudgetSVM, L0SVM, SlantSparsifier, SpSVM

__all__ = ["CSVC", "BudgetSVM", "SpSVM", "SlantSparsifier", "ElasticBudgetSVM", "L0SVM", "BSVMModel"]
