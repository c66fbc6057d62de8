"""What one partition computes per round: pure functions on row blocks.

Every partition function has the signature ``fn(data, state, request) ->
(state, answer)`` (``data`` a ``core.partition.data.PartitionData``, see
``core.engine``); solvers pass the function itself to ``Engine.run``.  One
module per family of methods.  ``PARTITION_FUNCTIONS`` is the one table of
them: an engine that runs partitions in other processes sends a function's
name and looks it up here, so no code travels.
"""

from core.partition import dual, ebsvm, l0svm, predictions, slant, spsvm, validation

PARTITION_FUNCTIONS = {fn.__name__: fn for fn in (
    dual.dual_round,
    slant.slant_round,
    ebsvm.ebsvm_describe, ebsvm.ebsvm_batch,
    l0svm.sample_rows, l0svm.l0_support, l0svm.l0_remap,
    spsvm.spsvm_start, spsvm.spsvm_add_basis, spsvm.spsvm_restore, spsvm.spsvm_score, spsvm.spsvm_line,
    spsvm.spsvm_gradient,
    predictions.count_positive,
    validation.validate_expansion,
)}


def function_name(function):
    """The name under which ``function`` is in ``PARTITION_FUNCTIONS``; a ValueError if it is not there."""
    if PARTITION_FUNCTIONS.get(getattr(function, "__name__", None)) is not function:
        raise ValueError(f"{function!r} is not a partition function of core.partition.PARTITION_FUNCTIONS")
    return function.__name__
