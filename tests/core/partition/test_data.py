"""A partition's block: its arrays as the partition functions get them."""

import numpy as np
from numpy.testing import assert_array_equal

from core.partition.data import PartitionData


def _read_only(values, dtype):
    array = np.array(values, dtype)
    array.flags.writeable = False  # as Arrow's zero-copy view of a Spark task's weight column
    return array


def test_read_only_labels_weights_and_ids_become_writable_arrays_and_the_callers_stay_read_only():
    y, weight, ids = _read_only([1, -1, 1], np.float64), _read_only([0.5, 2, 1], np.float64), _read_only([7, 8, 9],
                                                                                                          np.int64)
    block = PartitionData.build(np.eye(3), y, weight, ids, validation=None)
    for given, kept in ((y, block.y), (weight, block.weight), (ids, block.ids)):
        assert kept.flags.writeable and kept.flags.c_contiguous and kept.dtype == given.dtype
        assert_array_equal(kept, given)
        assert not given.flags.writeable
    writable = np.ones(3)
    assert PartitionData.build(np.eye(3), np.ones(3), writable, np.arange(3)).weight is writable  # no copy needed
