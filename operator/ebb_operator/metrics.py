"""Prometheus metrics of the operator (served by `python -m ebb_operator --metrics-port`)."""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import os
import platform
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import ParamSpec, TypeVar

from prometheus_client import Counter, Gauge, Histogram, Info

P = ParamSpec("P")
T = TypeVar("T")

BUILD = Info("ebb_operator_build", "The operator's version, the commit it was built from, its Python")
LEADER = Gauge("ebb_operator_leader", "1 while this replica holds the leader Lease and acts, else 0")
RECONCILES = Counter("ebb_operator_reconciles", "Reconciliations started", ["kind"])
RECONCILE_SECONDS = Histogram(
    "ebb_operator_reconcile_duration_seconds",
    "Time one reconciliation took, by kind (a RetentionPolicy's: one whole run, analysis included)",
    ["kind"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800),
)
FAILURES = Counter(
    "ebb_operator_reconcile_failures", "Reconciliations that ended in an error", ["kind", "reason"]
)
RECORDS_DELETED = Counter("ebb_operator_records_deleted", "Records removed by DeleteRecords (KIP-107)")
BYTES_RECLAIMED = Counter("ebb_operator_bytes_reclaimed", "Log-dir bytes freed, measured by DescribeLogDirs")
WEBHOOK_READY = Gauge(
    "ebb_operator_webhook_ready",
    "1 while this replica's admission webhook serves and the API server has been told where and with which "
    "CA (ValidatingWebhookConfiguration ebb.dev); 0 when telling it failed",
)
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
POLICY_LIMITING_PINNED_BYTES = Gauge(
    "ebb_operator_policy_limiting_pinned_bytes",
    "Bytes (estimated) only this group keeps on a RetentionPolicy's topic: what the cut would free had it "
    "read everything (status topics[].limiting[].pinnedBytes)",
    ["namespace", "policy", "topic", "group"],
)
POLICY_LIMITING_OLDEST_UNREAD_AGE = Gauge(
    "ebb_operator_policy_limiting_oldest_unread_age_seconds",
    "Age, at the policy's last run, of the oldest record a group limiting its cut on a topic has not read",
    ["namespace", "policy", "topic", "group"],
)
UNREAD_RECORDS_DELETED = Counter(
    "ebb_operator_unread_records_deleted",
    "Records a counted group of a RetentionPolicy had not read that left the log, by any path, each counted "
    "once (by one process: read it with increase(); status topics[].unread holds the totals)",
    ["namespace", "policy", "topic", "group"],
)
POLICY_HELD_BY_GROUP = Gauge(
    "ebb_operator_policy_held_partitions_by_group",
    "Partitions the last plan of a RetentionPolicy holds back for a group (not read or committed by it), "
    "from the held partitions the plan lists (at most 100 per topic)",
    ["namespace", "policy", "group"],
)
POLICY_OVER_BUDGET_PARTITIONS = Gauge(
    "ebb_operator_policy_over_budget_partitions",
    "Partitions over a RetentionPolicy's spec.budget after its last plan's cuts",
    ["namespace", "policy"],
)
BUDGET_EVICTED_RECORDS = Counter(
    "ebb_operator_budget_evicted_records",
    "Records a RetentionPolicy's budget (EvictSlowest) deleted before an evicted group read them, counted "
    "when the run's DeleteRecords cut the partition",
    ["namespace", "policy", "topic", "group"],
)
POLICY_THROTTLED_PRODUCERS = Gauge(
    "ebb_operator_policy_throttled_producers",
    "Client quotas (producer_byte_rate) Ebb has set for a RetentionPolicy's budget (ThrottleProducers)",
    ["namespace", "policy"],
)
_held_groups: dict[tuple[str, str], set[str]] = {}


def set_held_by_group(namespace: str, policy: str, counts: Mapping[str, int]) -> None:
    """One series per group holding partitions of the policy; a group that holds none any more goes."""
    key = (namespace, policy)
    for gone in _held_groups.get(key, set()) - counts.keys():
        with contextlib.suppress(KeyError):
            POLICY_HELD_BY_GROUP.remove(namespace, policy, gone)
    for group, held in counts.items():
        POLICY_HELD_BY_GROUP.labels(namespace, policy, group).set(held)
    if counts:
        _held_groups[key] = set(counts)
    else:
        _held_groups.pop(key, None)


def reconciles(kind: str) -> Callable[[Callable[P, Awaitable[T]]], Callable[P, Awaitable[T]]]:
    """Count every call of a reconciling coroutine and time it, however it ends."""

    def wrap(fn: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
        @functools.wraps(fn)
        async def timed(*args: P.args, **kwargs: P.kwargs) -> T:
            RECONCILES.labels(kind).inc()
            began = time.monotonic()
            try:
                return await fn(*args, **kwargs)
            finally:
                RECONCILE_SECONDS.labels(kind).observe(time.monotonic() - began)

        return timed

    return wrap


def record_build() -> None:
    """ebb_operator_build_info: the installed version, the commit the image was built from (EBB_COMMIT,
    a build argument of operator/Dockerfile; `unknown` when not given) and the Python running it."""
    try:
        version = importlib.metadata.version("ebb")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    BUILD.info(
        {
            "version": version,
            "commit": os.environ.get("EBB_COMMIT") or "unknown",
            "python": platform.python_version(),
        }
    )
