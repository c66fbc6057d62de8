"""A Cholesky factor kept up to date as its matrix grows and changes by rank one.

SpSVM's Newton matrix P = lambda K_JJ + K_JI W K_JI^T (Keerthi, Chapelle &
DeCoste, eq. 6) grows by one row and column per new basis function and
changes by +-w_i k_i k_i^T when example i enters or leaves the active set I.
``CholeskyFactor`` keeps the upper-triangular R with R^T R = P in the top-left
d x d block of a preallocated (capacity x capacity) array, so that each change
costs O(d^2) instead of a refactorisation's O(d^3):

    append     P' = [[P, p], [p^T, pi]]:  r = R^-T p,  rho = sqrt(pi - r.r),
               R' = [[R, r], [0, rho]]  (r given when the caller has solved for it)
    extend     k columns at once, P' = [[P, Q], [Q^T, S]]:  T = R^-T Q (one triangular
               solve with k right-hand sides),  R' = [[R, T], [0, chol(S - T^T T)]]:
               BLAS-3 work instead of k appends' matrix-vector loops
    update     P + x x^T:  a sweep of plane rotations along the rows of R
    downdate   P - x x^T:  the same with hyperbolic rotations; fails (and
               leaves R unusable) when P - x x^T is not numerically positive
               definite, so callers keep P to refactorise from.

Rows of R are contiguous, so the inner loops of the rotations and of the
forward substitution run along memory, and they vectorise: each runs over a
row's tail as a slice, its index from 0.  Over ``range(k + 1, d)`` numba
could not tell the index from a negative one, which it wraps around, and LLVM
left the loop scalar: at d = 1,000 an update took 516 us that way and 86 us
as the loops are now, a forward substitution 212 us and 61 us (one thread;
the same bits, since each element's operations are the same;
``bench/HISTORY.md``).

The rotation scheme is the classic one (Golub & Van Loan, Matrix
Computations, section 6.5.4; Seeger 2004, "Low rank updates for the Cholesky
decomposition").
"""

import numba
import numpy as np
import scipy.linalg

from core.config import NJIT

# a pivot rho^2 below this share of the new diagonal means the new column is (numerically) a
# combination of the old ones: P is too ill-conditioned to factor reliably
PIVOT_RTOL = 1e-12


class CholeskyFactor:
    """Upper-triangular R, R^T R = P, for a P of size ``size`` <= ``capacity``."""

    def __init__(self, capacity):
        if capacity < 0:
            raise ValueError(f"capacity must be >= 0, got {capacity}")
        self.R = np.zeros((capacity, capacity))
        self.size = 0

    @property
    def upper(self):
        """The current factor R (a view)."""
        return self.R[:self.size, :self.size]

    def append(self, column, diagonal, half=None):
        """Grow P by the column ``column`` (length size) and the diagonal entry; False when not PD.

        ``half``: R^-T column, when the caller already has it (``half_solve``): saves the O(d^2) solve.
        """
        d = self.size
        if d >= self.R.shape[0]:
            raise ValueError(f"the factor is full (capacity {self.R.shape[0]})")
        column = np.ascontiguousarray(column, dtype=np.float64)
        if column.shape != (d,):
            raise ValueError(f"column must have length {d}, got shape {column.shape}")
        r = _forward(self.R, d, column) if half is None else np.ascontiguousarray(half, dtype=np.float64)
        ok = _write_column(self.R, d, r, float(diagonal))
        if ok:
            self.size = d + 1
        return ok

    def extend(self, columns, corner):
        """Grow P by k columns at once: ``columns`` (size x k) above the symmetric ``corner`` (k x k), of which
        only the upper triangle is read.

        The same factor as k appends (and the same pivot test), from one triangular solve with k
        right-hand sides and a k x k factorisation.  False, R left at its size, when a pivot fails.
        """
        d, k = self.size, corner.shape[0]
        if d + k > self.R.shape[0]:
            raise ValueError(f"{d + k} columns exceed the capacity {self.R.shape[0]}")
        top = self.half_solve(columns) if d else np.zeros((0, k))
        try:
            low = scipy.linalg.cholesky(corner - top.T @ top, lower=False, check_finite=False)
        except np.linalg.LinAlgError:
            return False
        if not np.all(np.diag(low) ** 2 > PIVOT_RTOL * np.abs(np.diag(corner))):
            return False
        self.R[:d, d:d + k] = top
        self.R[d:d + k, :d] = 0.0
        self.R[d:d + k, d:d + k] = low
        self.size = d + k
        return True

    def update(self, x):
        """R becomes the factor of P + x x^T."""
        _rotate(self.R, self.size, self._vector(x), 1.0)

    def downdate(self, x):
        """R becomes the factor of P - x x^T; False (R unusable) when that is not positive definite."""
        return _rotate(self.R, self.size, self._vector(x), -1.0)

    def refactor(self, P):
        """R from scratch for the symmetric ``P`` (size x size), of which only the upper triangle is read; False
        when P is not positive definite."""
        d = P.shape[0]
        if d > self.R.shape[0]:
            raise ValueError(f"P of size {d} exceeds the capacity {self.R.shape[0]}")
        try:
            R = scipy.linalg.cholesky(P, lower=False, check_finite=False)
        except np.linalg.LinAlgError:
            return False
        self.R[:d, :d] = R
        self.size = d
        return True

    def solve(self, b):
        """P^-1 b."""
        return scipy.linalg.solve_triangular(self.upper, self.half_solve(b), lower=False, check_finite=False)

    def half_solve(self, b):
        """R^-T b (a vector, or one column per right-hand side): ||R^-T b||^2 = b^T P^-1 b."""
        if np.ndim(b) == 1:  # in place on R: LAPACK (through scipy) would copy the d x d view first
            return _forward(self.R, self.size, np.ascontiguousarray(b, dtype=np.float64))
        return scipy.linalg.solve_triangular(self.upper, b, trans="T", lower=False, check_finite=False)

    def _vector(self, x):
        x = np.array(x, dtype=np.float64)  # a copy: the rotations overwrite it
        if x.shape != (self.size,):
            raise ValueError(f"x must have length {self.size}, got shape {x.shape}")
        return x


@numba.njit(**NJIT)
def _forward(R, d, p):
    """r with R^T r = p, by forward substitution along rows of R."""
    acc = np.zeros(d)
    r = np.empty(d)
    for i in range(d):
        ri = (p[i] - acc[i]) / R[i, i]
        r[i] = ri
        row, rest = R[i, i + 1:d], acc[i + 1:d]
        for k in range(row.shape[0]):  # from 0: see the module doc on vectorised loops
            rest[k] += row[k] * ri
    return r


@numba.njit(**NJIT)
def _write_column(R, d, r, pi):
    """Write r and rho = sqrt(pi - r.r) into column d of R; False when the pivot fails."""
    pivot = pi - np.dot(r, r)
    if not pivot > PIVOT_RTOL * abs(pi):
        return False
    for i in range(d):
        R[i, d] = r[i]
        R[d, i] = 0.0
    R[d, d] = np.sqrt(pivot)
    return True


@numba.njit(**NJIT)
def _rotate(R, d, x, sign):
    """R^T R + sign x x^T by (sign = 1) plane or (sign = -1) hyperbolic rotations; x is overwritten."""
    for k in range(d):
        rkk = R[k, k]
        square = rkk * rkk + sign * x[k] * x[k]
        if not square > 0.0:
            return False
        r = np.sqrt(square)
        c = r / rkk
        s = x[k] / rkk
        R[k, k] = r
        row, rest = R[k, k + 1:d], x[k + 1:d]
        for i in range(row.shape[0]):  # from 0: see the module doc on vectorised loops
            row[i] = (row[i] + sign * s * rest[i]) / c
            rest[i] = c * rest[i] - s * row[i]
    return True
