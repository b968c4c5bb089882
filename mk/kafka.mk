# Apache Kafka (broker + CLI tools) from Maven Central: the reference peer of the compat tests, the second
# target of the operator tests and the baseline of bench_broker. Cached in $(EBB_CACHE)/kafka/<version>.
.PHONY: harness-kafka
TEST_PREREQS += harness-kafka

harness-kafka:
	@harness/kafka/assemble.sh
