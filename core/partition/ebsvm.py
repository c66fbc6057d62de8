"""Partition side of the elastic budget SVM: serve shuffled mini-batches of rows.

Each epoch a partition visits its rows in a random order drawn from
(seed, epoch, partition index) alone, so the order is the same on any
engine and a retried task rebuilds it.  The driver says how many rows it
wants from each partition and where each partition's cursor stands, so a
request carries everything needed to answer it: the cached order is the
only state, and losing it costs one permutation.
"""

import numpy as np

from core.rows import take_rows


def epoch_order(n, seed, epoch, index):
    """The order in which partition ``index`` (of n rows) serves its rows in ``epoch``."""
    return np.random.default_rng([seed, epoch, index]).permutation(n)


def ebsvm_describe(data, state, request):
    """Answer this partition's size and key (its first id), from which the driver numbers the partitions."""
    return state, {"n": len(data), "key": int(data.ids[0])}


def ebsvm_batch(data, state, request):
    """The next rows of this partition's shuffled order.

    Request: ``seed``, ``epoch``, ``keys`` (every partition's key, in
    partition order), and per partition ``offsets`` (rows of this epoch
    served so far) and ``counts`` (rows wanted now).  Answer: ``rows``,
    ``y``, ``weight`` and ``ids`` of the ``counts[k]`` rows after
    ``offsets[k]`` in the epoch's order, k this partition's index.
    """
    index = int(np.flatnonzero(np.asarray(request["keys"]) == data.ids[0])[0])
    seed, epoch = int(request["seed"]), int(request["epoch"])
    if state.get("seed_epoch") != (seed, epoch):
        state = {"seed_epoch": (seed, epoch), "order": epoch_order(len(data), seed, epoch, index)}
    lo = int(request["offsets"][index])
    take = state["order"][lo:lo + int(request["counts"][index])]
    answer = {"rows": take_rows(data.rows, take), "y": data.y[take], "weight": data.weight[take],
              "ids": data.ids[take]}
    return state, answer
