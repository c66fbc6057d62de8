"""Writing a file so that a reader sees the old content or the new one, never a torn file."""

import os
import tempfile
from contextlib import contextmanager


@contextmanager
def atomic_write(path, mode="wb", durable=False, before_replace=None):
    """A file object on a new file beside ``path`` that replaces ``path`` in one rename when the block ends.

    An exception in the block leaves ``path`` as it was and removes the new file; a killed process
    can leave ``<name>.<random>.tmp`` beside it, never a torn ``path``.  ``durable``: the file is
    synced before the rename and its folder after it, so the new content survives a power loss.
    ``before_replace()`` runs between the write and the rename (crash-point tests).  A missing
    folder is created.  The file gets the permissions of the one it replaces, or a new file's (0o666
    less the process's umask), not the owner-only mode of a temporary file.
    """
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, mode) as f:
            os.chmod(tmp, _replaced_mode(path))
            yield f
            if durable:
                f.flush()
                os.fsync(f.fileno())
        if before_replace is not None:
            before_replace()
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    if durable:
        fsync_folder(directory)


def fsync_folder(path):
    """Sync a folder's entries (a rename into it) to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _replaced_mode(path):
    """The permission bits ``path`` has, or those ``open`` would give a new file there."""
    try:
        return os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        return 0o666 & ~_umask()


def _umask():
    """The process's umask, read without changing it where Linux reports it (``os.umask`` can only be read by
    setting it, which would race with other threads creating files)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
