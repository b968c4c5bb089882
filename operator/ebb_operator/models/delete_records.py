"""DeleteRecords (`dr`): a declarative kafka-delete-records.sh (KIP-107).

The spec is immutable once created (a CEL rule in the CRD); the operator executes it once. Phase is
derived from the Ready condition, never stored independently of it.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from ebb_operator.models.common import (
    ONE_CLUSTER_RULE,
    ClusterRef,
    Condition,
    ConditionStatus,
    Duration,
    KafkaClusterRef,
    Model,
    Observed,
    Status,
    TopicName,
    find_condition,
    validated,
)
from ebb_operator.models.crd import CrdInfo, PrinterColumn, age_column, condition_columns
from ebb_operator.models.reasons import Reason

HIGH_WATERMARK = -1  # KIP-107: offset -1 means "up to the high watermark"
MAX_PARTITIONS = 10000  # partitions of one DeleteRecords (the API server keeps objects small)


class Guard(StrEnum):
    CONSUMED = "Consumed"  # every group that reads the topic must have committed past the cut
    CONSUMED_BY = "ConsumedBy"  # the groups in consumedBy must have (a RetentionPolicy's counted groups)
    NONE = "None"  # no check (needs the GuardNone grant)


class PartitionOffset(Model):
    """Delete every record of topic-partition below `offset` (-1 = the high watermark)."""

    topic: TopicName = Field(description="The topic.")
    partition: int = Field(ge=0, le=2147483647, description="The partition number.")
    offset: int = Field(ge=-1, description="Delete records before this offset; -1 = high watermark.")


class EvictedGroups(Model):
    """Counted groups a RetentionPolicy's budget evicted on one partition (EvictSlowest): the ConsumedBy guard
    does not wait for them there, and still waits for every other group it names, there and elsewhere."""

    topic: TopicName = Field(description="The topic.")
    partition: int = Field(ge=0, le=2147483647, description="The partition number.")
    groups: list[str] = Field(
        min_length=1, max_length=10000, description="The groups evicted on this partition."
    )


class DeleteRecordsSpec(Model):
    model_config = validated(
        {"rule": "self == oldSelf", "message": "spec is immutable: create a new DeleteRecords"},
        ONE_CLUSTER_RULE,
        {
            "rule": "self.guard != 'ConsumedBy' || size(self.consumedBy) > 0",
            "message": "guard ConsumedBy names the groups in consumedBy",
        },
        {
            "rule": "!has(self.evicted) || size(self.evicted) == 0 || self.guard == 'ConsumedBy'",
            "message": "evicted goes with guard ConsumedBy",
        },
    )

    cluster_ref: KafkaClusterRef | None = None
    cluster: ClusterRef | None = None
    partitions: list[PartitionOffset] = Field(
        min_length=1,
        max_length=MAX_PARTITIONS,
        description="The partitions to cut and where (one entry per topic and partition).",
        json_schema_extra={
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["topic", "partition"],
        },
    )
    timeout: Duration = Field(default="30s", description="How long retriable errors are retried.")
    guard: Guard = Field(
        default=Guard.CONSUMED,
        description="Consumed: refuse partitions some consumer group has not committed past the offset.",
    )
    consumed_by: list[str] = Field(
        default_factory=list,
        max_length=10000,
        description="With guard ConsumedBy: the groups whose commits are re-read just before deleting.",
    )
    evicted: list[EvictedGroups] = Field(
        default_factory=list,
        max_length=MAX_PARTITIONS,
        description="With guard ConsumedBy: per partition, groups of consumedBy the guard does not wait for "
        "there (a RetentionPolicy budget evicted them; needs Evict in the grant).",
        json_schema_extra={
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["topic", "partition"],
        },
    )
    dry_run: bool = Field(default=False, description="Report what would be deleted, delete nothing.")


class Phase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    PARTIALLY_FAILED = "PartiallyFailed"
    FAILED = "Failed"


TERMINAL_PHASES = frozenset({Phase.SUCCEEDED, Phase.PARTIALLY_FAILED, Phase.FAILED})
# Ready reasons of a request that has not started: its cluster state could not be read yet, or its
# KafkaCluster or credentials Secret does not exist yet (GitOps tools apply objects in any order).
WAITING_REASONS = frozenset({Reason.PENDING, Reason.CLUSTER_NOT_FOUND})


class PartitionResult(Observed):
    """Per-partition outcome (Strimzi's PartitionedByError: a low watermark or an error)."""

    topic: str = Field(description="The topic.")
    partition: int = Field(description="The partition number.")
    requested_offset: int = Field(description="The offset asked for; -1 is resolved before deleting.")
    low_watermark: int | None = Field(
        default=None, description="The log start offset Kafka answered after the cut (KIP-107)."
    )
    error: str | None = Field(
        default=None, description="Why the partition was not cut (GuardRefused, a Kafka error)."
    )
    refused: bool = Field(
        default=False,
        description="The guard refused the partition: error names the groups not consumed past the offset.",
    )
    retrying: str | None = Field(
        default=None,
        description="The retriable error of the last attempt, while it is retried (until spec.timeout).",
    )
    log_start_before: int | None = Field(default=None, description="Log start offset when the run began.")
    bytes_before: int | None = Field(
        default=None, description="Log-dir bytes of the partition when the run began, over every replica."
    )


class DeleteRecordsStatus(Status):
    phase: Phase | None = Field(
        default=None,
        description="Pending, Running, Succeeded, PartiallyFailed or Failed: a view of the Ready condition.",
    )
    started_at: str | None = Field(default=None, description="When the run began.")
    completed_at: str | None = Field(default=None, description="When the run ended.")
    partition_count: int | None = Field(default=None, description="Partitions in the request.")
    partitions: list[PartitionResult] = Field(
        default_factory=list, description="Per partition: the plan, then the low watermark or the error."
    )
    deleted_records: int | None = Field(
        default=None, description="Records deleted (in a dry run: that would be deleted)."
    )
    bytes_before: int | None = Field(
        default=None, description="Log-dir bytes of the partitions before the run, over every replica."
    )
    reclaimed_bytes: int | None = Field(
        default=None,
        description="Bytes the brokers freed: bytesBefore minus what DescribeLogDirs reports after their "
        "retention pass removed the segments below the cut (updated until reclaimedAt stops moving).",
    )
    reclaimed_at: str | None = Field(default=None, description="When reclaimedBytes last grew.")


def phase_from_conditions(conditions: list[Condition]) -> Phase:
    """Phase is a view of Ready: True=Succeeded, Unknown=Running, False=PartiallyFailed or Failed, a
    waiting reason Pending."""
    ready = find_condition(conditions, "Ready")
    if ready is None or ready.reason in WAITING_REASONS:
        return Phase.PENDING
    if ready.status is ConditionStatus.TRUE:
        return Phase.SUCCEEDED
    if ready.status is ConditionStatus.UNKNOWN:
        return Phase.RUNNING
    return Phase.PARTIALLY_FAILED if ready.reason == Reason.PARTIALLY_FAILED else Phase.FAILED


CRD = CrdInfo(
    kind="DeleteRecords",
    plural="deleterecords",
    short_names=("dr",),
    spec=DeleteRecordsSpec,
    status=DeleteRecordsStatus,
    columns=(
        PrinterColumn("Phase", "string", ".status.phase"),
        PrinterColumn("Partitions", "integer", ".status.partitionCount", "Partitions in the request"),
        PrinterColumn("Deleted", "integer", ".status.deletedRecords", "Records deleted"),
        age_column(),
        *condition_columns(),
    ),
)
