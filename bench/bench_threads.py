"""Threads that never hurt: one in-process fit with numba's default pool against the same fit with 1 thread,
on an idle machine and beside busy-loop processes that load every core.

Each timed fit runs in a fresh Python process (the pool and its wait policy are fixed when numba first
starts it), after an untimed warm-up fit in that process, so JIT compilation is not timed.  The cases are
interleaved (A B A B ...) and each line gives the median of ``--repeats`` processes: wall seconds and the
fit process' CPU seconds (``time.process_time``: all its threads; busy waiting shows up here).

The fits: SpSVM-2, ``LocalEngine`` with 2 partitions, ``--basis`` basis functions, on

    ijcnn1   the first ``--rows`` training rows (dense), lambda = 1/32, gamma = 0.5 (bench_spsvm's
             validation choice): every kernel block of its rounds is below ``core.kernels``' pool
             threshold, so both settings run the same serial code: what the pool costs when unused
    forest   ``--rows`` rows of the generated Forest-shaped set (54 features), lambda = 1/32, gamma = 1:
             its candidate blocks go to numba's pool

    python -m bench.bench_threads [--cases ijcnn1,forest] [--rows 20000] [--basis 100] [--repeats 5] [--busy 2]
"""

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import time

from bench.common import print_table


def _data(case, rows):
    """The case's rows, labels and kernel."""
    from bench.common import load_libsvm
    from core.kernels import KernelSpec
    from core.synthetic import make_forest_like

    if case == "forest":
        X, y = make_forest_like(rows, noise=0.05, seed=1)
        return X, y, KernelSpec("rbf", gamma=1.0)
    X, y = load_libsvm("ijcnn1", "ijcnn1", n_features=22)
    return X[:rows].toarray(), y[:rows], KernelSpec("rbf", gamma=0.5)


def _child(case, rows, basis, threads):
    """Fit twice in this process (warm-up, then timed); print the timed fit's wall and CPU seconds as JSON."""
    import numba
    import numpy as np

    from core.engine import LocalEngine
    from core.spsvm import fit_spsvm

    if threads:
        numba.set_num_threads(threads)
    X, y, kernel = _data(case, rows)

    def fit():
        with LocalEngine(X, y, n_partitions=2) as engine:
            return fit_spsvm(engine, max_basis=basis, lam=1 / 32, kernel=kernel, seed=0)

    fit()
    wall, cpu = time.perf_counter(), time.process_time()
    model = fit()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(json.dumps({"wall": wall, "cpu": cpu, "threads": numba.get_num_threads(),
                      "layer": numba.threading_layer(), "error": float(np.mean(model.predict(X) != y))}))


def _spin(stop):
    while not stop.is_set():
        pass


def _run_child(args, case, threads):
    command = [sys.executable, "-m", "bench.bench_threads", "--child", "--cases", case, "--rows", str(args.rows),
               "--basis", str(args.basis), "--threads", str(threads)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default="ijcnn1,forest")
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--basis", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--busy", type=int, default=os.cpu_count(), help="busy-loop processes of the loaded runs")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return _child(args.cases, args.rows, args.basis, args.threads)
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; "
          f"SpSVM-2, {args.rows} rows, d={args.basis}, LocalEngine(2 partitions)\n")
    table = []
    for case, busy in [(case, busy) for case in args.cases.split(",") for busy in (0, args.busy)]:
        stop = multiprocessing.Event()
        spinners = [multiprocessing.Process(target=_spin, args=(stop,), daemon=True) for _ in range(busy)]
        for p in spinners:
            p.start()
        try:
            runs = {0: [], 1: []}  # 0: numba's default pool size
            for _ in range(args.repeats):
                for threads in (0, 1):
                    runs[threads].append(_run_child(args, case, threads))
        finally:
            stop.set()
            for p in spinners:
                p.join()
        medians = {t: {k: statistics.median(r[k] for r in rs) for k in ("wall", "cpu")} for t, rs in runs.items()}
        for threads, rs in runs.items():
            label = f"default ({rs[0]['threads']}, {rs[0]['layer']})" if threads == 0 else "1"
            table.append([case, busy, label, medians[threads]["wall"], medians[threads]["cpu"],
                          medians[threads]["wall"] / medians[1]["wall"], f"{100 * rs[0]['error']:.2f}"])
    print_table(["case", "busy procs", "threads", "wall s", "CPU s", "wall / 1 thread", "train err %"], table)


if __name__ == "__main__":
    sys.exit(main())
