"""numba switches for the whole core (one place, as in stumpy's config)."""

NJIT = dict(cache=True, nogil=True, fastmath=False)
NJIT_PARALLEL = dict(NJIT, parallel=True)
