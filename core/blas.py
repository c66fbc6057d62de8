"""BLAS on the upper triangle of a symmetric matrix kept in the top-left block of a larger array.

SpSVM-2's driver keeps P = lambda K'_JJ + K'_JI W K'_JI^T (``core.spsvm``) in the top-left d x d block of a
(capacity x capacity) array, and changes it by + sum_i x_i x_i^T - sum_l x_l x_l^T as examples enter and leave
the active set I.  As numpy expressions, ``P[:d, :d] += X.T @ X`` makes a d x d temporary and adds it in a second
pass over the strided block; at d = 861 that took 0.8-1.1 ms for 1-8 rows and 15.6 ms for 441, against 0.08-0.11
and 3.4 ms for BLAS's symmetric rank-k update (dsyrk) where the block lies (one thread, the best of five;
``bench/HISTORY.md``).  So only P's upper triangle is kept up to date, and these functions call scipy's BLAS
(``scipy.linalg.cython_blas``, through ctypes) with the array's row length as the leading dimension:

    add_gram           P[:d, :d]'s upper triangle += sign X^T X          (dsyrk)
    symmetric_times    P[:d, :d] x, from the upper triangle alone        (dsymv)

A C-ordered array is, to Fortran's BLAS, its transpose in column-major order: P's upper triangle is the lower one
there ('L'), and an (m x d) C-ordered X is the (d x m) column-major X^T, so X^T X is BLAS's A A^T with A = X^T
('N').  Both calls release the GIL, and run on as many threads as the BLAS library is allowed
(``core.threads.one_blas_thread``).
"""

import ctypes

import numpy as np
from numba.extending import get_cython_function_address

_POINTER = ctypes.c_void_p
# every argument of the Fortran routines by address: dsyrk(uplo, trans, n, k, alpha, a, lda, beta, c, ldc),
# dsymv(uplo, n, alpha, a, lda, x, incx, beta, y, incy)
_dsyrk = ctypes.CFUNCTYPE(None, *[_POINTER] * 10)(get_cython_function_address("scipy.linalg.cython_blas", "dsyrk"))
_dsymv = ctypes.CFUNCTYPE(None, *[_POINTER] * 10)(get_cython_function_address("scipy.linalg.cython_blas", "dsymv"))
_LOWER, _NOT_TRANSPOSED = ctypes.c_char(b"L"), ctypes.c_char(b"N")


def _int(value):
    return ctypes.byref(ctypes.c_int(value))


def _double(value):
    return ctypes.byref(ctypes.c_double(value))


def _check(P, d, name, vector, ndim):
    if P.ndim != 2 or P.dtype != np.float64 or not P.flags.c_contiguous or not 0 <= d <= min(P.shape):
        raise ValueError(f"P must be a C-contiguous 2-d float64 array of at least {d} x {d}, got {P.dtype} "
                         f"{P.shape}")
    if vector.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-d, got shape {vector.shape}")
    if vector.dtype != np.float64 or not vector.flags.c_contiguous or vector.shape[-1] != d:
        raise ValueError(f"{name} must be C-contiguous float64 with {d} columns, got {vector.dtype} {vector.shape}")


def add_gram(P, d, X, sign=1.0):
    """P[:d, :d]'s upper triangle (its diagonal included) += sign X^T X, in place, for the (m x d) rows X.

    P's strictly lower triangle and everything outside the block are left as they are."""
    _check(P, d, "X", X, ndim=2)
    if not P.flags.writeable:
        raise ValueError("P must be writeable: add_gram changes it in place")
    if len(X) == 0 or d == 0:
        return
    _dsyrk(ctypes.byref(_LOWER), ctypes.byref(_NOT_TRANSPOSED), _int(d), _int(len(X)), _double(sign),
           X.ctypes.data_as(_POINTER), _int(d), _double(1.0), P.ctypes.data_as(_POINTER), _int(P.shape[1]))


def symmetric_times(P, d, x):
    """P[:d, :d] x for the symmetric matrix whose upper triangle P[:d, :d] holds (its lower one is not read)."""
    _check(P, d, "x", x, ndim=1)
    y = np.zeros(d)
    if d:
        _dsymv(ctypes.byref(_LOWER), _int(d), _double(1.0), P.ctypes.data_as(_POINTER), _int(P.shape[1]),
               x.ctypes.data_as(_POINTER), _int(1), _double(0.0), y.ctypes.data_as(_POINTER), _int(1))
    return y
