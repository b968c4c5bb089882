# RetentionPolicy reconciliation (operator/ebb_operator/handlers/retention/): its unit tests, and its
# end-to-end tests on the test control plane with ebb-broker and Apache Kafka (engine Local). The
# SparkApplication engine runs in the cluster tier (tests/cluster/test_spark_application.py), on a real
# node with the real Spark operator. Needs the control plane and Kafka harnesses (already in
# TEST_PREREQS from mk/k8s.mk and mk/kafka.mk).
.PHONY: test-retention

test-retention: venv harness-k8s harness-kafka
	@echo "==> RetentionPolicy: unit tests, then operator + analysis job + DeleteRecords on ebb-broker and Apache Kafka"
	$(PY) -m pytest -q tests/unit/operator/handlers/retention tests/e2e/retention
