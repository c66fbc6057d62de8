"""The model registry: numbered versions, atomic promotion, a process killed at every step."""

import contextlib
import json
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from spark_bsvm.app import registry as registry_module
from spark_bsvm.app.registry import CRASH_EXIT, CRASH_POINTS, ModelRegistry, RegistryLocked
from tests.conftest import logged

ROOT = Path(__file__).resolve().parents[3]


def fake_model(text):
    """A model writer for the registry: one file holding ``text``."""
    def write(path):
        os.makedirs(path)
        Path(path, "weights.txt").write_text(text)
    return write


def current_text(registry):
    return Path(registry.model_path(registry.current()), "weights.txt").read_text()


def test_versions_are_numbered_and_promotion_moves_current(tmp_path):
    registry = ModelRegistry(str(tmp_path / "reg"))
    assert registry.current() is None and registry.versions() == []
    v1 = registry.publish(fake_model("one"), {"fingerprint": "a"})
    assert registry.current() is None  # published is not promoted
    registry.promote(v1)
    v2 = registry.publish(fake_model("two"), {"fingerprint": "b"})
    assert (v1, v2, registry.versions(), registry.current()) == (1, 2, [1, 2], 1)
    assert current_text(registry) == "one"
    registry.promote(v2)
    assert current_text(registry) == "two" and registry.record(2) == {"fingerprint": "b"}
    assert registry.find("fingerprint", "a") == 1 and registry.find("fingerprint", "zz") is None


@pytest.mark.parametrize("root", ["runs", "runs/registry"])
def test_a_registry_at_or_under_a_file_is_a_one_line_error(tmp_path, root):
    """jobs/retrain.py ended in a traceback of NotADirectoryError (exit 1) where it is a config mistake (exit 2)."""
    (tmp_path / "runs").write_text("")
    with pytest.raises(ValueError, match=rf"registry {tmp_path}/{root} cannot be used: Not a directory \(.*runs"
                                         r".*\); give \[retrain\] registry a folder path that this user can write"):
        ModelRegistry(str(tmp_path / root))


def test_a_failing_model_writer_publishes_nothing(tmp_path):
    registry = ModelRegistry(str(tmp_path))

    def broken(path):
        os.makedirs(path)
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        registry.publish(broken, {})
    assert registry.versions() == [] and not [n for n in os.listdir(tmp_path) if n.startswith("staging-")]


def test_promoting_an_unknown_version_and_a_corrupt_pointer_are_refused(tmp_path):
    registry = ModelRegistry(str(tmp_path))
    with pytest.raises(ValueError, match=r"version 4 is not published"):
        registry.promote(4)
    (tmp_path / "CURRENT").write_text("7\n")
    with pytest.raises(ValueError, match=r"CURRENT holds '7', which is not a published version"):
        registry.current()


# loads registry.py alone (not the spark_bsvm package, which imports pyspark) to keep the processes quick
SCRIPT = """
import importlib.util, os, sys
from pathlib import Path
spec = importlib.util.spec_from_file_location("registry", "spark_bsvm/app/registry.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
registry = module.ModelRegistry(sys.argv[1])
def write(path):
    os.makedirs(path); Path(path, "weights.txt").write_text("new")
registry.promote(registry.publish(write, {"fingerprint": "new"}))
"""


@pytest.mark.parametrize("point", CRASH_POINTS)
def test_a_process_killed_at_any_step_leaves_the_previous_current_loadable(tmp_path, point):
    registry = ModelRegistry(str(tmp_path))
    registry.promote(registry.publish(fake_model("old"), {"fingerprint": "old"}))
    env = dict(os.environ, BSVM_REGISTRY_CRASH_AT=point)
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], env=env, cwd=ROOT)
    assert done.returncode == CRASH_EXIT
    assert registry.current() == 1 and current_text(registry) == "old"
    assert registry.versions() == ([1] if point == "staged" else [1, 2])  # never a half-written version
    registry.clean_staging()
    assert sorted(os.listdir(tmp_path)) == ["CURRENT", "versions"]
    # the next run (no crash) completes normally
    env.pop("BSVM_REGISTRY_CRASH_AT")
    subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], env=env, cwd=ROOT, check=True)
    assert current_text(registry) == "new" and json.loads(
        Path(tmp_path, "versions", str(registry.current()), "record.json").read_text()) == {"fingerprint": "new"}


# another process holding the registry's lock until it is killed or its standard input ends
HOLDER = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("registry", "spark_bsvm/app/registry.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
with module.ModelRegistry(sys.argv[1]).lock():
    print("locked", flush=True)
    sys.stdin.read()
"""


@contextlib.contextmanager
def held_lock(root):
    """A process holding the lock of the registry at ``root`` (given once it holds it), until it is killed or its
    ``stdin`` is closed; at the end it is killed with SIGKILL (as the OOM killer would: no cleanup runs) where it
    still runs, waited for, and its pipes are closed."""
    with subprocess.Popen([sys.executable, "-c", HOLDER, str(root)], cwd=ROOT, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as holder:
        try:
            assert holder.stdout.readline() == "locked\n"
            yield holder
        finally:
            holder.kill()


def test_the_lock_names_its_holder_and_a_killed_holders_lock_is_free_at_once(tmp_path):
    registry = ModelRegistry(str(tmp_path))
    with held_lock(tmp_path) as holder:  # killed at the end
        with pytest.raises(RegistryLocked, match=rf"^registry {tmp_path} is locked by another run \(pid "
                                                  rf"{holder.pid} on host .+ since 20"):
            with registry.lock():
                pass
    with registry.lock():  # the kernel freed the dead holder's lock; its leftover line is replaced
        assert json.loads(Path(tmp_path, "LOCK").read_text())["pid"] == os.getpid()
    assert Path(tmp_path, "LOCK").read_text() == ""  # released: nobody named


def test_a_waiting_run_takes_the_lock_when_the_holder_ends(tmp_path, caplog):
    registry = ModelRegistry(str(tmp_path))

    def end_the_holder_once_waited_for(holder, found_locked):  # however late this run comes to find the lock held
        if found_locked.wait(60):
            holder.stdin.close()

    with held_lock(tmp_path) as holder, caplog.at_level(logging.WARNING, logger="spark_bsvm"), \
            logged("waiting for it", "spark_bsvm") as found:
        threading.Thread(target=end_the_holder_once_waited_for, args=(holder, found), daemon=True).start()
        with registry.lock(wait_seconds=60.0):
            assert holder.wait(timeout=30) == 0  # it ran to its end and released the lock
    assert f"is locked by another run (pid {holder.pid} on host" in caplog.text
    assert caplog.text.count("waiting for it") == 1


@pytest.mark.parametrize("stalled", [False, True])
def test_a_run_that_waited_long_enough_gives_up(tmp_path, monkeypatch, caplog, stalled):
    """Also where the run stalls past its deadline before its first look at the lock (a loaded machine): it waited
    its time all the same, which the message said only of a run that had slept."""
    if stalled:
        name_holder = registry_module._lock_holder

        def stalled_holder(fd):
            time.sleep(1.5)
            return name_holder(fd)

        monkeypatch.setattr(registry_module, "_lock_holder", stalled_holder)
    with held_lock(tmp_path), caplog.at_level(logging.WARNING, logger="spark_bsvm"), \
            pytest.raises(RegistryLocked, match=r"locked by another run .* after waiting 1 s$"):
        with ModelRegistry(str(tmp_path)).lock(wait_seconds=1.0):  # time for an unstalled run's first look
            pass
    assert ("waiting for it" in caplog.text) is not stalled  # the stalled run's first look came after its deadline
