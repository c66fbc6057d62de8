"""The Spark engine against LocalEngine: the same fit, the same seed, what Spark adds.

Per case, one fit on ``SparkEngine`` (Spark ``local[2]``, 2 partitions, the DataFrame read from a
Parquet file, cached and counted first) and one on ``LocalEngine`` (2 partitions, the same rows in
the same order and the same representation: CSR where the tasks hold CSR blocks), in one process,
alternating (Spark, local, Spark, local, ... with ``--repeats``; medians).  Printed:

    session     seconds to start the Spark session (once)
    start s     seconds to start the engine: the barrier stage, the tasks' connections, their checks of
                their rows and the coordinator's judgment of them, the tasks' blocks; LocalEngine's split into
                blocks
    blocks s    the slowest task's seconds from its Arrow batches to its numpy block, measured in
                barrier stages of their own over the same cached DataFrame: the median of
                ``BLOCK_STAGES`` (Spark only)
    MB/s        that task's block size over that time
    MB/s after  the same, from the bare stages after the case's fits (``bare s``): the slowest task's block, the
                median of ``BLOCK_STAGES``.  The JVM's conversion of the cached rows into Arrow warms over a session's
                first stages (ijcnn1's slowest task: ~80-100 ms in the first few stages after the frame was
                cached, ~35-45 ms after some 20 stages; ``HISTORY.md``), so this is a session's steady state
    first       seconds of the first round (Spark: tasks' start, their blocks, numba's loading)
    rounds      rounds of the fit (the same on both engines)
    rounds s    seconds from the end of the first round to the model: the other rounds and the solver's work
                between them
    end s       seconds from the model to the engine's end (Spark: the tasks stopped, the stage's end)
    fit s       seconds of the whole fit, engine start included, session start excluded
    cpu s       the driver process' CPU seconds of the fit (the Spark tasks run in other processes)
    tree cpu s  the CPU seconds of the fit in this process and every live process below it (Spark's JVM and
                its Python workers, which run the tasks: ``bench.common.tree_cpu_seconds``)
    per round   (Spark rounds s - local rounds s) / (rounds - 1), in ms: what a round costs beyond the
                partition work (the first round and the end are the fixed costs of their own columns; the
                tenth and earlier sessions divided everything after the engine's start by the rounds)
    pairs ms    the least and the most of that figure over the fits' pairs (each Spark fit against the local fit
                after it): a fit of few rounds divides the noise of two fit times by few rounds
    wire MB     the bytes of the frames the driver sent to the tasks and received from them in a fit (sent / received,
                the medians; every task's copy of a request counts): what a round's messages would cost on a real
                network, where the tasks run on other machines
    skew, wire, work
                the per-round figure taken apart, in ms per round after the first, from what the Spark tasks
                report (``rounds.RoundTimes``): skew, each round's slowest task minus the tasks' mean (the
                partitions' uneven work, each task on one core, where LocalEngine runs one partition at a
                time on both); wire, the round's seconds minus its slowest task's work; work, the Spark tasks'
                mean work minus LocalEngine's rounds (both partitions' work).  What is left of the per-round
                figure is the difference in the driver's own work between rounds (the same code on both
                engines) and the noise of two fit times
    ratio       Spark fit / local fit
    bare s      seconds of a bare barrier stage over the same cached DataFrame whose tasks only build their
                blocks (the stages of ``blocks s``, timed whole after the case's fits: the median of
                ``BLOCK_STAGES``): what a Spark fit's stage costs with no coordinator, checks or round
    floor       (local fit + bare s) / local fit: the Spark / local a fit would show on this machine if its own
                start and end cost nothing beyond that bare stage and its rounds took LocalEngine's time; a fit
                whose rounds run faster on the Spark tasks, each partition on a core of its own where
                LocalEngine runs them in turn, can come in below it
    checks s    the seconds of the Spark fit's start spent on a Spark job of the data's checks
                (``stage._checked_frame``); 0 where the training tasks check their own rows (the driver's
                coordinator on classic sessions: every case here, since the
                twenty-sixth session; 0.25-0.42 s of each ijcnn1 fit before)
    same        both models equal: the same support vectors and coefficients within 1e-8

Before the cases, a first barrier job that runs no spark-bsvm code pays for what any first Python job
of a session pays (the JVM's warm-up, the Python workers' start, pyarrow loaded to read the rows as the
training stage's tasks do); then a small SpSVM fit runs once on
``LocalEngine`` (the driver's own code loaded: a fresh driver process is ``bench_cold_start``'s case) and
twice on Spark, on those fresh workers: the first pays for importing ``core`` and loading numba's cached
code in the workers, and for the first checks of rows in them.

Cases: C-SVC and budget-L1 on ijcnn1 (gamma = 1, C = 10; budget 500, C = 10 / 500), SpSVM-2 (d = 300,
lambda = 1/32, gamma = 0.5), the slant sparsifier of the C-SVC (to 300 support vectors) and EBSVM
(B = 200, lambda = 1e-5, gamma = 1) on ijcnn1's 49,990 training rows; budget-L1 and SpSVM-2 (d = 200)
on the generated Forest-shaped 522,910 x 54 set.

    python -m bench.bench_engines [--cases csvc-ijcnn1,spsvm-forest] [--repeats 1] [--conf KEY=VALUE ...]
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import scipy.sparse as sp

from bench.common import load_libsvm, print_table, recorded_calls, timed, tree_cpu_seconds
from core.ebsvm import fit_ebsvm
from core.engine import LocalEngine
from core.kernels import KernelSpec
from core.rows import dense_enough, to_dense
from core.slant import fit_slant
from core.spsvm import fit_spsvm
from core.svc import fit_budget_svm, fit_csvc
from core.synthetic import FOREST_ROWS, make_forest_like

PARTITIONS = 2
BLOCK_STAGES = 3  # barrier stages that time the tasks' blocks per data set (one varied by up to 2x)
HEADER = ["case", "engine", "start s", "blocks s", "MB/s", "MB/s after", "first s", "rounds", "rounds s", "end s",
          "fit s", "cpu s", "tree cpu s", "per round ms", "pairs ms", "wire MB", "skew ms", "wire ms", "work ms", "ratio",
          "bare s", "floor", "checks s", "same"]


def _ijcnn1():
    X, y = load_libsvm("ijcnn1", "ijcnn1", n_features=22)
    return X.toarray(), y


def _forest():
    return make_forest_like(FOREST_ROWS, noise=0.05, seed=0)


def _reference(X, y):
    """The C-SVC that the slant case sparsifies (trained once, locally)."""
    with LocalEngine(X, y, n_partitions=PARTITIONS) as engine:
        return fit_csvc(engine, C=10.0, kernel=KernelSpec("rbf", gamma=1.0))


# name: (data, fit(engine, extra), extra(X, y) computed once before the timed fits)
CASES = {
    "csvc-ijcnn1": (_ijcnn1, lambda e, _: fit_csvc(e, C=10.0, kernel=KernelSpec("rbf", gamma=1.0)), None),
    "budget_l1-ijcnn1": (_ijcnn1, lambda e, _: fit_budget_svm(e, budget=500, C=10.0 / 500, norm="l1",
                                                              kernel=KernelSpec("rbf", gamma=1.0)), None),
    "spsvm-ijcnn1": (_ijcnn1, lambda e, _: fit_spsvm(e, max_basis=300, lam=1 / 32,
                                                     kernel=KernelSpec("rbf", gamma=0.5)), None),
    "slant-ijcnn1": (_ijcnn1, lambda e, reference: fit_slant(e, reference, max_support=300), _reference),
    "ebsvm-ijcnn1": (_ijcnn1, lambda e, _: fit_ebsvm(e, budget=200, lam=1e-5, kernel=KernelSpec("rbf", gamma=1.0),
                                                     seed=0), None),
    "budget_l1-forest": (_forest, lambda e, _: fit_budget_svm(e, budget=500, C=10.0 / 500, norm="l1",
                                                              kernel=KernelSpec("rbf", gamma=0.5)), None),
    "spsvm-forest": (_forest, lambda e, _: fit_spsvm(e, max_basis=200, lam=1 / 32,
                                                     kernel=KernelSpec("rbf", gamma=0.5)), None),
}


class _Timed:
    """An engine seen by a solver, counting its rounds, timing the first one and summing the others' seconds
    (LocalEngine's: its partitions' work, one partition after the other)."""

    def __init__(self, engine):
        self._engine, self.rounds, self.first, self.others = engine, 0, None, 0.0

    def __getattr__(self, name):
        return getattr(self._engine, name)

    def run(self, function, request, rebuild=None):
        start = time.perf_counter()
        answers = self._engine.run(function, request, rebuild)
        if self.rounds == 0:
            self.first = time.perf_counter() - start
        else:
            self.others += time.perf_counter() - start
        self.rounds += 1
        return answers


def _counted_frames():
    """Count the bytes of the frames this process sends and receives (``spark_bsvm.engine.wire``) from now on:
    the dict returned holds the totals so far, ``sent`` and ``received``."""
    from spark_bsvm.engine import wire

    counts, send_frame, recv_exactly = {"sent": 0, "received": 0}, wire.send_frame, wire._recv_exactly

    def counted_send(sock, buffers):
        counts["sent"] += sum(memoryview(buffer).nbytes for buffer in buffers)
        return send_frame(sock, buffers)

    def counted_recv(sock, n):
        counts["received"] += n
        return recv_exactly(sock, n)

    wire.send_frame, wire._recv_exactly = counted_send, counted_recv
    return counts


def _fit(make_engine, fit, extra, checks=(), frames=None):
    """One fit on the engine ``make_engine()`` makes: its model and timings (``checks``: the list that
    ``recorded_calls`` fills with the seconds of each run of the data's checks; those of this fit are
    returned as ``checks``; ``frames``: ``_counted_frames``' totals, of which this fit's bytes are returned
    as ``sent`` and ``received``)."""
    frames = frames or {"sent": 0, "received": 0}
    already, before = len(checks), dict(frames)
    tree = tree_cpu_seconds()  # read first: /proc's scan stays out of the fit's wall time
    wall, cpu = time.perf_counter(), time.process_time()
    with make_engine() as engine:
        started = time.perf_counter() - wall
        timed = _Timed(engine)
        model = fit(timed, extra)
        trained = time.perf_counter() - wall
        if hasattr(engine, "round_times"):
            _, seconds, slowest, work = engine.round_times.totals(first=1)  # work: the tasks' mean
        else:
            seconds = slowest = work = timed.others
    end = time.perf_counter() - wall
    first, per_round = timed.first or 0.0, 1e3 / max(timed.rounds - 1, 1)  # a fit without rounds has no first
    return {"model": model, "fit": end, "cpu": time.process_time() - cpu, "tree_cpu": tree_cpu_seconds() - tree,
            "start": started,
            "rounds": timed.rounds, "first": first, "later": trained - started - first, "end": end - trained,
            "skew": per_round * (slowest - work), "wire": per_round * (seconds - slowest), "work": per_round * work,
            "checks": sum(checks[already:]),
            **{way: frames[way] - before[way] for way in ("sent", "received")}}


def _same(a, b):
    """Equal models: support vectors (as rows) and coefficients within 1e-8, bias too."""
    if a.n_support != b.n_support:
        return False
    rows_a, rows_b = to_dense(a.support_vectors), to_dense(b.support_vectors)
    order_a, order_b = np.lexsort(rows_a.T[::-1]), np.lexsort(rows_b.T[::-1])
    return (np.allclose(rows_a[order_a], rows_b[order_b], rtol=0, atol=1e-12)
            and np.allclose(a.coef[order_a], b.coef[order_b], rtol=0, atol=1e-8)
            and abs(a.bias - b.bias) <= 1e-8)


def _spark_frame(spark, X, y, directory):
    """A cached DataFrame of (features vector, label) in PARTITIONS partitions holding the same contiguous
    row ranges, in the same order, as LocalEngine's; the columns read from a Parquet file in ``directory``
    and the vectors made by a VectorAssembler, as the jobs do (vectors made by ``array_to_vector`` and
    cached reach Arrow ~12x slower: 19 s per 261k-row task).  A frame made from the in-memory table itself
    would carry its rows in every plan over it (a ``LocalRelation``), whose comparison with the cached plans
    cost each training stage's planning ~20 ms more (notes on Spark/local, ijcnn1)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.ml.feature import VectorAssembler
    from pyspark.sql import functions as F

    # keys that Spark's hash partitioning sends to partitions 0, 1, ... (range partitioning by a sample can put
    # two distinct keys into one partition)
    hashed = {row.p: row.id for row in spark.range(1000).select("id", F.expr(f"pmod(hash(id), {PARTITIONS})")
                                                               .alias("p")).collect()}
    keys = np.array([hashed[k] for k in range(PARTITIONS)])
    bounds = np.linspace(0, len(y), PARTITIONS + 1).astype(np.int64)
    columns = [f"x{j}" for j in range(X.shape[1])]
    table = pa.table({"part": keys[np.searchsorted(bounds, np.arange(len(y)), side="right") - 1],
                      "position": np.arange(len(y)), "label": y.astype(np.float64),
                      **{c: np.ascontiguousarray(X[:, j], np.float64) for j, c in enumerate(columns)}})
    path = os.path.join(directory, f"rows-{len(os.listdir(directory))}.parquet")
    pq.write_table(table, path)
    ordered = spark.read.parquet(path).repartition(PARTITIONS, "part").sortWithinPartitions("position")
    frame = VectorAssembler(inputCols=columns, outputCol="features").transform(ordered).select("features", "label")
    frame = frame.cache()
    frame.count()
    return frame


def _block_timings(frame, n_features, dense):
    """Per task of one barrier stage over ``frame``: rows, bytes and seconds from its Arrow batches to the
    numpy block, by the same conversion as the training tasks (``spark_bsvm.engine.blocks``; ``dense``: the
    checks' ``DataSummary.dense``, rows at least half nonzero, which the tasks make dense blocks), the rows
    reaching the tasks as the training stage's do (``stage.run_barrier_stage``)."""
    from spark_bsvm.engine.stage import row_bytes, run_barrier_stage

    def make_task(input_schema):
        def task(rows):
            import pyarrow as pa

            from spark_bsvm.engine.blocks import rows_from_arrow
            from spark_bsvm.engine.stage import record_batches

            start = time.perf_counter()
            table = pa.Table.from_batches(list(record_batches(rows, input_schema)))
            block = rows_from_arrow(table.column("features"), n_features, dense)
            size = block.nbytes if isinstance(block, np.ndarray) else block.data.nbytes + block.indices.nbytes
            row = {"rows": table.num_rows, "bytes": size, "sparse": not isinstance(block, np.ndarray),
                   "seconds": time.perf_counter() - start}
            yield row if input_schema is not None else pa.RecordBatch.from_pylist([row])

        return task

    schema = "rows long, bytes long, sparse boolean, seconds double"
    return [_as_dict(r) for r in run_barrier_stage(frame, make_task, row_bytes(n_features), schema)]


def _median_slowest(stages):
    """Of ``_block_timings``' stages, the slowest task's timing in the stage whose slowest task is the median."""
    slowest = sorted((max(tasks, key=lambda b: b["seconds"]) for tasks in stages), key=lambda b: b["seconds"])
    return slowest[len(slowest) // 2]


def _megabytes_a_second(block):
    """A task's block rate, in MB/s, from its ``_block_timings`` entry."""
    return block["bytes"] / 1e6 / max(block["seconds"], 1e-9)


def _as_dict(row):
    """An output row of ``run_barrier_stage`` (a dict, or a pyspark ``Row``) as a dict."""
    return row if isinstance(row, dict) else row.asDict()


def _executor_cold_start(spark, SparkEngine, directory):
    """Seconds of a first barrier job without spark-bsvm code, then of the first and the second small SpSVM
    fit, on the session's fresh Python workers, the driver's own code loaded before them by the same fit on
    ``LocalEngine`` (a fresh driver process adds what ``bench_cold_start`` measures in-process)."""
    from core.synthetic import make_rings
    from spark_bsvm.engine.stage import row_bytes, run_barrier_stage

    X, y = make_rings(400, 4, seed=0)
    frame = _spark_frame(spark, X, y, directory)
    fit = CASES["spsvm-ijcnn1"][1]
    _fit(lambda: LocalEngine(X, y, n_partitions=PARTITIONS), fit, None)  # the driver's code, loaded

    def count(input_schema):  # the rows reach it, and pyarrow reads them, as in the training stage; no spark-bsvm code
        def task(rows):
            import pyarrow as pa

            if input_schema is None:
                yield pa.RecordBatch.from_pydict({"rows": [sum(batch.num_rows for batch in rows)]})
            else:
                schema = pa.ipc.read_schema(pa.py_buffer(input_schema))
                yield {"rows": sum(pa.ipc.read_record_batch(pa.py_buffer(m), schema).num_rows for m in rows)}

        return task

    start = time.perf_counter()
    run_barrier_stage(frame, count, row_bytes(X.shape[1]), "rows long")
    first_job = time.perf_counter() - start
    return [first_job] + [_fit(lambda: SparkEngine(frame, num_partitions=PARTITIONS), fit, None)["fit"]
                          for _ in range(2)]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated names of " + ", ".join(CASES))
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting of the session, besides the bench's own (repeatable)")
    args = parser.parse_args()
    names = [n for n in args.cases.split(",") if n]
    unknown = sorted(set(names) - set(CASES))
    if unknown:
        parser.error(f"unknown cases {unknown}; known: {sorted(CASES)}")
    if any("=" not in setting for setting in args.conf):
        parser.error("--conf takes KEY=VALUE, as spark-submit's --conf")
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")

    os.environ["PYSPARK_PYTHON"] = sys.executable
    start = time.perf_counter()
    from pyspark.sql import SparkSession

    from spark_bsvm.engine import SparkEngine, stage

    builder = (SparkSession.builder.master(f"local[{PARTITIONS}]").appName("bench_engines")
               .config("spark.driver.memory", "8g").config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.execution.arrow.maxRecordsPerBatch", "65536"))
    for setting in args.conf:
        key, _, value = setting.partition("=")
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    session = time.perf_counter() - start
    print(f"Spark session started in {session:.1f} s")
    frames = tempfile.TemporaryDirectory(prefix="bench_engines-")  # the frames' Parquet files (removed at exit)
    cold = _executor_cold_start(spark, SparkEngine, frames.name)
    print(f"fresh executors: Spark's first Python job (no spark-bsvm code) {cold[0]:.2f} s; then a small SpSVM fit "
          f"took {cold[1]:.2f} s the first time, {cold[2]:.2f} s the second (+{cold[1] - cold[2]:.2f} s: the workers "
          "import core and load numba's cached code; the first checks of rows)\n")

    rows, loaded, checks, frame_bytes = [], {}, recorded_calls(stage, "_checked_frame"), _counted_frames()
    for name in names:
        data, fit, make_extra = CASES[name]
        if data not in loaded:
            loaded.clear()
            X, y = data()
            frame = _spark_frame(spark, X, y, frames.name)
            dense = dense_enough(np.count_nonzero(X), *X.shape)
            _block_timings(frame, X.shape[1], dense)  # the first conversion in these workers loads pyarrow's code
            slowest = _median_slowest(_block_timings(frame, X.shape[1], dense) for _ in range(BLOCK_STAGES))
            loaded[data] = (X, y, frame, slowest, dense)
        X, y, frame, slowest, dense = loaded[data]
        # the same rows as the tasks' blocks: CSR when they are (LocalEngine makes it dense where the tasks do)
        X_local = sp.csr_matrix(X) if slowest["sparse"] else X
        extra = make_extra(X_local, y) if make_extra else None
        runs = {"spark": [], "local": []}
        for _ in range(args.repeats):
            runs["spark"].append(_fit(lambda: SparkEngine(frame, num_partitions=PARTITIONS), fit, extra, checks,
                                      frame_bytes))
            runs["local"].append(_fit(lambda: LocalEngine(X_local, y, n_partitions=PARTITIONS), fit, extra))
        bare = [timed(lambda: _block_timings(frame, X.shape[1], dense)) for _ in range(BLOCK_STAGES)]
        bare_s = statistics.median(seconds for _, seconds, _ in bare)
        warm = _median_slowest(tasks for tasks, _, _ in bare)
        med = {k: {q: statistics.median(r[q] for r in v)
                   for q in ("fit", "cpu", "tree_cpu", "first", "start", "later", "end", "skew", "wire", "work",
                             "checks", "sent", "received")}
               for k, v in runs.items()}
        spark_run, local_run = runs["spark"][-1], runs["local"][-1]
        block_s = slowest["seconds"]
        later_rounds = max(spark_run["rounds"] - 1, 1)
        per_round = 1e3 * (med["spark"]["later"] - med["local"]["later"]) / later_rounds
        pairs = [1e3 * (spark_fit["later"] - local_fit["later"]) / later_rounds
                 for spark_fit, local_fit in zip(runs["spark"], runs["local"])]
        for engine in ("spark", "local"):
            rows.append([name, engine, med[engine]["start"], block_s if engine == "spark" else "-",
                         _megabytes_a_second(slowest) if engine == "spark" else "-",
                         _megabytes_a_second(warm) if engine == "spark" else "-",
                         med[engine]["first"], runs[engine][-1]["rounds"],
                         med[engine]["later"], med[engine]["end"], med[engine]["fit"], med[engine]["cpu"],
                         med[engine]["tree_cpu"],
                         per_round if engine == "spark" else "-",
                         f"{min(pairs):.2f} to {max(pairs):.2f}" if engine == "spark" else "-",
                         f"{med['spark']['sent'] / 1e6:.1f} / {med['spark']['received'] / 1e6:.1f}"
                         if engine == "spark" else "-",
                         med["spark"]["skew"] if engine == "spark" else "-",
                         med["spark"]["wire"] if engine == "spark" else "-",
                         med["spark"]["work"] - med["local"]["work"] if engine == "spark" else "-",
                         med["spark"]["fit"] / med["local"]["fit"] if engine == "spark" else "-",
                         bare_s if engine == "spark" else "-",
                         (med["local"]["fit"] + bare_s) / med["local"]["fit"] if engine == "spark" else "-",
                         med["spark"]["checks"] if engine == "spark" else "-",
                         _same(spark_run["model"], local_run["model"]) if engine == "spark" else "-"])
        print_table(HEADER, rows[-2:])
        print(flush=True)
    print(f"all cases (session start {session:.1f} s, not in the fits):")
    print_table(HEADER, rows)
    spark.stop()
    frames.cleanup()


if __name__ == "__main__":
    sys.exit(main())
