"""Prometheus metrics of the operator (served by `python -m ebb_operator --metrics-port`)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

RECONCILES = Counter("ebb_operator_reconciles", "Reconciliations started", ["kind"])
FAILURES = Counter(
    "ebb_operator_reconcile_failures", "Reconciliations that ended in an error", ["kind", "reason"]
)
RECORDS_DELETED = Counter("ebb_operator_records_deleted", "Records removed by DeleteRecords (KIP-107)")
BYTES_RECLAIMED = Counter("ebb_operator_bytes_reclaimed", "Log-dir bytes freed, measured by DescribeLogDirs")
CONFIGS_APPLIED = Counter(
    "ebb_operator_configs_applied", "Topic configs set with IncrementalAlterConfigs", ["kind"]
)
POLICY_RUNS = Counter(
    "ebb_operator_policy_runs",
    "RetentionPolicy runs that ended, by outcome",
    ["namespace", "policy", "outcome"],
)
POLICY_RECLAIMABLE_BYTES = Gauge(
    "ebb_operator_policy_reclaimable_bytes",
    "Bytes the last plan of a RetentionPolicy frees (estimate of the analysis job)",
    ["namespace", "policy"],
)
POLICY_HELD_PARTITIONS = Gauge(
    "ebb_operator_policy_held_partitions",
    "Partitions the last plan of a RetentionPolicy holds back (a group has not read them, or a safety rule)",
    ["namespace", "policy"],
)
POLICY_LIMITING_LAG_RECORDS = Gauge(
    "ebb_operator_policy_limiting_lag_records",
    "Records a group limiting a RetentionPolicy's cut on a topic has not read (status topics[].limiting)",
    ["namespace", "policy", "topic", "group"],
)
POLICY_LIMITING_LAG_BYTES = Gauge(
    "ebb_operator_policy_limiting_lag_bytes",
    "Bytes (estimated) a group limiting a RetentionPolicy's cut on a topic holds on disk",
    ["namespace", "policy", "topic", "group"],
)
