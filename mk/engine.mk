# The log engine (broker-image/ebb_broker/log): its demonstration and benchmark.

.PHONY: demo-engine bench-log

# The engine on its own, without the broker (`make demo` runs the broker's, more complete, demonstration).
demo-engine: venv
	@echo "==> log engine demo: a topic in a temp data dir, DeleteRecords, a retention pass, a restart"
	$(PY) demo/engine_demo.py

bench-log: venv
	$(PY) -m bench log
