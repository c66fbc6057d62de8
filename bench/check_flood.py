"""Strangers on the coordinator's port during a fit: do they change the model or the round latency?

One SpSVM-2 fit on ``SparkEngine`` (``local[2]``, 2 tasks, coordinated by the driver) of 20,000
``make_rings`` rows, alternately quiet and flooded (quiet, flood, quiet, flood, ... ``--repeats``
times).  The flood, from a thread of this process (loopback, the same host as the tasks), starts before
the first round and lasts the whole fit: it keeps ``--strangers`` connections open (three in four
idle, one in four with its hello cut short; the coordinator drops each at its hello deadline, and the
flood opens another at once) and sends a hello with a wrong secret ten times a second.  Printed per
fit: rounds, wall seconds of the fit, median and 90th percentile of the rounds' wall milliseconds
(``engine.run``), the connections the flood made, and the largest coefficient difference from the first
quiet fit.  The goal (issue 18): the same model, and round latency within 10% of the quiet fits'.

    python -m bench.check_flood [--strangers 200] [--repeats 2] [--basis 150]
"""

import argparse
import os
import socket
import statistics
import sys
import threading
import time

import numpy as np

from bench.common import local_spark, print_table
from core.kernels import KernelSpec
from core.spsvm import fit_spsvm
from core.synthetic import make_rings
from spark_bsvm.engine import SparkEngine, wire


class Flood:
    """Keeps ``count`` stranger connections open on ``address`` and knocks with a wrong secret 10 times a
    second, from a thread, until ``stop``."""

    def __init__(self, address, count):
        self.address, self.count, self.made = address, count, 0
        self.open, self.done = [], threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _connect(self, slow):
        try:
            sock = socket.create_connection(self.address, timeout=0.5)
        except OSError:  # the listen backlog is full: try again on the next pass
            return None
        self.made += 1
        if slow:
            sock.sendall(wire.HELLO.pack(wire.HANDSHAKE, bytes(16), 0, bytes(32))[:20])
        return sock

    def _run(self):
        knock = 0.0
        while not self.done.is_set():
            self.open = [sock for sock in self.open if _still_open(sock)]
            while len(self.open) < self.count and not self.done.is_set():
                sock = self._connect(slow=len(self.open) % 4 == 3)
                if sock is None:
                    break
                self.open.append(sock)
            if time.monotonic() - knock >= 0.1:
                knock = time.monotonic()
                intruder = self._connect(slow=False)
                if intruder is not None:
                    intruder.sendall(wire.HELLO.pack(wire.HANDSHAKE, bytes(16), 0, bytes(32)))
                    intruder.close()
            self.done.wait(0.02)

    def stop(self):
        self.done.set()
        self.thread.join()
        for sock in self.open:
            sock.close()


def _still_open(sock):
    """Whether the peer has not closed ``sock`` (nothing to read, no end of stream)."""
    sock.setblocking(False)
    try:
        return sock.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        sock.setblocking(True)


def _fit(df, strangers, basis):
    """(model, rounds' wall seconds, connections the flood made) of one fit, flooded when ``strangers``."""
    times = []
    with SparkEngine(df, num_partitions=2) as engine:
        run = engine.run

        def timed_run(function, request, rebuild=None):
            start = time.perf_counter()
            try:
                return run(function, request, rebuild)
            finally:
                times.append(time.perf_counter() - start)

        engine.run = timed_run
        flood = Flood(engine._coordinator.address, strangers) if strangers else None
        try:
            model = fit_spsvm(engine, max_basis=basis, lam=1e-3, kernel=KernelSpec("rbf", gamma=0.5), seed=0)
        finally:
            if flood is not None:
                flood.stop()
    return model, times, flood.made if flood else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--strangers", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--basis", type=int, default=150)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    spark = local_spark("check_flood", 2, "2g")
    from pyspark.ml.linalg import Vectors

    X, y = make_rings(20_000, 4, seed=0)
    df = spark.createDataFrame([(Vectors.dense(x), float(label > 0)) for x, label in zip(X, y)],
                               ["features", "label"]).repartition(2).cache()
    df.count()
    _fit(df, 0, 5)  # the workers' imports and numba's code
    rows, reference, medians = [], None, {0: [], args.strangers: []}
    for _ in range(args.repeats):
        for strangers in (0, args.strangers):
            start = time.perf_counter()
            model, times, made = _fit(df, strangers, args.basis)
            wall = time.perf_counter() - start
            reference = reference or model
            diff = float(np.max(np.abs(model.coef - reference.coef))) if model.n_support == reference.n_support \
                else float("inf")
            ms = [1000 * t for t in times]
            medians[strangers].append(statistics.median(ms))
            rows.append(["flood" if strangers else "quiet", len(ms), f"{wall:.2f}", f"{statistics.median(ms):.2f}",
                         f"{np.percentile(ms, 90):.2f}", made, f"{diff:.1e}"])
    print_table(["fit", "rounds", "wall s", "round median ms", "round p90 ms", "connections", "max |coef diff|"],
                rows)
    ratio = statistics.median(medians[args.strangers]) / statistics.median(medians[0])
    print(f"\nround median, flooded / quiet: {ratio:.3f} (goal: within 10%)")
    spark.stop()


if __name__ == "__main__":
    sys.exit(main())
