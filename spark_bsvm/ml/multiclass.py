"""Class probabilities for pyspark's ``OneVsRest`` over calibrated spark-bsvm models.

``OneVsRestModel.transform`` gives a prediction and a rawPrediction of one decision value per class, but
no probability column, so ``MulticlassClassificationEvaluator(metricName="logLoss")`` has nothing to read.
When every binary model is calibrated (``calibrationFraction`` > 0), each gives P(class k | x) against
the rest; normalised to sum 1 they are the class probabilities (Zadrozny & Elkan's one-vs-rest coupling
by normalisation, as scikit-learn's ``OneVsRestClassifier.predict_proba``).
"""

import numpy as np
from pyspark.ml.functions import array_to_vector

from spark_bsvm.engine.blocks import rows_column
from spark_bsvm.ml.model import BSVMModel, DecisionRule, check_new_column
from spark_bsvm.ml.params import check_params


def with_one_vs_rest_probability(ovr_model, dataset, probabilityCol="probability"):
    """``dataset`` with ``probabilityCol``: a vector of P(class k | x), k = 0..numClasses-1, from the calibrated
    binary models of the fitted ``OneVsRestModel`` ``ovr_model``, normalised to sum 1 (a ValueError when
    ``dataset`` has that column already).

    >>> ovr = OneVsRest(classifier=CSVC(calibrationFraction=0.2)).fit(train)          # doctest: +SKIP
    >>> scored = with_one_vs_rest_probability(ovr, ovr.transform(test))               # doctest: +SKIP
    >>> MulticlassClassificationEvaluator(metricName="logLoss").evaluate(scored)      # doctest: +SKIP
    """
    check_new_column(dataset, "probabilityCol", probabilityCol)
    for k, model in enumerate(ovr_model.models):
        if not (isinstance(model, BSVMModel) and model.platt):
            what = "not calibrated" if isinstance(model, BSVMModel) else f"a {type(model).__name__}"
            raise ValueError(f"the binary model of class {k} is {what}: fit OneVsRest over a spark-bsvm "
                             "estimator with calibrationFraction > 0")
        check_params(model)  # its predictionPrecision, before the scoring job
    expansions = [model.expansion.for_scoring() for model in ovr_model.models]  # closures capture locals, not self
    rules = [DecisionRule(platt=model.platt) for model in ovr_model.models]
    precisions = [model.getPredictionPrecision() for model in ovr_model.models]

    def probabilities(X):
        p = np.column_stack([rule.probability(e.decision_function(X, precision))
                             for e, rule, precision in zip(expansions, rules, precisions)])
        return p / p.sum(axis=1, keepdims=True)

    features = rows_column(dataset, ovr_model.getFeaturesCol(), expansions[0].n_features, probabilities,
                           "array<double>")
    return dataset.withColumn(probabilityCol, array_to_vector(features))
