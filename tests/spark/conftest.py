"""One SparkSession (local[2]) for the whole spark tier: starting the JVM is the slow part."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from ebb_operator.analysis.session import spark_session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = spark_session("local[2]", app_name="ebb-spark-tests")
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
