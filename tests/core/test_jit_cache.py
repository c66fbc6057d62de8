"""The numba cache locator for read-only and zipped installs and NUMBA_CACHE_DIR: keyed by content, never by path;
a NUMBA_CACHE_DIR that the process cannot write seeds the folder it uses."""

import hashlib
import os
import zipfile
from types import SimpleNamespace

import numba

from core import jit_cache
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


def _folders(tmp_path):
    for name in ("ro", "rw"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "twice.py").write_text(SOURCE)
    (tmp_path / "ro" / "__pycache__").write_text("")  # a file: no cache folder can be made there, even by root
    return str(tmp_path / "ro" / "twice.py"), str(tmp_path / "rw" / "twice.py")


def test_a_folder_without_a_writable_pycache_uses_the_locator_and_a_writable_one_does_not(tmp_path, monkeypatch):
    monkeypatch.setattr(numba.core.config, "CACHE_DIR", "")
    monkeypatch.setattr(jit_cache, "_cache_root", lambda: str(tmp_path / "cache"))
    read_only, writable = _folders(tmp_path)
    located = ContentAddressedLocator.from_function(_function("core.twice"), read_only)
    assert located is not None and located.get_cache_path().startswith(str(tmp_path / "cache"))
    assert ContentAddressedLocator.from_function(_function("core.twice"), writable) is None


def test_with_numba_cache_dir_set_every_folder_keys_the_cache_by_content(tmp_path, monkeypatch):
    monkeypatch.setattr(numba.core.config, "CACHE_DIR", str(tmp_path / "cache"))
    paths = [ContentAddressedLocator.from_function(_function("core.twice"), path).get_cache_path()
             for path in _folders(tmp_path)]
    assert paths[0] == paths[1] and paths[0].startswith(str(tmp_path / "cache"))


def test_a_numba_cache_dir_it_cannot_write_seeds_the_folder_it_uses(tmp_path, monkeypatch):
    seed, user = tmp_path / "image-cache", tmp_path / "user-cache"
    module = seed / "spark-bsvm" / f"core.twice-{hashlib.sha256(SOURCE.encode()).hexdigest()[:20]}"
    module.mkdir(parents=True)
    (module / "twice.double-1.py311.nbi").write_bytes(b"index")
    (module / "twice.double-1.py311.1.nbc").write_bytes(b"code")
    monkeypatch.setattr(numba.core.config, "CACHE_DIR", str(seed))
    monkeypatch.setattr(jit_cache, "AppDirs", lambda **_: SimpleNamespace(user_cache_dir=str(user)))
    writable = jit_cache._writable
    monkeypatch.setattr(jit_cache, "_writable", lambda folder: not folder.startswith(str(seed)) and writable(folder))
    located = ContentAddressedLocator.from_function(_function("core.twice"), _zipped(str(tmp_path / "app")))
    assert located.get_cache_path() == str(user / "spark-bsvm" / module.name)
    assert sorted(os.listdir(located.get_cache_path())) == ["twice.double-1.py311.1.nbc", "twice.double-1.py311.nbi"]
    assert (user / "spark-bsvm" / module.name / "twice.double-1.py311.nbi").read_bytes() == b"index"
    assert jit_cache.describe() == f"{user}/spark-bsvm, seeded from {seed}/spark-bsvm"


def test_functions_outside_core_are_left_to_numba(tmp_path):
    assert ContentAddressedLocator.from_function(_function("mypackage.twice"), _zipped(str(tmp_path / "a"))) is None
