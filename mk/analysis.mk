# The analysis job (operator/ebb_operator/analysis): its Spark tier and its benchmark.
.PHONY: test-spark bench-analysis

test-spark: venv
	@echo "==> spark tier: the retention plan and the __consumer_offsets data source (PySpark local mode)"
	$(PY) -m pytest -m spark -q

bench-analysis: venv
	$(PY) -m bench analysis
