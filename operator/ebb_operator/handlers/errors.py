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


class ReconcileError(Exception):
    """Base: the reason written into the Ready condition, and whether kopf should retry later."""

    reason: ClassVar[str] = "InternalError"


class InvalidSpec(ReconcileError):
    reason = "InvalidSpec"


class ClusterUnreachable(ReconcileError):
    """The cluster cannot be named or reached (no such KafkaCluster, Secret missing, no broker answers)."""

    reason = "ClusterUnreachable"


class ClusterNotFound(ClusterUnreachable):
    """The KafkaCluster, or the Secret with its credentials, does not exist yet: GitOps tools apply objects
    in any order, so the object waits for them (retried with a backoff) rather than failing."""

    reason = "ClusterNotFound"


class KafkaFailed(ReconcileError):
    reason = "KafkaError"


class AnalysisFailed(ReconcileError):
    reason = "AnalysisFailed"


class SparkApplicationFailed(ReconcileError):
    reason = "SparkApplicationFailed"


class DeleteFailed(ReconcileError):
    reason = "DeleteFailed"


# Errors of other layers, by class, to the reason they mean for the object.
_REASONS: tuple[tuple[type[BaseException], str], ...] = (
    (ReconcileError, ""),  # the class's own reason
    (Forbidden, "Forbidden"),
    (ValidationError, "InvalidSpec"),
    (ClusterConfigError, "ClusterUnreachable"),
    (KafkaCallError, "KafkaError"),
    (KubeApiError, "KubernetesApiError"),
)


def reason_of(exc: BaseException) -> str:
    """The CamelCase reason for an exception; KafkaError for anything a Kafka client raised."""
    for cls, reason in _REASONS:
        if isinstance(exc, cls):
            return reason or exc.reason  # type: ignore[attr-defined]
    return "KafkaError" if type(exc).__module__.startswith("kafka") else "InternalError"
