"""Partition side of the elastic budget SVM: serve the rows of each epoch in an order set by their content.

Epoch e visits the examples in the order of their draw keys
``draw_keys(draw_keys(PartitionData.keys, seed), e)`` (a seeded random order
of the examples, ``core.sampling``), exact ties (identical examples) by id.
A partition serves its rows in that order; the driver merges the
partitions' streams by the same keys, so the order of the whole training
set is the same on any engine, partitioning or row order, and a retried task
rebuilds it.  The driver says how many rows it wants from each partition and
where each partition's cursor stands, so a request carries everything
needed to answer it: the cached order is the only state, and losing it
costs one sort.
"""

import numpy as np

from core.rows import take_rows
from core.sampling import draw_keys


def epoch_keys(keys, seed, epoch):
    """The draw keys of epoch ``epoch`` under ``seed`` of examples with content keys ``keys``: the epoch
    visits the examples in their order (then by id)."""
    return draw_keys(draw_keys(keys, seed), epoch)


def ebsvm_describe(data, state, request):
    """Answer this partition's size and key (its first id), from which the driver numbers the partitions."""
    return state, {"n": len(data), "key": int(data.ids[0])}


def ebsvm_batch(data, state, request):
    """The next rows of this partition in the epoch's order.

    Request: ``seed``, ``epoch``, ``keys`` (every partition's key, in
    partition order), and per partition ``offsets`` (rows of this epoch
    served so far) and ``counts`` (rows wanted now).  Answer: ``rows``,
    ``y``, ``weight``, ``ids`` and the epoch's draw keys ``order_keys`` of
    the ``counts[k]`` rows after ``offsets[k]`` in the epoch's order, k
    this partition's index.
    """
    index = int(np.flatnonzero(np.asarray(request["keys"]) == data.ids[0])[0])
    seed, epoch = int(request["seed"]), int(request["epoch"])
    if state.get("seed_epoch") != (seed, epoch):
        drawn = epoch_keys(data.keys, seed, epoch)
        order = np.lexsort((data.ids, drawn))
        state = {"seed_epoch": (seed, epoch), "order": order, "drawn": drawn[order]}
    lo = int(request["offsets"][index])
    hi = lo + int(request["counts"][index])
    take = state["order"][lo:hi]
    answer = {"rows": take_rows(data.rows, take), "y": data.y[take], "weight": data.weight[take],
              "ids": data.ids[take], "order_keys": state["drawn"][lo:hi]}
    return state, answer
