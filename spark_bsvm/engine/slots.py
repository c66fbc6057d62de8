"""Task slots: a barrier stage needs one free slot per partition, all at once."""


def executor_slots(spark):
    """How many tasks can run at once: a barrier stage needs one slot per partition."""
    return spark.sparkContext.defaultParallelism


def check_barrier_possible(spark, num_partitions):
    """Refuse settings under which a barrier stage cannot start, with the fix."""
    conf = spark.sparkContext.getConf()
    if conf.get("spark.dynamicAllocation.enabled", "false").lower() == "true":
        raise ValueError(
            "spark-bsvm trains in one barrier stage, which Spark does not run with dynamic allocation: "
            "set spark.dynamicAllocation.enabled=false for this application")
    slots = executor_slots(spark)
    if num_partitions > slots:
        raise ValueError(
            f"numPartitions={num_partitions} exceeds the {slots} task slots of this application; a barrier "
            f"stage needs all its tasks running at once and would wait forever: use at most {slots} "
            "partitions or add executors/cores")
