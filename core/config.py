"""numba switches for the whole core: every njit function takes one of these.

NJIT           plain IEEE arithmetic (no fast-math): results match numpy's to
               the last bits wherever the operation order is the same.
NJIT_PARALLEL  NJIT plus ``numba.prange`` on numba's thread pool; its size is
               NUMBA_NUM_THREADS (set it to 1 where Spark already runs one
               task per core).
NJIT_FMA       NJIT plus FMA contraction (a * b + c in one rounding), and
               nothing else of fast-math: for element-wise polynomial passes,
               where it measured 15-40% faster and is never less accurate.
NJIT_SUMS      NJIT_FMA plus reassociation, so that loops accumulating sums
               vectorise (several partial sums, added at the end): for
               reductions over rows, where the order of the additions is
               rounding only; measured 4.6x faster for SpSVM's directional
               sums.  Deterministic on one machine; the last bits may differ
               between CPUs with other vector widths.

Inside njit functions, an array is copied into a slice of another by a loop, never by a slice
assignment (``K[i, :q] = block[c]``): for each of those, numba compiles the message of its
shape-mismatch error, with its string formatting, on a machine's first fit (4.4-5.2 s of the
first SpSVM-2 or six-method fit on an empty cache; with loops, which copy the same values, the
first SpSVM-2 fit of the quick start's size compiled for 10.2 s against 15.7 s).

Importing this module (every njit module does, before its decorators run)
also sets the thread policy of ``core.threads`` and installs the cache
locator of ``core.jit_cache``, so that compiled code is cached per machine
even where the package is read-only or zipped.
"""

from core import jit_cache, threads

threads.set_wait_policy()
jit_cache.install()

NJIT = dict(cache=True, nogil=True, fastmath=False)
NJIT_PARALLEL = dict(NJIT, parallel=True)
NJIT_FMA = dict(NJIT, fastmath={"contract"})
NJIT_SUMS = dict(NJIT, fastmath={"contract", "reassoc"})
