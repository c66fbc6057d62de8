"""Cold start: the first fit in a fresh Python process against the second, for every method.

Each row is one fresh process that fits all six methods on Ripley's 250 training rows (``LocalEngine``)
twice; the first round of fits pays what a new process pays (imports, loading or compiling numba's
machine code), the second is the steady state.  The package is imported in five ways:

    tree      this checkout, as ``pip install -e .`` leaves it (numba caches beside the sources)
    readonly  a copy of ``core/`` whose files and folders are read-only, as in a system site-packages
    zip       ``core/`` in a zip file on ``sys.path``, as ``spark-submit --py-files`` ships it
    empty     the read-only copy with ``NUMBA_CACHE_DIR`` at a new, empty folder: a machine that never ran
              this ``core`` (a new node, a container or an executor whose cache folder starts empty, an
              upgrade of the package), whose first process compiles everything the fits call
    warmed    the same, with ``NUMBA_CACHE_DIR`` at a new folder that ``python -m core.warm_up`` filled first,
              from a read-only copy of ``core`` in another place: a container whose image was built so

Each mode runs twice: the first process of a mode may compile (its cache is new), the second shows
what every later process, and every Spark executor on the machine, pays.  The read-only copy and the
zip are made anew, in a new folder, for each process: Spark unpacks ``--py-files`` under a new
``spark-<uuid>`` folder for every application.  ``NUMBA_CACHE_DIR`` is left unset but in ``empty`` and
``warmed`` (a new folder each, the same for both of the mode's processes), so the package's own choice
of cache directory is what is measured.  ``warmed`` prints the warm-up's own seconds below the table.

    python -m bench.bench_cold_start [--modes tree,readonly,zip,empty,warmed]
"""

import argparse
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from bench.common import DATA_DIR, print_table

ROOT = Path(__file__).resolve().parents[1]


def _child():
    """Two rounds of fits of every method; print each round's wall seconds as JSON."""
    start = time.perf_counter()
    from bench.common import load_ripley
    from core.ebsvm import fit_ebsvm
    from core.engine import LocalEngine
    from core.kernels import KernelSpec
    from core.l0svm import fit_l0svm
    from core.slant import fit_slant
    from core.spsvm import fit_spsvm
    from core.svc import fit_budget_svm, fit_csvc

    imported = time.perf_counter() - start
    X, y, _, _ = load_ripley()
    kernel = KernelSpec("rbf", gamma=4.0)

    def fits():
        engine = LocalEngine(X, y, n_partitions=2)
        reference = fit_csvc(engine, C=1.0, kernel=kernel)
        fit_budget_svm(LocalEngine(X, y, n_partitions=2), budget=20, C=0.5, norm="l2", kernel=kernel)
        fit_slant(LocalEngine(X, y, n_partitions=2), reference, max_support=10)
        fit_ebsvm(LocalEngine(X, y, n_partitions=2), budget=10, lam=1e-2, kernel=kernel)
        fit_spsvm(LocalEngine(X, y, n_partitions=2), max_basis=10, lam=1e-2, kernel=kernel)
        fit_l0svm(LocalEngine(X, y, n_partitions=2), C_xi=1.0, C_alpha=0.2, kernel=kernel)

    times = []
    for _ in range(2):
        start = time.perf_counter()
        fits()
        times.append(time.perf_counter() - start)
    import core

    print(json.dumps({"import": imported, "first": times[0], "second": times[1], "core": core.__file__}))


def _readonly_copy(folder):
    target = folder / "core"
    shutil.copytree(ROOT / "core", target, ignore=shutil.ignore_patterns("__pycache__"))
    for package in [target] + [path for path in target.rglob("*") if path.is_dir()]:
        (package / "__pycache__").touch()  # a file where the cache folder would go: read-only even for root
    for path in sorted(target.rglob("*"), reverse=True) + [target]:
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    return str(folder)


def _zipped(folder):
    archive = folder / "core.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted((ROOT / "core").rglob("*.py")):
            zf.write(path, path.relative_to(ROOT))
    return str(archive)


def _run(path_entry, cache_dir=None, code="from bench.bench_cold_start import _child; _child()"):
    env = dict(os.environ, BSVM_DATA_DIR=str(DATA_DIR))  # core's copy elsewhere finds no ../shared/data
    env.pop("NUMBA_CACHE_DIR", None)
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = str(cache_dir)
    # bench/ from this checkout, core/ from path_entry (first on the path)
    env["PYTHONPATH"] = os.pathsep.join([path_entry, str(ROOT)])
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=tempfile.gettempdir(), capture_output=True,
                          text=True)
    if done.returncode:
        return {"error": done.stderr.strip().splitlines()[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _warm_up(folder, cache_dir):
    """Seconds of ``python -m core.warm_up`` into ``cache_dir``, from a read-only copy of ``core`` in ``folder``."""
    folder.mkdir()
    code = ("import json, time; from core.warm_up import warm_up; start = time.perf_counter(); warm_up(); "
            "print(json.dumps({'seconds': time.perf_counter() - start}))")
    return _run(_readonly_copy(folder), cache_dir, code)


MODES = {"tree": lambda place: str(ROOT), "readonly": _readonly_copy, "zip": _zipped, "empty": _readonly_copy,
         "warmed": _readonly_copy}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated, of " + ", ".join(MODES))
    args = parser.parse_args()
    modes = [mode for mode in args.modes.split(",") if mode]
    if set(modes) - set(MODES):
        parser.error(f"unknown modes {sorted(set(modes) - set(MODES))}; known: {list(MODES)}")
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores\n")
    rows, notes = [], []
    with tempfile.TemporaryDirectory() as folder:
        for mode in modes:
            cache_dir = Path(folder, f"numba-cache-{mode}") if mode in ("empty", "warmed") else None
            if mode == "warmed":
                warmed = _warm_up(Path(folder, "image"), cache_dir)
                notes.append(f"warmed: python -m core.warm_up took {warmed['seconds']:.1f} s before its processes"
                             if "seconds" in warmed else f"warmed: the warm-up failed: {warmed['error']}")
            for process in (1, 2):
                place = Path(folder, f"{mode}-{process}")
                place.mkdir()
                result = _run(str(MODES[mode](place)), cache_dir)
                if "error" in result:
                    rows.append([mode, process, "-", "-", "-", "-", result["error"][:60]])
                    continue
                rows.append([mode, process, result["import"], result["first"], result["second"],
                             result["first"] - result["second"], str(Path(result["core"]).parent)[-28:]])
        for path in Path(folder).rglob("*"):  # let TemporaryDirectory remove the read-only copy
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
    print_table(["mode", "process", "import s", "first fits s", "second fits s", "first - second s", "core from"],
                rows)
    for note in notes:
        print(note)


if __name__ == "__main__":
    sys.exit(main())
