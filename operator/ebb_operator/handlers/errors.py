"""Why a reconcile did not succeed, as exception classes: each maps to one condition reason.

Strimzi's topic operator model: a handler raises the class that says what went wrong; the status writer
(`status.py`) turns it into `Ready=False` with that class's reason and the message, an Event and a
metric. No reason is ever derived from an error's text.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import ValidationError

from ebb_operator.access import Forbidden
from ebb_operator.kafka import ClusterConfigError, KafkaCallError
from ebb_operator.kube import KubeApiError
from ebb_operator.models.reasons import Reason


class ReconcileError(Exception):
    """Base: the reason written into the Ready condition, and whether kopf should retry later."""

    reason: ClassVar[Reason] = Reason.INTERNAL_ERROR


class InvalidSpec(ReconcileError):
    reason = Reason.INVALID_SPEC


class ClusterUnreachable(ReconcileError):
    """The cluster cannot be named or reached (no such KafkaCluster, Secret missing, no broker answers)."""

    reason = Reason.CLUSTER_UNREACHABLE


class ClusterNotFound(ClusterUnreachable):
    """The KafkaCluster, or the Secret with its credentials, does not exist yet: GitOps tools apply objects
    in any order, so the object waits for them (retried with a backoff) rather than failing."""

    reason = Reason.CLUSTER_NOT_FOUND


class KafkaFailed(ReconcileError):
    reason = Reason.KAFKA_ERROR


class AnalysisFailed(ReconcileError):
    reason = Reason.ANALYSIS_FAILED


class SparkApplicationFailed(ReconcileError):
    reason = Reason.SPARK_APPLICATION_FAILED


class DeleteFailed(ReconcileError):
    reason = Reason.DELETE_FAILED


# Errors of other layers, by class, to the reason they mean for the object (None: the class's own).
_REASONS: tuple[tuple[type[BaseException], Reason | None], ...] = (
    (ReconcileError, None),
    (Forbidden, Reason.FORBIDDEN),
    (ValidationError, Reason.INVALID_SPEC),
    (ClusterConfigError, Reason.CLUSTER_UNREACHABLE),
    (KafkaCallError, Reason.KAFKA_ERROR),
    (KubeApiError, Reason.KUBERNETES_API_ERROR),
)


def reason_of(exc: BaseException) -> Reason:
    """The reason for an exception; KafkaError for anything a Kafka client raised."""
    for cls, reason in _REASONS:
        if isinstance(exc, cls):
            return reason or exc.reason  # type: ignore[attr-defined]
    return Reason.KAFKA_ERROR if type(exc).__module__.startswith("kafka") else Reason.INTERNAL_ERROR
