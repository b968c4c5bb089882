# RetentionPolicy reconciliation (operator/ebb_operator/handlers/retention_policy.py): its end-to-end
# tests on the test control plane with ebb-broker and Apache Kafka, and the SparkApplication engine with
# the test-only Spark operator stand-in. Needs the control plane and Kafka harnesses (already in
# TEST_PREREQS from mk/k8s.mk and mk/kafka.mk).
.PHONY: test-retention

test-retention: venv harness-k8s harness-kafka
	@echo "==> RetentionPolicy e2e: operator + analysis job + DeleteRecords on ebb-broker and Apache Kafka"
	$(PY) -m pytest -q tests/e2e/retention tests/unit/operator/handlers/test_retention_policy.py
