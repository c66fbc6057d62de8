"""LAPACK's least-squares solver for njit code, called by name, so that numba compiles little and caches its callers.

``np.linalg.lstsq`` inside an njit function makes numba compile its generic wrapper: checks and copies for
every dtype and shape, each with an error message and its string formatting.  That took 5-7 s of a
machine's first C-SVC fit on an empty cache (``core.smo``'s Newton steps; ``bench/bench_cold_start.py``),
every time numba compiles anew.  ``least_squares`` calls the routine numba's wrapper calls, LAPACK's dgelsd
from scipy (minimum-norm least squares by a divide-and-conquer SVD), with the same arguments and the same
workspace (LAPACK's own query): the same solution to the bit, compiled in about a second.

The routine is reached through a symbol registered with LLVM when this module is imported
(``llvmlite.binding.add_symbol``), not through a function pointer baked into the machine code, so the
functions that call it can be cached: every process that imports this module resolves the name again.
"""

import numba
import numpy as np
from llvmlite import binding
from numba.core import types
from numba.extending import get_cython_function_address

from core.config import NJIT

_SYMBOL = "spark_bsvm_dgelsd"
binding.add_symbol(_SYMBOL, get_cython_function_address("scipy.linalg.cython_lapack", "dgelsd"))
# dgelsd(m, n, nrhs, a, lda, b, ldb, s, rcond, rank, work, lwork, iwork, info): Fortran, every argument by address
_dgelsd = types.ExternalFunction(_SYMBOL, types.void(*[types.voidptr] * 14))

# the integer arguments, one int32 array: where each lies in it
_ORDER, _ONE, _RANK, _LWORK, _INFO = range(5)


@numba.njit(**NJIT)
def _call_dgelsd(a, b, singular_values, rcond, integers, work, iwork):
    """dgelsd on the square a (column-major) and one right-hand side b, both overwritten; m, n, lda and ldb
    are all ``integers[_ORDER]``."""
    order = integers[_ORDER:].ctypes
    _dgelsd(order, order, integers[_ONE:].ctypes, a.ctypes, order, b.ctypes, order, singular_values.ctypes,
            rcond.ctypes, integers[_RANK:].ctypes, work.ctypes, integers[_LWORK:].ctypes, iwork.ctypes,
            integers[_INFO:].ctypes)


@numba.njit(**NJIT)
def least_squares(a, b):
    """The minimum-norm least-squares solution x of the square system a x = b, as ``np.linalg.lstsq(a, b)[0]``
    gives it inside njit code (singular values below machine precision times the largest count as zero);
    a and b are left alone.  Returns (x, solved): solved is False, and x meaningless, where LAPACK reports an
    SVD that did not converge or a bad argument."""
    n = a.shape[0]
    column_major = a.T.copy()  # row j holds column j of a
    x = b.copy()
    singular_values = np.empty(n)
    rcond = np.full(1, -1.0)  # < 0: machine precision, as numba's lstsq passes it
    integers = np.zeros(5, np.int32)
    integers[_ORDER], integers[_ONE], integers[_LWORK] = n, 1, -1
    query, iwork_size = np.empty(1), np.zeros(1, np.int32)
    _call_dgelsd(column_major, x, singular_values, rcond, integers, query, iwork_size)  # lwork = -1: sizes only
    if integers[_INFO] != 0:
        return x, False
    integers[_LWORK] = int(query[0])
    _call_dgelsd(column_major, x, singular_values, rcond, integers, np.empty(integers[_LWORK]),
                 np.empty(max(iwork_size[0], 1), np.int32))
    return x, integers[_INFO] == 0
