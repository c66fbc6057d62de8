"""``python -m core.warm_up`` compiles ahead: a later process, with ``core`` in another place and the same
``NUMBA_CACHE_DIR``, compiles nothing for any method's fits and predictions."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# every compilation in the process, by function name; a probe defined here, which no cache can hold, shows
# that the listener hears compilations
CHECK = """
import json
import numba
from numba.core import event

compiled = []


class Compilations(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__qualname__)

    def on_end(self, ev):
        pass


event.register("numba:compile", Compilations())
from core.warm_up import warm_up

warm_up()
numba.njit(lambda x: x + 1)(1)
print(json.dumps(compiled))
"""


def _python(arguments, place, cache):
    """Run Python with ``core`` copied (without its caches) into the folder ``place``; its standard output."""
    shutil.copytree(ROOT / "core", place / "core", ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(place))
    done = subprocess.run([sys.executable, *arguments], env=env, cwd=place, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_after_the_warm_up_a_process_elsewhere_compiles_nothing_but_new_code(tmp_path):
    cache = tmp_path / "numba-cache"
    built = _python(["-m", "core.warm_up"], tmp_path / "image", cache)
    assert f"numba's cache for core: {cache}/spark-bsvm" in built
    compiled = json.loads(_python(["-c", CHECK], tmp_path / "executor", cache).strip().splitlines()[-1])
    assert compiled == ["<lambda>"]
