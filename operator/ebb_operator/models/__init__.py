"""Pydantic models of Ebb's CRDs: the single source of the CRD schemas and of what handlers parse."""

from __future__ import annotations

from ebb_operator.models import compaction_config, delete_records, kafka_cluster, retention_policy
from ebb_operator.models.crd import CrdInfo

# The tenant kinds (namespaced, in the aggregated ebb-edit / ebb-view roles) and the admin registry.
TENANT_CRDS: tuple[CrdInfo, ...] = (delete_records.CRD, compaction_config.CRD, retention_policy.CRD)
ALL_CRDS: tuple[CrdInfo, ...] = (*TENANT_CRDS, kafka_cluster.CRD)
