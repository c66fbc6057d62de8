"""What the fits of one ``fitMultiple`` call compute once and share: the data's checks, the rows they derive,
the models of a training stage they share.

pyspark.ml's tuners (``CrossValidator``, ``TrainValidationSplit``) fit an estimator once per param map on
the same rows, through ``Estimator.fitMultiple``.  Every spark-bsvm fit starts with its data's checks:
in its training stage's tasks where the driver coordinates it over a frame whose partitions are the
tasks' (``stage.TrainingData.checks_in_stage``), else as a Spark job of their own
(``blocks.check_training_data``: 0.11-0.42 s on cached frames of 2,700-4,000 rows here, of a C-SVC fit's
~1 s; 0.46-0.60 s on ijcnn1's 49,990 rows).  The estimators' ``fitMultiple`` runs them once for the param
maps that leave the data's params alone (the columns, the weights, the calibration and validation rows,
the partitions), and the fits of the other param maps share theirs in the same way
(``bench/bench_fit_multiple.py``): the first fit's checks, its rows dealt again where they had to be,
serve the others.  ``SharedResults`` holds those checks, and what else the
fits share once: the rows they derive, and the models of a training stage they share (``spark_bsvm.ml.base``).
"""

import threading


class SharedResults:
    """Results computed once per key and shared by the fits that ask for them, whether they run in turn or
    side by side (the tuners' ``parallelism``): a fit asking for a key that another fit is computing waits
    for it.  A computation that raises stores nothing: the next fit that asks runs it again, and fails with
    an error of its own."""

    def __init__(self):
        self._lock = threading.Lock()
        self._entries = {}  # key -> [the lock of its computation, (result,) or None]

    def once(self, key, compute):
        """``compute()``'s result for ``key``, computed by the first fit that asks."""
        with self._lock:
            entry = self._entries.setdefault(key, [threading.Lock(), None])
        with entry[0]:
            if entry[1] is None:
                entry[1] = (compute(),)
            return entry[1][0]

    def known(self, key):
        """The result for ``key`` if a fit has computed it (``once``), else None (no wait)."""
        with self._lock:
            entry = self._entries.get(key)
        return entry[1][0] if entry is not None and entry[1] is not None else None
