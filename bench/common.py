"""Helpers shared by the bench scripts: their data (``core.benchmark_files``), timing a fit, printing tables."""

import time

# the scripts' data
from core.benchmark_files import DATA_DIR, load_covtype_20k, load_libsvm, load_ripley, require  # noqa: F401


def print_table(header, rows):
    """Print rows of values under a header, right-aligned columns."""
    cells = [header] + [[f"{v:.4g}" if isinstance(v, float) else str(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    for k, row in enumerate(cells):
        print("  ".join(c.rjust(w) for c, w in zip(row, widths)))
        if k == 0:
            print("  ".join("-" * w for w in widths))


def timed(fit):
    """``fit()``'s result, wall seconds and CPU seconds (``time.process_time``: this process, all threads)."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fit()
    return result, time.perf_counter() - wall, time.process_time() - cpu
