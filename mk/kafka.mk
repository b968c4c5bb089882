# Apache Kafka (broker + CLI tools) from Maven Central: the reference peer of the compat tests, the second
# target of the operator tests and the baseline of bench_broker. Cached in $(EBB_CACHE)/kafka/<version>.
.PHONY: harness-kafka
TEST_PREREQS += harness-kafka

harness-kafka:
	@harness/kafka/assemble.sh

# Kafka's own `__consumer_offsets` records for the format tests (tests/unit/formats): regenerated from the
# assembled jars; the compat tier fails when the committed copy differs from what Kafka writes.
.PHONY: consumer-offsets-vectors
consumer-offsets-vectors: venv harness-kafka
	$(PY) -m harness.kafka vectors > tests/unit/formats/consumer_offsets_vectors.json
