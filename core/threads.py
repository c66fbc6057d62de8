"""How ``core`` uses threads: numba's pool for kernel blocks, BLAS on one thread, no spinning.

Measured with ``bench/bench_threads.py`` (SpSVM-2, ijcnn1, two busy-loop processes beside the fit on
2 cores): with the defaults of numba and OpenBLAS the fit took 19.3 s, with one numba thread 10.8 s,
and with numba's pool sleeping when idle and BLAS on one thread 4.1 s.  Two things waste the cores:

- OpenBLAS threads every matrix-vector product of the partitions and the driver (K_JI^T v, the
  Cholesky solves).  Those are memory-bound and small; its threads spin between calls and, on a busy
  machine, each call waits for a descheduled helper thread.  ``one_blas_thread`` runs a fit with
  BLAS on one thread (the kernel blocks' tiles already run one per numba thread).
- libgomp, numba's OpenMP layer, keeps idle pool threads spinning for a while after each parallel
  loop.  ``OMP_WAIT_POLICY=PASSIVE`` makes them sleep at once.  libgomp reads it when it starts (at
  numba's first parallel loop), so ``core.config`` sets it when ``core`` is imported; a value the
  user set wins.

And one thing makes a busy machine costlier than it need be: numba hands each thread of a ``prange`` a
fixed, equal share of the iterations (its chunk size does not change that under the OpenMP layer), so
a parallel block ends when its most delayed thread ends: a pool thread woken a time slice late holds
the block back by that slice.  The tile loops of ``core.kernels`` therefore run one ``prange``
iteration per thread, each taking the next free tile from a shared counter (``fetch_add``): a late
thread finds fewer tiles left and the others do its share.
"""

import functools
import os

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def set_wait_policy():
    """Make numba's OpenMP threads sleep when idle, unless the user chose otherwise."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def one_blas_thread(fit):
    """``fit`` run with the BLAS libraries loaded in the process limited to one thread."""

    @functools.wraps(fit)
    def run(*args, **kwargs):
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1, user_api="blas"):
            return fit(*args, **kwargs)

    return run


@intrinsic
def fetch_add(typingctx, counter, value):
    """``old = counter[0]; counter[0] += value; return old`` as one atomic step (int64 array, njit code):
    threads of a ``prange`` drawing work items from one counter never draw the same item."""
    if not (isinstance(counter, types.Array) and counter.dtype == types.int64 and isinstance(value, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        array_type = signature.args[0]
        array = context.make_array(array_type)(context, builder, args[0])
        first = cgutils.get_item_pointer(context, builder, array_type, array, [context.get_constant(types.intp, 0)])
        step = context.cast(builder, args[1], signature.args[1], types.int64)
        return builder.atomic_rmw("add", first, step, "monotonic")

    return types.int64(counter, value), codegen
