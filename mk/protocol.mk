# ebb-broker's protocol layer: the compat tier and the broker demonstration.

.PHONY: test-compat broker demo-broker

# The compat tier alone: real clients against a real ebb-broker process.
test-compat: venv
	@echo "==> compat tier: confluent-kafka, kafka-python and aiokafka against ebb-broker"
	$(PY) -m pytest -m compat -q

# Run a broker in the foreground on 127.0.0.1:9092 (data in ./.ebb-data).
broker: venv
	$(PY) -m ebb_broker --data-dir .ebb-data

demo-broker: venv
	@echo "==> broker demonstration: producers, two consumer groups, consumer-aware DeleteRecords"
	$(PY) -m demo.broker
