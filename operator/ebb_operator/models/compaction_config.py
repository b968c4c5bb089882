"""CompactionConfig (`cc`): compaction settings (KIP-58, KIP-354, KIP-87) kept on every matching topic."""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from ebb_operator.models.cel import duration_at_least
from ebb_operator.models.common import (
    ONE_CLUSTER_RULE,
    ClusterRef,
    Duration,
    KafkaClusterRef,
    Model,
    Observed,
    Status,
    TopicSelector,
    duration_ms,
    validated,
)
from ebb_operator.models.crd import CrdInfo, PrinterColumn, age_column, condition_columns, ready_column


class CleanupPolicy(StrEnum):
    COMPACT = "compact"
    COMPACT_DELETE = "compact,delete"


class Tombstones(Model):
    retention: Duration | None = Field(
        default=None, description="How long tombstones survive after cleaning (delete.retention.ms)."
    )
    null_value_is_tombstone: bool | None = Field(
        default=None,
        description="KIP-87: whether a null value is a tombstone (tombstone.null.value.enable); "
        "clusters without the setting report Unsupported.",
    )


class CompactionConfigSpec(Model):
    model_config = validated(
        duration_at_least(
            "maxCompactionLag",
            "minCompactionLag",
            "maxCompactionLag must not be shorter than minCompactionLag",
        ),
        ONE_CLUSTER_RULE,
    )

    cluster_ref: KafkaClusterRef | None = None
    cluster: ClusterRef | None = None
    topics: TopicSelector
    cleanup_policy: CleanupPolicy = Field(
        default=CleanupPolicy.COMPACT,
        description="cleanup.policy: compact (keep the last record per key) or compact,delete (also "
        "delete by retention.ms/bytes).",
    )
    min_compaction_lag: Duration | None = Field(
        default=None, description="KIP-58: never compact records younger than this (min.compaction.lag.ms)."
    )
    max_compaction_lag: Duration | None = Field(
        default=None, description="KIP-354: compact records at the latest after this (max.compaction.lag.ms)."
    )
    tombstones: Tombstones | None = Field(default=None, description="How tombstones are kept (KIP-87).")
    min_cleanable_dirty_ratio: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="min.cleanable.dirty.ratio: the share of a log not yet cleaned before it is cleaned.",
    )

    def topic_configs(self) -> dict[str, str]:
        """The Kafka topic configs this spec sets, by Kafka's names."""
        configs = {"cleanup.policy": self.cleanup_policy.value}
        if self.min_compaction_lag is not None:
            configs["min.compaction.lag.ms"] = str(duration_ms(self.min_compaction_lag))
        if self.max_compaction_lag is not None:
            configs["max.compaction.lag.ms"] = str(duration_ms(self.max_compaction_lag))
        if self.tombstones is not None and self.tombstones.retention is not None:
            configs["delete.retention.ms"] = str(duration_ms(self.tombstones.retention))
        if self.tombstones is not None and self.tombstones.null_value_is_tombstone is not None:
            configs["tombstone.null.value.enable"] = str(self.tombstones.null_value_is_tombstone).lower()
        if self.min_cleanable_dirty_ratio is not None:
            configs["min.cleanable.dirty.ratio"] = repr(self.min_cleanable_dirty_ratio)
        return configs


class TopicState(StrEnum):
    APPLIED = "Applied"
    CONFLICT = "Conflict"
    UNSUPPORTED = "Unsupported"
    FAILED = "Failed"


class TopicStatus(Observed):
    topic: str = Field(description="The topic.")
    state: TopicState = Field(
        description="Applied, Conflict (another CompactionConfig manages it), Unsupported (the cluster "
        "lacks a setting) or Failed."
    )
    message: str = Field(default="", description="Why, when not Applied.")
    last_applied: str | None = Field(default=None, description="When its configs were last checked or set.")


class CompactionConfigStatus(Status):
    matched_topics: int | None = Field(default=None, description="Topics spec.topics matches.")
    topics: list[TopicStatus] = Field(
        default_factory=list, max_length=500, description="Per matched topic (at most 500)."
    )
    last_sync: str | None = Field(default=None, description="When the topics were last reconciled.")


CRD = CrdInfo(
    kind="CompactionConfig",
    plural="compactionconfigs",
    short_names=("cc",),
    spec=CompactionConfigSpec,
    status=CompactionConfigStatus,
    columns=(
        PrinterColumn("Topics", "integer", ".status.matchedTopics", "Topics matched"),
        ready_column(),
        age_column(),
        *condition_columns(),
    ),
)
