"""The SparkSession of the job: local[*] when embedded, what spark-submit says in a SparkApplication."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession


def spark_session(
    master: str | None = "local[*]", app_name: str = "ebb-analysis", conf: Mapping[str, str] | None = None
) -> SparkSession:
    """Build (or reuse) the session. `master=None` leaves the master to spark-submit (SparkApplication);
    `conf` adds Spark settings (those read when the JVM starts, such as spark.driver.memory, only count
    for the first session of a process).

    Spark's Python workers start `python3` from PATH unless told otherwise, which lacks the project's
    packages; point them at the running interpreter (docs/analysis.md, Running it).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    builder = (
        builder.config("spark.ui.enabled", "false")
        # The plan's shuffles are small (one row per partition or per group); AQE coalesces the rest.
        .config("spark.sql.shuffle.partitions", str(max(4, 2 * (os.cpu_count() or 2))))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.python.worker.reuse", "true")
        .config("spark.ui.showConsoleProgress", "false")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
