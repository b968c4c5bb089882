# ebb-operator: CRDs and the operator's RBAC rules, generated from the pydantic models and
# ebb_operator.rbac; the chart's copy of the CRDs (charts/ebb/files/crds, mk/delivery.mk) follows.
.PHONY: crds

crds: venv
	@echo "==> generating crds/ and the operator RBAC rules from operator/ebb_operator"
	$(PY) -m ebb_operator.crdgen --out crds --rbac-out charts/ebb/files
	@$(MAKE) --no-print-directory chart-crds

# The CRDs accept every object the previous release's did (tools/crd_compat.py; its unit test runs the same
# check in `make test`). AGAINST=<commit or tag> compares with another release.
.PHONY: crd-compat
crd-compat: venv
	$(PY) -m tools.crd_compat $(if $(AGAINST),--against $(AGAINST))
