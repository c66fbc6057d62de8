"""Where numba keeps the machine code of ``core``'s functions when it cannot, or is told not to (``NUMBA_CACHE_DIR``),
keep it beside the sources.

numba caches a function in ``__pycache__`` beside its module when that folder is writable (a
checkout, ``pip install -e .``).  Otherwise (a read-only site-packages, ``core`` shipped in a zip with
``spark-submit --py-files``) it uses a user-wide folder keyed by the *path* of the module: a zip that
Spark unpacks under a new ``spark-<uuid>`` folder for every application, or a read-only copy in a
fresh place, then compiles everything again, in every Python worker of every executor (measured
11-14 s of the first fit, ``bench/bench_cold_start.py``).  The locator below keys the cache by the
module's *content* instead, so every process on a machine that runs the same ``core`` shares one
compilation, wherever the files are.

``NUMBA_CACHE_DIR``, when set, holds ``core``'s code in the same content-keyed layout wherever ``core``
lies (numba itself would key it by the sources' path): a cache that ``core.warm_up`` filled when an image
was built serves every install of the same ``core`` in it.

Cache folder: ``NUMBA_CACHE_DIR`` when set and writable, else numba's user cache folder when it is
writable, else ``<tempdir>/spark-bsvm-numba-<uid>`` (executors whose HOME is not writable).  A
``NUMBA_CACHE_DIR`` that this process cannot write (an image's folder, owned by the user who built it) is
a seed: the code it holds for a module is copied into the cache folder before numba looks there.
"""

import hashlib
import os
import shutil
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from numba.core import caching, config
from numba.misc.appdirs import AppDirs

from core.atomic_file import atomic_write


def _writable(folder):
    try:
        os.makedirs(folder, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
        return True
    except OSError:
        return False


def _cache_root():
    candidates = [config.CACHE_DIR, AppDirs(appname="numba", appauthor=False).user_cache_dir,
                  os.path.join(tempfile.gettempdir(), f"spark-bsvm-numba-{os.getuid()}")]
    return next((root for root in filter(None, candidates) if _writable(root)), None)


def _seed_root():
    """``NUMBA_CACHE_DIR`` when it is set, exists and this process cannot write it, else None."""
    folder = config.CACHE_DIR
    return folder if folder and os.path.isdir(folder) and not _writable(folder) else None


def _copy_seed(seed, target):
    """Copy the files of the folder ``seed`` that ``target`` lacks, each whole or not at all (a process beside
    this one may read ``target`` meanwhile)."""
    try:
        names = os.listdir(seed)
    except OSError:
        return
    os.makedirs(target, exist_ok=True)
    for name in names:
        if not os.path.exists(os.path.join(target, name)):
            with atomic_write(os.path.join(target, name)) as out, open(os.path.join(seed, name), "rb") as source:
                shutil.copyfileobj(source, out)


def describe():
    """Where numba keeps ``core``'s code in this process, in words."""
    root = _cache_root()
    probe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "config.py")
    if not config.CACHE_DIR and _zip_member(probe) is None and _writable_pycache(probe):
        return "beside the sources (__pycache__)"
    seed = _seed_root()
    return (f"{root}/spark-bsvm" if root else "nowhere (no writable folder)") + (
        f", seeded from {seed}/spark-bsvm" if seed else "")


def _zip_member(py_file):
    """(zip path, member path) when ``py_file`` lies inside a zip archive, else None."""
    parts = Path(py_file).parts
    for i, part in enumerate(parts):
        if part.endswith(".zip") and os.path.isfile(os.path.join(*parts[:i + 1])):
            return os.path.join(*parts[:i + 1]), PurePosixPath(*parts[i + 1:]).as_posix()
    return None


def _source_bytes(py_file):
    member = _zip_member(py_file)
    if member:
        with zipfile.ZipFile(member[0]) as archive:
            return archive.read(member[1])
    with open(py_file, "rb") as f:
        return f.read()


def _writable_pycache(py_file):
    return _writable(os.path.join(os.path.dirname(py_file), "__pycache__"))


class ContentAddressedLocator(caching._CacheLocator):
    """numba cache locator for ``core``'s modules outside a writable tree: keyed by module name and content."""

    def __init__(self, py_func, py_file, source, root):
        self._lineno = py_func.__code__.co_firstlineno
        digest = hashlib.sha256(source).hexdigest()
        self._stamp = digest
        self._path = os.path.join(root, "spark-bsvm", f"{py_func.__module__}-{digest[:20]}")

    def get_cache_path(self):
        return self._path

    def get_source_stamp(self):
        return self._stamp  # the content itself: a copy with a new mtime or path is the same module

    def get_disambiguator(self):
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file):
        module = getattr(py_func, "__module__", "") or ""
        if module != "core" and not module.startswith("core."):
            return None
        if _zip_member(py_file) is None and (not os.path.isfile(py_file)
                                             or (not config.CACHE_DIR and _writable_pycache(py_file))):
            return None  # a writable checkout without NUMBA_CACHE_DIR: numba's own in-tree cache
        root = _cache_root()
        if root is None:
            return None
        self = cls(py_func, py_file, _source_bytes(py_file), root)
        seed = _seed_root()
        try:
            if seed is not None:
                _copy_seed(os.path.join(seed, os.path.relpath(self._path, root)), self._path)
            self.ensure_cache_path()
        except OSError:
            return None
        return self


def install():
    """Put ``ContentAddressedLocator`` first in numba's list of cache locators (idempotent)."""
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl")
    if ContentAddressedLocator not in impl._locator_classes:
        impl._locator_classes.insert(0, ContentAddressedLocator)
