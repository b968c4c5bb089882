"""One SparkSession (local[2]) per test process for the whole spark tier: starting the JVM is the slow part.

The tier's inputs are a few rows, so the session is set for small data: no whole-stage code generation (each
new query would otherwise compile Java code it runs once) and the JIT's quick tier only. The results are the
same; the JVM spends about half the CPU time (measured on test_plan.py). The same settings reach the job
when a test starts it as a process (SMALL_DATA_ENV).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from ebb_operator.analysis.session import spark_session

SMALL_DATA_CONF = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
    "spark.sql.shuffle.partitions": "2",
}
SMALL_DATA_ENV = {
    "PYSPARK_SUBMIT_ARGS": " ".join(f"--conf {k}={v}" for k, v in SMALL_DATA_CONF.items()) + " pyspark-shell"
}


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = spark_session("local[2]", app_name="ebb-spark-tests", conf=SMALL_DATA_CONF)
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
