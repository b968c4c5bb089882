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

# The hostile-client harness on a long budget (docs/broker.md, "Hostile clients"): FUZZ_BUDGET seconds of
# batches with fresh random seeds, each printed; FUZZ_SEED=<n> replays the one batch of that seed;
# FUZZ_SHRINK=1 replays the CI budget (what `make test` runs) and shrinks its failing sequence.
FUZZ_BUDGET ?= 600
.PHONY: fuzz-broker
fuzz-broker: venv
	@echo "==> hostile clients against ebb-broker: $(if $(FUZZ_SHRINK),the CI budget shrunk,$(if $(FUZZ_SEED),seed $(FUZZ_SEED),$(FUZZ_BUDGET) s))"
	EBB_FUZZ_BUDGET=$(if $(FUZZ_SHRINK)$(FUZZ_SEED),0,$(FUZZ_BUDGET)) EBB_FUZZ_SEED=$(if $(FUZZ_SHRINK),,$(FUZZ_SEED)) \
		EBB_FUZZ_SHRINK=$(if $(FUZZ_SHRINK),1,) \
		$(PY) -m pytest tests/compat/test_fuzz.py -k hostile -q -s -p no:cacheprovider -p no:randomly
