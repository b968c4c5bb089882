# ebb-operator: CRD generation from the pydantic models.
.PHONY: crds

crds: venv
	@echo "==> generating crds/ and the operator RBAC rules from operator/ebb_operator"
	$(PY) -m ebb_operator.crdgen --out crds --rbac-out charts/ebb/files/operator-rules.yaml
