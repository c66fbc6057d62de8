"""The Engine interface and the in-process LocalEngine.

An algorithm is a driver-side loop that asks its engine for *rounds*: the
engine calls one partition function on every partition of the training
set with the same small request, and returns the partitions'
answers (small aggregates) to the driver.  Partition functions live in
``core.partition`` (its table ``PARTITION_FUNCTIONS`` lists them all) and
have the signature

    fn(data: PartitionData, state: dict, request: dict) -> (state, answer)

``state`` is the per-example state a partition keeps between rounds
(dual variables, gradients, responses); it is always a function of the
model the driver holds, so a partition that loses it rebuilds it from a
request that carries that model.  Requests and answers hold only numpy
arrays, row blocks, numbers and strings, so that a Spark engine can ship
them without pickling code.

``LocalEngine`` holds the partitions as numpy blocks in this process;
``spark_bsvm``'s SparkEngine runs the same functions on Spark executors.
"""

from abc import ABC, abstractmethod

import numpy as np

from core.kernels import feature_variance, scale_gamma
from core.labels import check_training_classes, encode_labels
from core.partition.data import PartitionData
from core.rows import as_rows, dense_enough, is_sparse, n_rows, take_rows, to_dense
from core.validation import check_weights


class Engine(ABC):
    """Runs rounds of partition functions over a partitioned training set.

    Attributes every engine sets: ``n_features``, ``n_examples`` (the
    training rows), ``classes`` (the two original label values, negative
    first), ``n_partitions``, ``scale_gamma`` (scikit-learn's
    ``gamma="scale"`` for the training rows, ``core.kernels.scale_gamma``,
    unweighted) and ``n_validation``: the validation rows the partitions
    hold beside the training rows (``PartitionData.validation``), 0 when
    there are none.
    """

    n_features: int
    n_examples: int
    classes: list
    n_partitions: int
    scale_gamma: float
    n_validation: int = 0

    @abstractmethod
    def run(self, function, request, rebuild=None):
        """Call the partition function ``function`` on every partition; return the answers in partition order.

        ``function`` is one of ``core.partition.PARTITION_FUNCTIONS``' values
        (engines that run partitions elsewhere send its name).

        ``rebuild``: a callable returning the request to use instead on a
        partition that lost its state (a retried task): it must rebuild the
        state from the driver's current model and give the same answer.
        """

    def close(self):
        """Release what the engine holds (sockets, tasks); a no-op locally."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class LocalEngine(Engine):
    """In-process engine: the training set split into contiguous numpy blocks.

    Example ids are row positions in the arrays given, so a model's support
    ids index the original data.  ``validation``: a boolean mask of the rows
    held out for validation (they stay in their block, never trained on, and
    ``scale_gamma`` is that of the other rows); the blocks split all n rows,
    as a Spark DataFrame's contiguous partitions do.
    A CSR ``X`` with at least half its values nonzero is trained on as a dense block
    (``core.rows.dense_enough``).
    """

    def __init__(self, X, labels, weights=None, n_partitions=1, validation=None):
        X = as_rows(X)
        if is_sparse(X) and dense_enough(np.count_nonzero(X.data), *X.shape):
            X = to_dense(X)
        n = n_rows(X)
        if X.shape[1] == 0:
            raise ValueError(f"X has {n} rows of 0 features: there is nothing to train on; give every row its "
                             "features (a 2-D array of n rows x p > 0 columns)")
        y, self.classes = encode_labels(labels)
        if y.shape[0] != n:
            raise ValueError(f"X has {n} rows but labels has {y.shape[0]} values")
        weights = np.ones(n) if weights is None else check_weights(weights, n)
        if not 1 <= n_partitions <= n:
            raise ValueError(f"n_partitions must be between 1 and the number of rows ({n}), got {n_partitions}")
        if validation is not None:
            validation = np.asarray(validation)
            if validation.shape != (n,) or validation.dtype != bool:
                raise ValueError(f"validation must be a boolean mask of the {n} rows, got {validation.dtype} "
                                 f"of shape {validation.shape}")
            trained = y[~validation]
            check_training_classes(self.classes, [np.count_nonzero(trained < 0), np.count_nonzero(trained > 0)])
        bounds = np.linspace(0, n, n_partitions + 1).astype(np.int64)
        self.partitions = []
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            idx = np.arange(lo, hi)
            self.partitions.append(PartitionData.build(take_rows(X, idx), y[idx], weights[idx], idx,
                                                       None if validation is None else validation[idx]))
        self.states = [{} for _ in self.partitions]
        self.n_features = X.shape[1]
        self.n_validation = 0 if validation is None else int(validation.sum())
        self.n_examples = n - self.n_validation
        self.n_partitions = n_partitions
        training_rows = X if validation is None else take_rows(X, np.flatnonzero(~validation))
        self.scale_gamma = scale_gamma(self.n_features, feature_variance(training_rows))

    def run(self, function, request, rebuild=None):
        answers = []
        for k, data in enumerate(self.partitions):
            self.states[k], answer = function(data, self.states[k], request)
            answers.append(answer)
        return answers
