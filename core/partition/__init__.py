"""What one partition computes per round: pure functions on row blocks.

Every function is registered by name in ``PARTITION_FUNCTIONS`` with the
signature ``fn(data, state, request) -> (state, answer)`` (see
``core.engine``).  One module per family of methods.
"""

PARTITION_FUNCTIONS = {}


def partition_function(fn):
    """Register ``fn`` under its own name so that engines can call it by name."""
    if fn.__name__ in PARTITION_FUNCTIONS:
        raise ValueError(f"partition function {fn.__name__!r} is registered twice")
    PARTITION_FUNCTIONS[fn.__name__] = fn
    return fn


from core.partition import dual  # noqa: E402,F401  (registers the dual-decomposition functions)
from core.partition import slant  # noqa: E402,F401  (registers the slant-loss sparsifier's functions)
from core.partition import l0svm  # noqa: E402,F401  (registers the L0-norm SVM functions)
from core.partition import ebsvm  # noqa: E402,F401  (registers the elastic budget SVM's batch server)
from core.partition import spsvm  # noqa: E402,F401  (registers the SpSVM-2 functions)
