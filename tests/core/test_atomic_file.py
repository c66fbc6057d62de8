"""atomic_write: the old content or the new one, never a torn file or a stray temporary."""

import os

import pytest

from core.atomic_file import atomic_write


def test_the_new_content_replaces_the_old_and_no_temporary_is_left(tmp_path):
    path = tmp_path / "sub" / "file.txt"
    with atomic_write(str(path), "w", durable=True) as f:
        f.write("first")
    with atomic_write(str(path), "w") as f:
        f.write("second")
    assert path.read_text() == "second" and os.listdir(path.parent) == ["file.txt"]


def test_an_error_while_writing_keeps_the_old_content(tmp_path):
    path = tmp_path / "file.bin"
    path.write_bytes(b"old")
    with pytest.raises(RuntimeError, match="disk full"):
        with atomic_write(str(path)) as f:
            f.write(b"half of the n")
            raise RuntimeError("disk full")
    assert path.read_bytes() == b"old" and os.listdir(tmp_path) == ["file.bin"]


def test_before_replace_runs_after_the_write_and_before_the_rename(tmp_path):
    path = tmp_path / "CURRENT"
    path.write_text("1\n")
    seen = []

    def check():
        seen.append(path.read_text())
        [tmp] = [name for name in os.listdir(tmp_path) if name.endswith(".tmp")]
        seen.append((tmp_path / tmp).read_text())

    with atomic_write(str(path), "w", before_replace=check) as f:
        f.write("2\n")
    assert seen == ["1\n", "2\n"] and path.read_text() == "2\n"


def test_a_new_file_gets_the_umask_s_mode_and_a_replaced_one_keeps_its_own(tmp_path):
    old_mask = os.umask(0o027)
    try:
        with atomic_write(str(tmp_path / "new.npz")) as f:
            f.write(b"model")
    finally:
        os.umask(old_mask)
    assert (tmp_path / "new.npz").stat().st_mode & 0o777 == 0o640  # not mkstemp's owner-only 0o600
    shared = tmp_path / "shared.npz"
    shared.write_bytes(b"old")
    shared.chmod(0o664)
    with atomic_write(str(shared)) as f:
        f.write(b"new")
    assert shared.stat().st_mode & 0o777 == 0o664
