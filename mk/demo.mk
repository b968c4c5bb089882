# `make demo`: Ebb end to end without Docker (demo/end_to_end.py). It sets itself up: the virtual
# environment, the control-plane binaries (harness-k8s, cached in $(EBB_CACHE)/k8s), then starts a
# kube-apiserver + etcd, installs the chart, runs ebb-broker and the operator as local processes and a
# workload, applies the examples, shows what they did, and stops everything. DEMO_ARGS=--keep keeps the
# work directory (logs, broker data).
.PHONY: demo

demo: venv harness-k8s
	@echo "==> Ebb demo: control plane, chart, ebb-broker, operator, workload, examples (Ctrl-C stops it)"
	@$(PY) -m demo.end_to_end $(DEMO_ARGS)
