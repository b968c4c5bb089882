"""The reasons of the conditions the operator writes: one vocabulary for the handlers that write them and
the models and tests that read them (Kubernetes' convention: a CamelCase word for machines; the message
is for humans, and no reason is ever derived from a message's text)."""

from __future__ import annotations

from enum import StrEnum


class Reason(StrEnum):
    # Ready: done
    SUCCEEDED = "Succeeded"
    DRY_RUN = "DryRun"
    HELD = "Held"  # a RetentionPolicy run: every partition with data to free is held
    NOTHING_TO_DELETE = "NothingToDelete"
    APPLIED = "Applied"  # a CompactionConfig's configs are set
    CONNECTED = "Connected"  # a KafkaCluster answers
    SUSPENDED = "Suspended"
    # Ready: under way
    PENDING = "Pending"
    RUNNING = "Running"
    RETRYING = "Retrying"
    DELETING = "Deleting"
    # Ready: failed
    PARTIALLY_FAILED = "PartiallyFailed"
    CONFLICT = "Conflict"  # a CompactionConfig's topic is claimed by an older one
    UNSUPPORTED = "Unsupported"  # a CompactionConfig's setting the broker does not know
    GUARD_REFUSED = "GuardRefused"
    INVALID_SPEC = "InvalidSpec"
    FORBIDDEN = "Forbidden"
    CLUSTER_UNREACHABLE = "ClusterUnreachable"
    CLUSTER_NOT_FOUND = "ClusterNotFound"  # its KafkaCluster or credentials Secret does not exist yet
    KAFKA_ERROR = "KafkaError"
    KUBERNETES_API_ERROR = "KubernetesApiError"
    ANALYSIS_FAILED = "AnalysisFailed"
    SPARK_APPLICATION_FAILED = "SparkApplicationFailed"
    DELETE_FAILED = "DeleteFailed"
    INTERNAL_ERROR = "InternalError"
    # TopicsMatched
    MATCHED = "Matched"
    NOTHING_MATCHED = "NothingMatched"
    # Budget (a RetentionPolicy's spec.budget)
    WITHIN_BUDGET = "WithinBudget"
    OVER_BUDGET = "OverBudget"  # still over budget after the run's cut
    EVICTED = "Evicted"  # within budget after evicting the slowest counted groups
    THROTTLED = "Throttled"  # over budget, its producers under Ebb's client quota
