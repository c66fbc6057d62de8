"""The architecture the README's "What is here" table promises, checked on the sources.

- no two modules import each other, directly or around a longer loop (imports inside functions count);
- ``core`` never imports pyspark (it runs without a JVM);
- no test imports a bench script, and the library imports neither tests nor benches;
- every partition function is in the one table the Spark engine looks names up in;
- ``core``'s njit functions copy arrays into slices by loops (``core.config``).
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("core", "spark_bsvm", "jobs", "bench", "tests")


def _modules():
    """{dotted module name: path} of every Python file of the project."""
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(path, name, modules):
    """The project modules that the module ``name`` at ``path`` imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, one level up per extra dot
                parts = package.split(".")
                above = ".".join(parts[:len(parts) - node.level + 1])
                base = f"{above}.{base}" if base else above
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        out.update(t for t in targets if t in modules or t.split(".")[0] == "pyspark")
    out.discard(name)
    return out


def _graph():
    modules = _modules()
    return {name: _imports(path, name, modules) for name, path in modules.items()}


def _cycles(graph):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return components


def test_no_import_cycles():
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_core_never_imports_pyspark():
    offenders = {name: sorted(i for i in imports if i.startswith("pyspark"))
                 for name, imports in _graph().items() if name.split(".")[0] == "core"}
    assert {name: found for name, found in offenders.items() if found} == {}


def test_tests_do_not_import_benches_and_the_library_imports_neither():
    graph = _graph()
    wrong = sorted((name, i) for name, imports in graph.items() for i in imports
                   if (name.startswith("tests") and i.startswith("bench"))
                   or (name.split(".")[0] in ("core", "spark_bsvm", "jobs") and i.split(".")[0] in ("tests", "bench")))
    assert wrong == []


def test_every_partition_function_is_in_the_table():
    import inspect

    import core.partition as partition
    from core.partition import PARTITION_FUNCTIONS, dual, ebsvm, l0svm, slant, spsvm

    for module in (dual, ebsvm, l0svm, slant, spsvm):
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            parameters = list(inspect.signature(fn).parameters)
            public = fn.__module__ == module.__name__ and not name.startswith("_")
            if public and parameters == ["data", "state", "request"]:
                assert PARTITION_FUNCTIONS.get(name) is fn, f"{module.__name__}.{name} is not in PARTITION_FUNCTIONS"
    assert partition.function_name(dual.dual_round) == "dual_round"


LAYERS = ["jobs", "spark_bsvm.app", "spark_bsvm.ml", "spark_bsvm.engine", "core"]  # each imports only rightwards


def _layer(name):
    return next((k for k, layer in enumerate(LAYERS) if name == layer or name.startswith(layer + ".")), None)


def test_imports_flow_one_way_from_the_jobs_to_core():
    upward = sorted((name, i) for name, imports in _graph().items() for i in imports
                    if _layer(name) is not None and _layer(i) is not None and _layer(i) < _layer(name))
    assert upward == []


def _slice_assignments(source):
    """(function, line) of each slice assignment of anything but a number inside the njit functions of ``source``
    (``core.config``'s rule: numba compiles such an assignment's shape-mismatch message on a machine's first fit).
    Slices only: a whole row assigned at an integer index (``twice[0] = X[lo]``) reads like a scalar's."""
    found = []
    for fn in ast.walk(ast.parse(source)):
        jitted = isinstance(fn, ast.FunctionDef) and any(
            "njit" in ast.unparse(decorator.func if isinstance(decorator, ast.Call) else decorator)
            for decorator in fn.decorator_list)
        if not jitted:
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AugAssign):
                targets = [node.target]
            else:
                continue
            if isinstance(node.value, ast.Constant):
                continue  # a number broadcast into the slice: no shapes to compare
            for target in targets:
                if isinstance(target, ast.Subscript):
                    parts = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
                    if any(isinstance(part, ast.Slice) for part in parts):
                        found.append((fn.name, node.lineno))
    return found


def test_njit_functions_copy_into_slices_by_loops():
    offenders = {path.relative_to(ROOT).as_posix(): found for path in (ROOT / "core").rglob("*.py")
                 if (found := _slice_assignments(path.read_text()))}
    assert offenders == {}


def test_the_slice_assignment_finder_finds_one():
    source = ("@numba.njit(**NJIT)\ndef f(K, block):\n    K[0, :3] = 0.0\n    K[1, :3] = block[0]\n"
              "    K[2:4] += block\n\ndef g(K, block):\n    K[:3] = block\n")
    assert _slice_assignments(source) == [("f", 4), ("f", 5)]
