"""The kernel matrix of the dual decomposition's working set, kept from round to round.

Consecutive working sets share most of their examples (on covtype-15k 60% in
the first rounds, 95% later: the free variables are carried over), so the
matrix is kept in a buffer where each example keeps its slot for as long as
it stays in the working set.  A round then computes the kernel rows of its
new examples only; a departed example's slot goes to a new one, or, when the
working set shrank, to an example moved down from a slot past its end, so
that the working set always fills the leading q x q block.

The working set is handed to SMO in slot order.  That order follows from the
sequence of working sets alone, which does not depend on the partitioning
(``core.dual._merge_candidates``), so neither does the solution.
"""

import numba
import numpy as np

from core.buffers import borrow_small_pages, give_back
from core.config import NJIT
from core.kernels import kernel_block


class WorkingSetKernel:
    """Kernel matrix of working sets of at most ``capacity`` examples, one slot per example (``ids``),
    reused across rounds.

    The buffer is (capacity, capacity), and a solve writes only its leading block as wide as the largest
    working set so far: a working set that grows past it first writes zeros over the new columns of
    the rows in use, then over the new rows as far as the new width, each a contiguous span of a row.  A
    fresh buffer's first writes are page faults, and scattered ones were slow (a C-SVC on covtype-15k
    spent 1.06 s filling slots into fresh rows, 0.32 s into rows swept first; the sweep of 6,000 rows
    took 0.04 s).  Sweeping whole rows of the capacity's width faulted 64 kB a row where a C-SVC on
    ijcnn1 (working sets below 1,024) uses 8 kB, 0.08-0.78 s a fit on a Spark driver (fresh pages cost
    the most on a VM that hands free memory back to its host, ``core.buffers``); a buffer that grew by
    copies swept the rows of each buffer it left (the twenty-second and seventy-third sessions,
    ``bench/HISTORY.md``).  Its pages are small ones (``core.buffers``): in numpy's huge pages, a C-SVC on
    covtype-15k (working sets of up to 5,570) spent 1.13-1.44 s of CPU arranging its working sets, 0.66-0.95 s
    of it in the kernel's page faults, against 0.74-0.86 s in small pages (the forty-second session's VM,
    alternating processes).  A solve borrows the buffer for as long as a ``with`` block holds it, and gives it
    back to the process's next solve of that capacity at its end (``core.buffers``).
    """

    def __init__(self, kernel, capacity):
        self.kernel = kernel
        self.ids = np.zeros(0, np.int64)
        self.buffer = borrow_small_pages((capacity, capacity))
        self.swept = 0  # the leading (swept, swept) block has been written since the buffer was borrowed

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        """Give the buffer back (``core.buffers.give_back``): the matrices ``arrange`` returned are no more."""
        buffer, self.buffer = self.buffer, None
        give_back(buffer)

    def arrange(self, ids, rows):
        """Slot order of the working set with example ids ``ids`` and rows ``rows`` (any order).

        Returns (order, K): ``ids[order]`` are the examples in slot order, and the leading (q, q)
        block of the C-contiguous buffer ``K`` is their kernel matrix (its other entries are stale).
        """
        q = ids.size
        if q > self.buffer.shape[0]:
            raise ValueError(f"a working set of {q} examples does not fit a kernel buffer for {self.buffer.shape[0]}")
        kept = np.isin(self.ids, ids)
        # slots below q hold the examples kept there; the others (departed or never filled) are holes
        holes = np.flatnonzero(np.append(~kept, np.ones(max(q - self.ids.size, 0), bool))[:q])
        movers = np.flatnonzero(kept[q:]) + q
        slot_ids = np.concatenate([self.ids, np.full(max(q - self.ids.size, 0), -1, np.int64)])
        K = self.buffer
        if q > self.swept:
            K[:self.swept, self.swept:q] = 0.0
            K[self.swept:q, :q] = 0.0
            self.swept = q
        _move_slots(K, holes[:movers.size], movers, max(q, self.ids.size))
        slot_ids[holes[:movers.size]] = slot_ids[movers]
        new = np.flatnonzero(~np.isin(ids, self.ids))
        new_slots = holes[movers.size:]
        slot_ids = slot_ids[:q]
        slot_ids[new_slots] = ids[new]
        by_id = np.argsort(ids)
        order = by_id[np.searchsorted(ids, slot_ids, sorter=by_id)]
        if new.size:
            _fill_slots(K, new_slots, kernel_block(rows[new], rows[order], self.kernel))
        self.ids = slot_ids
        return order, K


@numba.njit(**NJIT)
def _move_slots(K, holes, movers, used):
    """Move the example of slot movers[k] to slot holes[k], in turn: its row, then its column, of the
    leading (used, used) block (so that K[hole, hole] ends as K[mover, mover])."""
    for k in range(holes.shape[0]):
        hole, mover = holes[k], movers[k]
        for c in range(used):  # loops, not slice assignments (``core.config``)
            K[hole, c] = K[mover, c]
        for r in range(used):
            K[r, hole] = K[r, mover]


@numba.njit(**NJIT)
def _fill_slots(K, slots, block):
    """Write ``block`` (len(slots), q), the kernel rows of the examples in ``slots``, into their rows and
    columns of the leading (q, q) block of K (the rows first, so that the columns win on slots x slots)."""
    q = block.shape[1]
    for c in range(slots.shape[0]):  # loops, not slice assignments (``core.config``)
        row = K[slots[c]]
        for r in range(q):
            row[r] = block[c, r]
    for r in range(q):
        row = K[r]
        for c in range(slots.shape[0]):
            row[slots[c]] = block[c, r]
