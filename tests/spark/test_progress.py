"""The run's progress as the driver publishes it: the job's phase, and Spark's tasks counted over the stages
that ran (a stage Spark skips, its shuffle output already there, never counts: the run reaches its total)."""

from __future__ import annotations

from pyspark.sql import SparkSession

from ebb_operator.analysis import progress
from ebb_operator.analysis.progress import ProgressReporter, snapshot
from ebb_operator.models.retention_policy import RunProgress


def test_progress_counts_the_tasks_that_ran_and_names_the_phase(spark: SparkSession) -> None:
    sc = spark.sparkContext
    before = snapshot(sc)
    published: list[RunProgress] = []
    with ProgressReporter(sc, published.append, every=0.05):
        progress.enter("counting")
        counts = sc.parallelize(range(100), 4).map(lambda x: (x % 3, 1)).reduceByKey(lambda a, b: a + b, 2)
        assert sorted(counts.collect()) == [(0, 34), (1, 33), (2, 33)]
        # The same again: Spark skips the map stage, whose shuffle output it has.
        assert sorted(counts.collect()) == [(0, 34), (1, 33), (2, 33)]
    last = published[-1]
    assert before.tasks_done is not None and before.tasks_total is not None, before  # the driver counts
    assert last.stage == "counting"
    assert (last.tasks_done, last.tasks_total) == (before.tasks_done + 8, before.tasks_total + 8), (
        before,
        last,
    )  # 4 map tasks once, 2 reduce tasks twice
    assert last.tasks_done == last.tasks_total
    assert published == [p for i, p in enumerate(published) if i == 0 or p != published[i - 1]], (
        "published only when it changed"
    )
