"""The numba cache locator for read-only and zipped installs: keyed by content, never by path."""

import os
import zipfile

import numba

from core.jit_cache import ContentAddressedLocator

SOURCE = "def double(x):\n    return 2 * x\n"


def _function(module):
    namespace = {}
    exec(compile(SOURCE, "<test>", "exec"), namespace)
    function = namespace["double"]
    function.__module__ = module
    return function


def _zipped(folder, source=SOURCE):
    os.makedirs(folder)
    archive = os.path.join(folder, "core.zip")
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("core/twice.py", source)
    return os.path.join(archive, "core", "twice.py")


def test_a_zip_moved_elsewhere_finds_the_same_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(numba.core.config, "CACHE_DIR", str(tmp_path / "cache"))
    first = ContentAddressedLocator.from_function(_function("core.twice"), _zipped(str(tmp_path / "app-1")))
    second = ContentAddressedLocator.from_function(_function("core.twice"), _zipped(str(tmp_path / "app-2")))
    assert first.get_cache_path() == second.get_cache_path()
    assert first.get_cache_path().startswith(str(tmp_path / "cache"))
    assert first.get_source_stamp() == second.get_source_stamp()
    changed = ContentAddressedLocator.from_function(
        _function("core.twice"), _zipped(str(tmp_path / "app-3"), SOURCE + "# changed\n"))
    assert changed.get_cache_path() != first.get_cache_path()


def test_a_folder_without_a_writable_pycache_uses_the_locator_and_a_writable_one_does_not(tmp_path, monkeypatch):
    monkeypatch.setattr(numba.core.config, "CACHE_DIR", str(tmp_path / "cache"))
    for name in ("ro", "rw"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "twice.py").write_text(SOURCE)
    (tmp_path / "ro" / "__pycache__").write_text("")  # a file: no cache folder can be made there, even by root
    located = ContentAddressedLocator.from_function(_function("core.twice"), str(tmp_path / "ro" / "twice.py"))
    assert located is not None and located.get_cache_path().startswith(str(tmp_path / "cache"))
    assert ContentAddressedLocator.from_function(_function("core.twice"), str(tmp_path / "rw" / "twice.py")) is None


def test_functions_outside_core_are_left_to_numba(tmp_path):
    assert ContentAddressedLocator.from_function(_function("mypackage.twice"), _zipped(str(tmp_path / "a"))) is None
