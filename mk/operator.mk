# ebb-operator: CRD generation from the pydantic models.
.PHONY: crds

crds: venv
	@echo "==> generating crds/ from operator/ebb_operator/models"
	$(PY) -m ebb_operator.crdgen --out crds
