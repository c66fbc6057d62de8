"""The working set's kernel buffer against the naive matrix of each round's working set."""

import mmap

import numpy as np
import pytest
import scipy.sparse as sp

from core.kernels import KernelSpec, kernel_block
from core.working_set import WorkingSetKernel


@pytest.mark.parametrize("sparse", [False, True])
def test_each_round_gives_the_kernel_matrix_of_its_working_set(sparse):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(300, 6))
    X[X < -0.5] = 0.0
    rows_of = sp.csr_matrix(X) if sparse else X
    kernel = KernelSpec("rbf", gamma=0.3)
    maps = []
    for solve in range(2):  # the second solve borrows the buffer the first gave back, its values stale
        with WorkingSetKernel(kernel, capacity=200) as cache:
            maps.append(cache.buffer.base)
            previous = {}
            # grow, keep most, shrink (examples move down into holes), replace all, grow again
            sizes = [20, 60, 130, 200, 120, 118, 40, 200][solve:]
            current = rng.choice(300, sizes[0], replace=False)
            for step, q in enumerate(sizes):
                if step:
                    keep = rng.choice(current, min(q, int(0.8 * current.size)), replace=False) if q != 40 else []
                    fresh = rng.choice(np.setdiff1d(np.arange(300), keep), q - len(keep), replace=False)
                    current = np.concatenate([keep, fresh]).astype(np.int64)
                    rng.shuffle(current)
                order, K = cache.arrange(current, rows_of[current])
                assert sorted(order) == list(range(q)) and K.flags.c_contiguous
                in_slots = current[order]
                naive = kernel_block(X[in_slots], X[in_slots], kernel)
                np.testing.assert_allclose(K[:q, :q], naive, rtol=1e-12, atol=1e-14)
                # an example that stays keeps its slot unless the set shrank below it
                for slot, example in enumerate(in_slots):
                    if example in previous and previous[example] < q:
                        assert previous[example] == slot
                previous = {example: slot for slot, example in enumerate(in_slots)}
        assert cache.buffer is None
    assert maps[1] is maps[0] or not hasattr(mmap, "MADV_FREE")  # kept only where freed lazily (core.buffers)


def test_a_working_set_larger_than_the_buffer_is_refused():
    cache = WorkingSetKernel(KernelSpec("rbf", gamma=1.0), capacity=3)
    with pytest.raises(ValueError, match="4 examples does not fit a kernel buffer for 3"):
        cache.arrange(np.arange(4), np.zeros((4, 2)))
