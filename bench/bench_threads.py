"""Threads that never hurt: one in-process fit with numba's default pool against the same fit with 1 thread,
on an idle machine and beside busy-loop processes that load every core.

Each setting's fits run in fresh Python processes (the pool and its wait policy are fixed when numba first
starts it): an untimed warm-up fit, so JIT compilation is not timed, then ``--fits`` timed fits, of which
the process reports the median.  The cases are interleaved (A B A B ...) and each line gives the median of
``--repeats`` processes: wall seconds and the fit process' CPU seconds (``time.process_time``: all its
threads; busy waiting shows up here), and the kernel blocks per fit large enough for numba's pool (the calls
of ``core.kernels``' pooled tile loops, which run them on one thread in the 1-thread setting): where there
are none, both settings ran the same code on one thread.

The fits, on ``LocalEngine`` with 2 partitions (``--cases``):

    spsvm-ijcnn1  SpSVM-2, d = 100, lambda = 1/32, gamma = 0.5 (bench_spsvm's validation choice), on
                  ijcnn1's first 20,000 training rows (dense): every kernel block of its rounds is
                  below ``core.kernels``' pool threshold, so both settings run the same serial code
    csvc-forest   C-SVC, C = 1, gamma = 1, on 20,000 rows of the generated Forest-shaped set (54
                  features): most of its kernel blocks (10,000 rows x the working set) go to the pool

Each repeat runs three processes: the default pool, 1 thread, and 1 thread again, a control whose
``wall / 1 thread`` is what two runs of one setting differ by here (where a case runs the same code in both
settings, the default's ratio can only be read against it).  Their order rotates from repeat to repeat, so
that no setting always runs right after another's process.

    python -m bench.bench_threads [--cases spsvm-ijcnn1,csvc-forest] [--repeats 5] [--fits 3] [--busy 2]
"""

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import time

from bench.common import print_table, recorded_calls

ROWS = 20_000
DEFAULT, ONE, ONE_AGAIN = "default", "1", "1 (control)"  # the settings of a repeat's three processes


def _case(name):
    """(rows, labels, fit(engine)) of the case ``name``."""
    from bench.common import load_libsvm
    from core.kernels import KernelSpec
    from core.spsvm import fit_spsvm
    from core.svc import fit_csvc
    from core.synthetic import make_forest_like

    if name == "csvc-forest":
        X, y = make_forest_like(ROWS, noise=0.05, seed=1)
        return X, y, lambda engine: fit_csvc(engine, C=1.0, kernel=KernelSpec("rbf", gamma=1.0))
    X, y = load_libsvm("ijcnn1", "ijcnn1", n_features=22)
    return X[:ROWS].toarray(), y[:ROWS], lambda engine: fit_spsvm(engine, max_basis=100, lam=1 / 32,
                                                                   kernel=KernelSpec("rbf", gamma=0.5), seed=0)


def _child(name, threads, fits):
    """Fit once (warm-up), then ``fits`` times, in this process; print the timed fits' median wall and CPU
    seconds and their pool-sized kernel blocks per fit as JSON."""
    import numba
    import numpy as np

    import core.kernels
    from core.engine import LocalEngine

    if threads:
        numba.set_num_threads(threads)
    X, y, fit_on = _case(name)

    def fit():
        with LocalEngine(X, y, n_partitions=2) as engine:
            return fit_on(engine)

    fit()
    pooled = [recorded_calls(core.kernels, loops) for loops in ("_tiles", "_tiles_times")]
    times = []
    for _ in range(fits):
        wall, cpu = time.perf_counter(), time.process_time()
        model = fit()
        times.append((time.perf_counter() - wall, time.process_time() - cpu))
    wall, cpu = np.median(times, axis=0)
    print(json.dumps({"wall": wall, "cpu": cpu, "pooled": sum(map(len, pooled)) / fits,
                      "threads": numba.get_num_threads(), "layer": numba.threading_layer(),
                      "error": float(np.mean(model.predict(X) != y))}))


def _spin(stop):
    while not stop.is_set():
        pass


def _run_child(args, case, threads):
    command = [sys.executable, "-m", "bench.bench_threads", "--child", "--cases", case, "--threads", str(threads),
               "--fits", str(args.fits)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default="spsvm-ijcnn1,csvc-forest")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--fits", type=int, default=3, help="timed fits per process (their median)")
    parser.add_argument("--busy", type=int, default=os.cpu_count(), help="busy-loop processes of the loaded runs")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return _child(args.cases, args.threads, args.fits)
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; "
          f"{ROWS} rows, LocalEngine(2 partitions), the median of {args.fits} timed fits per process\n")
    table = []
    for case, busy in [(case, busy) for case in args.cases.split(",") for busy in (0, args.busy)]:
        stop = multiprocessing.Event()
        spinners = [multiprocessing.Process(target=_spin, args=(stop,), daemon=True) for _ in range(busy)]
        for p in spinners:
            p.start()
        try:
            settings = (DEFAULT, ONE, ONE_AGAIN)
            runs = {setting: [] for setting in settings}
            for repeat in range(args.repeats):
                turn = repeat % len(settings)
                for setting in settings[turn:] + settings[:turn]:
                    runs[setting].append(_run_child(args, case, 0 if setting == DEFAULT else 1))
        finally:
            stop.set()
            for p in spinners:
                p.join()
        medians = {t: {k: statistics.median(r[k] for r in rs) for k in ("wall", "cpu", "pooled")}
                   for t, rs in runs.items()}
        for setting, rs in runs.items():
            label = f"default ({rs[0]['threads']}, {rs[0]['layer']})" if setting == DEFAULT else setting
            table.append([case, busy, label, medians[setting]["wall"], medians[setting]["cpu"],
                          medians[setting]["wall"] / medians[ONE]["wall"], f"{medians[setting]['pooled']:.0f}",
                          f"{100 * rs[0]['error']:.2f}"])
    print_table(["case", "busy procs", "threads", "wall s", "CPU s", "wall / 1 thread", "pool-sized blocks / fit",
                 "train err %"], table)


if __name__ == "__main__":
    sys.exit(main())
