# Ebb: the two commands a user needs are `make demo` and `make test`.
# Everything else here is a step they depend on, usable on its own.

PYTHON  ?= python3
VENV    ?= .venv
PY      := $(VENV)/bin/python
# Tool caches live outside the clone so a second clone (or CI on this machine) reuses them.
EBB_CACHE ?= $(HOME)/.cache/ebb
export EBB_CACHE

# Each part adds its own targets in mk/<part>.mk and appends to TEST_PREREQS what `make test` needs
# built first (the Apache Kafka harness, the control-plane binaries, ...).
.DEFAULT_GOAL := help
TEST_PREREQS :=
include $(sort $(wildcard mk/*.mk))

.PHONY: help venv test test-fast lint demo bench docs clean

help:
	@echo "make demo   - run the most complete real demonstration (sets itself up)"
	@echo "make test   - set up everything on a fresh machine and run every test tier"
	@echo "make lint   - ruff (checks and format), mypy and the import-layering contracts"
	@echo "make bench  - benchmarks; tables on stdout, JSON in bench/results/"

# The virtual environment is rebuilt when pyproject.toml changes.
$(VENV)/.installed: pyproject.toml
	@echo "==> creating the virtual environment in $(VENV) (first run downloads dependencies)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip==25.3
	$(PY) -m pip install --quiet --progress-bar off -e '.[broker,operator,spark,test]'
	@touch $@

venv: $(VENV)/.installed

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

# Fast tier only, for the edit-test loop.
test-fast: venv
	$(PY) -m pytest -m unit -q

# Two pytest runs side by side, balanced by their measured times: tools/run_tests.py.
test: venv lint $(TEST_PREREQS)
	@echo "==> running every test tier (unit+compat+k8s+cluster beside spark+e2e)"
	$(PY) -m tools.run_tests

bench: venv
	$(PY) -m bench $(BENCH)

# Docs generated from the code (a unit test fails when a committed copy is stale).
docs: venv
	$(PY) -m tools.broker_internals

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache bench/results/*.json
