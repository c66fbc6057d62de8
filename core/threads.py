"""How ``core`` uses threads: numba's pool for kernel blocks, BLAS on one thread, no spinning.

Measured with ``bench/bench_threads.py`` (SpSVM-2, ijcnn1, two busy-loop processes beside the fit on
2 cores): with the defaults of numba and OpenBLAS the fit took 19.3 s, with one numba thread 10.8 s,
and with numba's pool sleeping when idle and BLAS on one thread 4.1 s.  Two things waste the cores:

- OpenBLAS threads every matrix-vector product of the partitions and the driver (K_JI^T v, the
  Cholesky solves).  Those are memory-bound and small; its threads spin between calls and, on a busy
  machine, each call waits for a descheduled helper thread.  ``one_blas_thread`` runs a fit with
  BLAS on one thread (the kernel blocks' GEMMs already run one per numba thread).
- libgomp, numba's OpenMP layer, keeps idle pool threads spinning for a while after each parallel
  loop.  ``OMP_WAIT_POLICY=PASSIVE`` makes them sleep at once.  libgomp reads it when it starts (at
  numba's first parallel loop), so ``core.config`` sets it when ``core`` is imported; a value the
  user set wins.
"""

import functools
import os


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
