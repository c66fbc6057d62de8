"""Kernel evaluations per second of kernel_block and kernel_times, against this machine's GEMM rate.

A 522,910 x 54 dense float64 block (random, seeded; covtype's shape) against
100 rows, for rbf (also with precision="float32": float32 dot products from the tiles'
micro-kernel, a float32 block), linear and poly, and a 50,000 x 300 CSR block at 4% density
against 100 rows and against one (a slant step's column).  A dense evaluation needs the 2p flops of one dot
product, so a GEMM running at R flop/s implies R / (2p) evaluations per
second; the table gives the share of that rate kernel_block achieves.  All
in one process, between 5 timings of a square 2000 x 2000 GEMM before and 5
after: each case (and numpy's plain X @ Z.T of the dense shape, for
comparison) is called once untimed, then timed 5 times back to back; medians
are reported.  Back to back is the steady state of a fit, which calls
kernel_block round after round; on this machine the first call after a
pause or after another case's 400 MB result measured up to twice as slow
(rbf 170 ms in a run, 300-400 ms after a switch).  The pause after each BLAS
call lets OpenBLAS's threads, which spin for ~0.1 s after a call, go to
sleep: they would otherwise slow down the next kernel_block.

    python bench/bench_kernels.py
"""

import time

import numba
import numpy as np
import scipy.sparse as sp

from bench.common import print_table
from core.kernels import KernelSpec, kernel_block, kernel_times
from core.rows import as_rows, squared_norms

ROUNDS = 5
GEMM_N = 2000


def seconds(f):
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def main():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((522_910, 54))
    S = as_rows(sp.random(50_000, 300, density=0.04, format="csr", random_state=1))
    Z = rng.standard_normal((100, 54))
    Zs = rng.random((100, 300))
    Zs1 = Zs[:1]
    A, B = rng.standard_normal((GEMM_N, GEMM_N)), rng.standard_normal((GEMM_N, GEMM_N))
    coef = rng.standard_normal(100)
    rbf = KernelSpec("rbf", gamma=1 / 54)
    cases = [  # label, X, Z, spec, flops per evaluation, precision
        ("dense 522910x54", X, Z, rbf, 2 * 54, "float64"),
        ("dense 522910x54", X, Z, "rbf times", 2 * 54, "float64"),  # kernel_times: the same values, applied to coef
        ("dense 522910x54", X, Z, rbf, 2 * 54, "float32"),
        ("dense 522910x54", X, Z, "rbf times", 2 * 54, "float32"),
        ("dense 522910x54", X, Z, KernelSpec("linear"), 2 * 54, "float64"),
        ("dense 522910x54", X, Z, KernelSpec("poly", gamma=1 / 54, degree=3, coef0=1.0), 2 * 54, "float64"),
        ("CSR 50000x300 4%", S, Zs, KernelSpec("rbf", gamma=0.1), 2 * S.nnz / S.shape[0], "float64"),
        ("CSR 50000x300 4%", S, Zs1, KernelSpec("rbf", gamma=0.1), 2 * S.nnz / S.shape[0], "float64"),  # a step
        ("dense 522910x54", X, Z, None, 2 * 54, "float64"),  # numpy's X @ Z.T: what BLAS alone reaches on this shape
    ]
    norms = {id(M): squared_norms(M) for M in (X, Z, S, Zs, Zs1)}  # precomputed, as the partitions keep them

    def run(case):
        _, Xc, Zc, spec, _, precision = case
        if spec is None:
            return Xc @ Zc.T
        if spec == "rbf times":
            return kernel_times(Xc, Zc, rbf, coef, x_sq_norms=norms[id(Xc)], z_sq_norms=norms[id(Zc)],
                                precision=precision)
        return kernel_block(Xc, Zc, spec, x_sq_norms=norms[id(Xc)], z_sq_norms=norms[id(Zc)], precision=precision)

    for case in cases:
        run(case)  # compile or load the numba cache
    A @ B
    gemm, times = [seconds(lambda: A @ B) for _ in range(ROUNDS)], [None] * len(cases)
    time.sleep(0.5)
    for k, case in enumerate(cases):
        run(case)  # untimed: see above
        times[k] = [seconds(lambda: run(case)) for _ in range(ROUNDS)]
        if case[3] is None:
            time.sleep(0.5)  # after a BLAS call, see above
    gemm += [seconds(lambda: A @ B) for _ in range(ROUNDS)]

    gemm_rate = 2 * GEMM_N**3 / np.median(gemm)
    print(f"GEMM {GEMM_N}x{GEMM_N} float64: {gemm_rate / 1e9:.1f} GFLOP/s; numba: {numba.get_num_threads()} threads "
          f"({numba.threading_layer()}); medians of {ROUNDS} back-to-back calls\n")
    rows = []
    for (label, Xc, Zc, spec, flops, precision), ts in zip(cases, times):
        rate = Xc.shape[0] * Zc.shape[0] / np.median(ts)
        dense = not sp.issparse(Xc)
        implied = gemm_rate / flops if dense else None
        name = spec.name if isinstance(spec, KernelSpec) else spec or "X @ Z.T"
        rows.append([label, Zc.shape[0], name, precision, f"{rate:.3g}", f"{rate * flops / 1e9:.1f}",
                     f"{implied:.3g}" if dense else "-", f"{100 * rate / implied:.0f}%" if dense else "-"])
    print_table(["block", "Z rows", "kernel", "dots", "evals/s", "GFLOP/s", "GEMM-implied evals/s", "achieved"],
                rows)
    print("\nGFLOP/s counts the 2 flops per multiply-add of the dot products (stored entries only for CSR).")
    print("X @ Z.T: numpy's (BLAS's) product alone, no kernel function: the rate a tall-skinny GEMM reaches here.")
    print("rbf times: kernel_times, K(X, Z) @ coef with the kernel values reduced in cache, never stored.")
    print("dots float32: precision='float32', the dot products in float32 (the tiles' micro-kernel, sixteen lanes) and "
          "rbf's exponent and exp in float32, the block stored in float32; 'achieved' is still against the float64 "
          "GEMM's rate.")


if __name__ == "__main__":
    main()
