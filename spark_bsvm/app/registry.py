"""A model registry on a filesystem: numbered versions and an atomically replaced ``CURRENT`` pointer.

    <root>/CURRENT            the current version's number (one line)
    <root>/versions/<n>/      model/ (whatever ``publish``'s writer wrote) and record.json
    <root>/staging-<random>/  a version being written; removed by ``clean_staging``

Crash safety: a version is written completely in a staging directory and
then renamed into ``versions/`` (a rename is atomic on one filesystem), so
``versions/<n>`` is never half written; ``CURRENT`` is replaced by writing a
new file, syncing it and renaming it over the old one, so a reader sees the
old pointer or the new one, never a torn one.  A crash at any point leaves
the previous ``CURRENT`` and its version intact.  ``BSVM_REGISTRY_CRASH_AT``
(a name from ``CRASH_POINTS``) kills the process at that point, for tests.

The root must be a local or shared POSIX filesystem (NFS, a mounted
volume) that the driver and the executors see at the same path.
"""

import json
import os
import re
import shutil
import uuid

from core.atomic_file import atomic_write, fsync_folder

CRASH_POINTS = ("staged", "published", "pointer_written")
CRASH_EXIT = 137  # as if killed by SIGKILL
_VERSION = re.compile(r"^[0-9]+$")


def _crash_point(name):
    """Kill the process here when ``BSVM_REGISTRY_CRASH_AT`` names this point (fault-injection tests)."""
    if os.environ.get("BSVM_REGISTRY_CRASH_AT") == name:
        os._exit(CRASH_EXIT)


class ModelRegistry:
    """Numbered model versions under ``root`` with a ``CURRENT`` pointer (see the module doc)."""

    def __init__(self, root):
        self.root = os.path.abspath(root.removeprefix("file://"))
        self.versions_dir = os.path.join(self.root, "versions")
        os.makedirs(self.versions_dir, exist_ok=True)

    def versions(self):
        """The published version numbers, ascending."""
        return sorted(int(n) for n in os.listdir(self.versions_dir) if _VERSION.match(n))

    def model_path(self, version):
        """The model directory of ``version``."""
        return os.path.join(self.versions_dir, str(version), "model")

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

    def clean_staging(self):
        """Remove what crashed runs left: staging directories and unrenamed pointer files."""
        for name in os.listdir(self.root):
            path = os.path.join(self.root, name)
            if name.startswith("staging-"):
                shutil.rmtree(path, ignore_errors=True)
            elif name.startswith("CURRENT.") and name.endswith(".tmp"):
                os.unlink(path)
