# ebb-operator: CRDs and the operator's RBAC rules, generated from the pydantic models and
# ebb_operator.rbac; the chart's copy of the CRDs (charts/ebb/files/crds, mk/delivery.mk) follows.
.PHONY: crds

crds: venv
	@echo "==> generating crds/ and the operator RBAC rules from operator/ebb_operator"
	$(PY) -m ebb_operator.crdgen --out crds --rbac-out charts/ebb/files
	@$(MAKE) --no-print-directory chart-crds
