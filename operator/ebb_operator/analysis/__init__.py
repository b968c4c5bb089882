"""The analysis job: from committed offsets to a safe delete plan, on PySpark."""
