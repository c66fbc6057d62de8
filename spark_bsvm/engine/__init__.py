"""The Spark execution engine: one barrier stage per fit, rounds served over sockets.

``training`` (one fit, coordinated by the driver or on the executors) <- ``coordinator`` (the driver
side, ``SparkEngine``) and ``hosted`` (a fit coordinated by one of the stage's tasks) <- ``rounds``
(the coordinator's sockets) and ``task`` (what each barrier task runs) <- ``stage`` (the checked
training data and its barrier stage; ``shared_results``: the checks, rows and models that the fits of
one ``fitMultiple`` compute once), ``blocks`` (the data's checks, as a Spark job or in each task, and
DataFrame rows to numpy blocks), ``wire`` (the authenticated, pickle-free frame format) and ``session``
(what classic and Spark Connect sessions offer alike).
"""

from spark_bsvm.engine.coordinator import SparkEngine

__all__ = ["SparkEngine"]
