"""Whether a fitted model tells its training rows apart at all: data that cannot be learned (only rows
with the same features and different labels, constant features) fits into a model that predicts one
class everywhere, which deserves a word rather than silence."""

import logging

from core.partition.predictions import count_positive

log = logging.getLogger("spark_bsvm")


def warn_if_one_class(engine, model):
    """Log one warning line when ``model`` (a ``KernelExpansion``) predicts the same class for every training
    row of ``engine``: one more round over the partitions, n x support kernel values.  Returns whether it
    predicts both classes."""
    request = {"rows": model.support_vectors, "coef": model.coef, "bias": model.bias,
               "kernel": model.kernel.to_dict()}
    answers = engine.run(count_positive, request, rebuild=lambda: request)
    positive, rows = sum(a["positive"] for a in answers), sum(a["rows"] for a in answers)
    if 0 < positive < rows:
        return True
    log.warning("the model predicts %r for all %d training rows: it separates nothing (rows with the same "
                "features and different labels, constant features, or too few support vectors / too strong a "
                "regulariser for a rare class?)",
                model.classes[1 if positive else 0], rows)
    return False
