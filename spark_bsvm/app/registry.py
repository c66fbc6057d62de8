"""A model registry on a filesystem: numbered versions and an atomically replaced ``CURRENT`` pointer.

    <root>/CURRENT            the current version's number (one line)
    <root>/versions/<n>/      model/ (whatever ``publish``'s writer wrote) and record.json
    <root>/staging-<random>/  a version being written; removed by ``clean_staging``
    <root>/LOCK               held (``flock``) by the one run that may change the registry; names its holder

Crash safety: a version is written completely in a staging directory and
then renamed into ``versions/`` (a rename is atomic on one filesystem), so
``versions/<n>`` is never half written; ``CURRENT`` is replaced by writing a
new file, syncing it and renaming it over the old one, so a reader sees the
old pointer or the new one, never a torn one.  A crash at any point leaves
the previous ``CURRENT`` and its version intact.  ``BSVM_REGISTRY_CRASH_AT``
(a name from ``CRASH_POINTS``) kills the process at that point, for tests.

One writer at a time: ``lock`` takes an exclusive ``flock`` on ``LOCK``.  The kernel releases it
when its process ends, however it ends (a SIGKILL, an out-of-memory kill), so a killed run never
leaves a stale lock to clear by hand; the holder's pid, host and start time in the file are only
there to name it in the message of a run that finds the registry locked.  On NFS, Linux turns
``flock`` into NFS byte-range locks, which other clients see, and the server frees them when the
holding client goes away.  The file is never removed: a run waiting on the old file would not
exclude a run locking a new one.

The root must be a local or shared POSIX filesystem (NFS, a mounted
volume) that the driver and the executors see at the same path (a URI of
another scheme, ``hdfs://`` or ``s3a://``, is refused); Spark is
given its paths as ``file://`` URIs (``local_uri``), whatever its default
filesystem.
"""

import fcntl
import json
import logging
import os
import re
import shutil
import socket
import time
import uuid
from contextlib import contextmanager
from datetime import datetime, timezone

from core.atomic_file import atomic_write, fsync_folder

CRASH_POINTS = ("staged", "published", "pointer_written")
CRASH_EXIT = 137  # as if killed by SIGKILL
_VERSION = re.compile(r"^[0-9]+$")
_URI_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")  # RFC 3986's scheme, as in hdfs://, s3a://
LOCK_POLL_SECONDS = 1.0

log = logging.getLogger("spark_bsvm")


class RegistryLocked(Exception):
    """Another run holds the registry's lock; the message names the registry and the holder."""


def _crash_point(name):
    """Kill the process here when ``BSVM_REGISTRY_CRASH_AT`` names this point (fault-injection tests)."""
    if os.environ.get("BSVM_REGISTRY_CRASH_AT") == name:
        os._exit(CRASH_EXIT)


class ModelRegistry:
    """Numbered model versions under ``root`` with a ``CURRENT`` pointer (see the module doc)."""

    def __init__(self, root):
        scheme = _URI_SCHEME.match(root)
        if scheme and scheme.group(1).lower() != "file":
            raise ValueError(f"registry {root} is not on a local or shared POSIX filesystem, which a registry needs "
                             f"(atomic renames, an flock), and {scheme.group(1)}:// storage does not offer: mount it "
                             "(NFS, a volume) and give its local path, or a file:// URI")
        self.root = os.path.abspath(root.removeprefix("file://"))
        self.versions_dir = os.path.join(self.root, "versions")
        try:
            os.makedirs(self.versions_dir, exist_ok=True)
        except OSError as exc:  # a file at or above root, a folder this user may not write in
            raise ValueError(f"registry {root} cannot be used: {exc.strerror} ({exc.filename}); give [retrain] "
                             "registry a folder path that this user can write") from None

    def versions(self):
        """The published version numbers, ascending."""
        return sorted(int(n) for n in os.listdir(self.versions_dir) if _VERSION.match(n))

    def model_path(self, version):
        """The model directory of ``version``."""
        return os.path.join(self.versions_dir, str(version), "model")

    def model_uri(self, version):
        """``model_path(version)`` as Spark must be given it (``local_uri``)."""
        return local_uri(self.model_path(version))

    def record(self, version):
        """The JSON record published with ``version``."""
        with open(os.path.join(self.versions_dir, str(version), "record.json")) as f:
            return json.load(f)

    def current(self):
        """The current version number, or None before the first promotion."""
        try:
            with open(os.path.join(self.root, "CURRENT")) as f:
                text = f.read().strip()
        except FileNotFoundError:
            return None
        if not _VERSION.match(text) or not os.path.isdir(os.path.join(self.versions_dir, text)):
            raise ValueError(f"{self.root}/CURRENT holds {text!r}, which is not a published version; "
                             f"write one of {self.versions()} into it")
        return int(text)

    def find(self, key, value):
        """The newest version whose record has ``record[key] == value``, or None."""
        for version in reversed(self.versions()):
            if self.record(version).get(key) == value:
                return version
        return None

    def publish(self, write_model, record):
        """A new version number holding ``write_model(model_dir)``'s files and ``record`` (JSON).

        Nothing is visible under ``versions/`` until the whole version is written.
        """
        staging = os.path.join(self.root, f"staging-{uuid.uuid4().hex}")
        os.makedirs(staging)
        try:
            write_model(os.path.join(staging, "model"))
            with open(os.path.join(staging, "record.json"), "w") as f:
                json.dump(record, f, indent=2, sort_keys=True)
                f.flush()
                os.fsync(f.fileno())
            _crash_point("staged")
            version = max(self.versions(), default=0) + 1
            while True:
                try:  # a rename onto an existing (non-empty) version fails: another run took it, take the next
                    os.rename(staging, os.path.join(self.versions_dir, str(version)))
                    break
                except OSError:
                    if not os.path.isdir(os.path.join(self.versions_dir, str(version))):
                        raise
                    version += 1
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        fsync_folder(self.versions_dir)
        _crash_point("published")
        return version

    def promote(self, version):
        """Make ``version`` the current one, atomically."""
        if version not in self.versions():
            raise ValueError(f"version {version} is not published in {self.versions_dir}")
        with atomic_write(os.path.join(self.root, "CURRENT"), "w", durable=True,
                          before_replace=lambda: _crash_point("pointer_written")) as f:
            f.write(f"{version}\n")

    @contextmanager
    def lock(self, wait_seconds=0.0):
        """Hold the registry's lock for the block; ``RegistryLocked`` if another run holds it for longer
        than ``wait_seconds`` (0: do not wait; ``math.inf``: wait until it is free).  Waiting logs one
        warning naming the holder (none where the run's first look comes after its deadline: a stalled process)."""
        path = os.path.join(self.root, "LOCK")
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            deadline = time.monotonic() + wait_seconds
            waiting = False
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    holder = _lock_holder(fd)
                    if time.monotonic() >= deadline:
                        # its time is up: waited, also where this is its first look (a process stalled past it)
                        waited = f" after waiting {wait_seconds:g} s" if wait_seconds > 0 else ""
                        raise RegistryLocked(f"registry {self.root} is locked by another run ({holder}){waited}")
                    if not waiting:
                        log.warning("registry %s is locked by another run (%s); waiting for it", self.root, holder)
                        waiting = True
                    time.sleep(max(0.0, min(LOCK_POLL_SECONDS, deadline - time.monotonic())))
            me = {"pid": os.getpid(), "host": socket.gethostname(),
                  "since": datetime.now(timezone.utc).isoformat(timespec="seconds")}
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(me) + "\n").encode(), 0)
            try:
                yield
            finally:
                os.ftruncate(fd, 0)  # no holder named once released (the lock goes with the descriptor)
        finally:
            os.close(fd)

    def clean_staging(self):
        """Remove what crashed runs left: staging directories and unrenamed pointer files (call it holding
        ``lock``: another run's staging directory looks the same)."""
        for name in os.listdir(self.root):
            path = os.path.join(self.root, name)
            if name.startswith("staging-"):
                shutil.rmtree(path, ignore_errors=True)
            elif name.startswith("CURRENT.") and name.endswith(".tmp"):
                os.unlink(path)


def local_uri(path):
    """A path of the registry's filesystem as a ``file://`` URI: Spark resolves a plain path on its default
    filesystem, which on a cluster is HDFS or an object store, not the one the registry renames in."""
    return "file://" + os.path.abspath(path)


def _lock_holder(fd):
    """Who holds the lock on ``fd``, as its holder wrote it in the file ("pid 12 on host h since <UTC time>")."""
    try:
        holder = json.loads(os.pread(fd, 4096, 0))
        return f"pid {holder['pid']} on host {holder['host']} since {holder['since']}"
    except (ValueError, KeyError, TypeError):  # between its lock and its write: not named yet
        return "a run that has not named itself yet"
