"""Spark sized for a few test records, for the analysis job wherever tests run it: locally (PySpark's
`PYSPARK_SUBMIT_ARGS`) and in driver and executor pods (harness.spark_operator's spark-defaults.conf).

The analysis job's Spark is sized for real clusters; on a few records its JIT and whole-stage code
generation cost more than the work (minutes on a busy 2-core machine). Same job, same results, cheaper
start: no whole-stage code generation, and the JVMs stop at the C1 compiler.
"""

from __future__ import annotations

SMALL_SPARK_CONF = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
    "spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=1",
}

# For PySpark started by the analysis job itself (engine Local, tests' local[*] sessions).
SMALL_SPARK_ENV = {
    "PYSPARK_SUBMIT_ARGS": "--conf spark.sql.codegen.wholeStage=false "
    "--driver-java-options -XX:TieredStopAtLevel=1 pyspark-shell"
}
