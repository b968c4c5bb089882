"""Prometheus metrics of the operator (served by `python -m ebb_operator --metrics-port`)."""

from __future__ import annotations

from prometheus_client import Counter

RECONCILES = Counter("ebb_operator_reconciles", "Reconciliations started", ["kind"])
FAILURES = Counter(
    "ebb_operator_reconcile_failures", "Reconciliations that ended in an error", ["kind", "reason"]
)
RECORDS_DELETED = Counter("ebb_operator_records_deleted", "Records removed by DeleteRecords (KIP-107)")
BYTES_RECLAIMED = Counter("ebb_operator_bytes_reclaimed", "Log-dir bytes freed, measured by DescribeLogDirs")
CONFIGS_APPLIED = Counter(
    "ebb_operator_configs_applied", "Topic configs set with IncrementalAlterConfigs", ["kind"]
)
