"""The Spark execution engine: one barrier stage per fit, rounds served over a socket.

``coordinator`` (the driver side, ``SparkEngine``) <- ``task`` (what each
barrier task runs) <- ``blocks`` (DataFrame rows to numpy blocks) and
``wire`` (the authenticated, pickle-free frame format); ``slots`` counts
the task slots a barrier stage needs.
"""

from spark_bsvm.engine.coordinator import SparkEngine

__all__ = ["SparkEngine"]
