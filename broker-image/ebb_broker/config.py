"""Broker and topic configuration with Kafka's names and defaults, validated by pydantic.

Values arrive as strings (``--config KEY=VALUE``, CreateTopics, IncrementalAlterConfigs) and are parsed
here once; every unknown key or bad value raises ``InvalidConfigError`` naming the key, and nothing is
applied. Ebb adds KIP-68's consumed retention (``retention.commitoffset.ms``, broker
``log.retention.commitoffset.{enable,ms,minutes,hours}``) and KIP-87's ``tombstone.null.value.enable``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ebb_broker.log.errors import InvalidConfigError

LONG_MAX = 2**63 - 1
_HOUR_MS = 3_600_000
_MINUTE_MS = 60_000


def _raise_invalid(exc: ValidationError, kind: str) -> InvalidConfigError:
    parts = []
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"]) or "(config)"
        if err["type"] == "extra_forbidden":
            parts.append(f"unknown {kind} config {key!r}")
        else:
            parts.append(f"{kind} config {key!r}: {err['msg']} (got {err.get('input')!r})")
    return InvalidConfigError("; ".join(parts))


class _KafkaConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, validate_default=True)

    @classmethod
    def keys(cls) -> set[str]:
        """Every accepted Kafka-style key."""
        return {f.alias or name for name, f in cls.model_fields.items()}

    def to_props(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True)


class TopicConfig(_KafkaConfig):
    """Effective configuration of one topic: broker defaults overlaid with the topic's overrides."""

    cleanup_policy: str = Field("delete", alias="cleanup.policy")
    retention_ms: int = Field(7 * 24 * _HOUR_MS, alias="retention.ms", ge=-1)
    retention_bytes: int = Field(-1, alias="retention.bytes", ge=-1)
    segment_bytes: int = Field(1024**3, alias="segment.bytes", ge=14)
    segment_ms: int = Field(7 * 24 * _HOUR_MS, alias="segment.ms", ge=1)
    segment_index_bytes: int = Field(10 * 1024 * 1024, alias="segment.index.bytes", ge=12)
    index_interval_bytes: int = Field(4096, alias="index.interval.bytes", ge=0)
    min_compaction_lag_ms: int = Field(0, alias="min.compaction.lag.ms", ge=0)
    max_compaction_lag_ms: int = Field(LONG_MAX, alias="max.compaction.lag.ms", ge=1)
    delete_retention_ms: int = Field(24 * _HOUR_MS, alias="delete.retention.ms", ge=0)
    min_cleanable_dirty_ratio: float = Field(0.5, alias="min.cleanable.dirty.ratio", ge=0.0, le=1.0)
    file_delete_delay_ms: int = Field(60_000, alias="file.delete.delay.ms", ge=0)
    message_timestamp_type: Literal["CreateTime", "LogAppendTime"] = Field(
        "CreateTime", alias="message.timestamp.type"
    )
    max_message_bytes: int = Field(1_048_588, alias="max.message.bytes", ge=0)
    flush_messages: int = Field(LONG_MAX, alias="flush.messages", ge=1)
    min_insync_replicas: int = Field(1, alias="min.insync.replicas", ge=1, le=1)
    compression_type: Literal["producer"] = Field("producer", alias="compression.type")
    # KIP-68: consumed retention; -1 disables it. Never longer than forced retention.
    retention_commitoffset_ms: int = Field(-1, alias="retention.commitoffset.ms", ge=-1)
    # KIP-87: whether a null value is a tombstone (the explicit marker always is).
    tombstone_null_value_enable: bool = Field(True, alias="tombstone.null.value.enable")

    @model_validator(mode="after")
    def _check(self) -> TopicConfig:
        policies = [p.strip() for p in self.cleanup_policy.split(",") if p.strip()]
        if not policies or any(p not in ("delete", "compact") for p in policies):
            raise ValueError(
                f"cleanup.policy must be 'delete', 'compact' or 'compact,delete', got {self.cleanup_policy!r}"
            )
        if 0 <= self.retention_ms < self.retention_commitoffset_ms:
            raise ValueError(
                f"retention.commitoffset.ms ({self.retention_commitoffset_ms}) may not exceed "
                f"retention.ms ({self.retention_ms}): consumed retention is the earlier of the two levels"
            )
        if self.min_compaction_lag_ms > self.max_compaction_lag_ms:
            raise ValueError("min.compaction.lag.ms may not exceed max.compaction.lag.ms")
        return self

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def max_segment_ms(self) -> int:
        """Kafka's LogConfig.maxSegmentMs: a compacted topic also rolls by max.compaction.lag.ms (KIP-354)."""
        return min(self.segment_ms, self.max_compaction_lag_ms) if self.compact else self.segment_ms

    @classmethod
    def parse(cls, props: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> TopicConfig:
        """Validate ``props`` over ``defaults``; raises InvalidConfigError naming every bad key."""
        try:
            return cls.model_validate({**(defaults or {}), **props})
        except ValidationError as exc:
            raise _raise_invalid(exc, "topic") from None


# Broker key -> topic key for the broker-wide defaults of topic configs (Kafka's LogConfig synonyms).
_TOPIC_SYNONYMS = {
    "log.cleanup.policy": "cleanup.policy",
    "log.retention.bytes": "retention.bytes",
    "log.segment.bytes": "segment.bytes",
    "log.index.size.max.bytes": "segment.index.bytes",
    "log.index.interval.bytes": "index.interval.bytes",
    "log.cleaner.min.compaction.lag.ms": "min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms": "max.compaction.lag.ms",
    "log.cleaner.delete.retention.ms": "delete.retention.ms",
    "log.cleaner.min.cleanable.ratio": "min.cleanable.dirty.ratio",
    "log.segment.delete.delay.ms": "file.delete.delay.ms",
    "log.message.timestamp.type": "message.timestamp.type",
    "message.max.bytes": "max.message.bytes",
    "log.flush.interval.messages": "flush.messages",
    "tombstone.null.value.enable": "tombstone.null.value.enable",
}


class BrokerConfig(_KafkaConfig):
    """Broker-wide settings (Kafka's names and defaults); also the defaults of every topic config."""

    log_retention_hours: int = Field(168, alias="log.retention.hours", ge=-1)
    log_retention_minutes: int | None = Field(None, alias="log.retention.minutes", ge=-1)
    log_retention_ms: int | None = Field(None, alias="log.retention.ms", ge=-1)
    log_retention_bytes: int = Field(-1, alias="log.retention.bytes", ge=-1)
    log_segment_bytes: int = Field(1024**3, alias="log.segment.bytes", ge=14)
    log_roll_hours: int = Field(168, alias="log.roll.hours", ge=1)
    log_roll_ms: int | None = Field(None, alias="log.roll.ms", ge=1)
    log_index_size_max_bytes: int = Field(10 * 1024 * 1024, alias="log.index.size.max.bytes", ge=12)
    log_index_interval_bytes: int = Field(4096, alias="log.index.interval.bytes", ge=0)
    log_cleanup_policy: str = Field("delete", alias="log.cleanup.policy")
    log_retention_check_interval_ms: int = Field(300_000, alias="log.retention.check.interval.ms", ge=1)
    log_cleaner_enable: bool = Field(True, alias="log.cleaner.enable")
    log_cleaner_backoff_ms: int = Field(15_000, alias="log.cleaner.backoff.ms", ge=0)
    log_cleaner_dedupe_buffer_size: int = Field(
        128 * 1024 * 1024, alias="log.cleaner.dedupe.buffer.size", ge=24
    )
    log_cleaner_min_compaction_lag_ms: int = Field(0, alias="log.cleaner.min.compaction.lag.ms", ge=0)
    log_cleaner_max_compaction_lag_ms: int = Field(LONG_MAX, alias="log.cleaner.max.compaction.lag.ms", ge=1)
    log_cleaner_delete_retention_ms: int = Field(24 * _HOUR_MS, alias="log.cleaner.delete.retention.ms", ge=0)
    log_cleaner_min_cleanable_ratio: float = Field(0.5, alias="log.cleaner.min.cleanable.ratio", ge=0, le=1)
    log_segment_delete_delay_ms: int = Field(60_000, alias="log.segment.delete.delay.ms", ge=0)
    log_flush_interval_messages: int = Field(LONG_MAX, alias="log.flush.interval.messages", ge=1)
    log_flush_offset_checkpoint_interval_ms: int = Field(
        60_000, alias="log.flush.offset.checkpoint.interval.ms", ge=0
    )
    log_flush_start_offset_checkpoint_interval_ms: int = Field(
        60_000, alias="log.flush.start.offset.checkpoint.interval.ms", ge=0
    )
    log_message_timestamp_type: Literal["CreateTime", "LogAppendTime"] = Field(
        "CreateTime", alias="log.message.timestamp.type"
    )
    message_max_bytes: int = Field(1_048_588, alias="message.max.bytes", ge=0)
    num_partitions: int = Field(1, alias="num.partitions", ge=1)
    auto_create_topics_enable: bool = Field(True, alias="auto.create.topics.enable")
    offsets_topic_num_partitions: int = Field(50, alias="offsets.topic.num.partitions", ge=1)
    # KIP-68, broker side: consumed retention is off unless enabled; the time may be given in ms,
    # minutes or hours (ms wins, then minutes, as for log.retention.*).
    log_retention_commitoffset_enable: bool = Field(False, alias="log.retention.commitoffset.enable")
    log_retention_commitoffset_hours: int | None = Field(
        None, alias="log.retention.commitoffset.hours", ge=-1
    )
    log_retention_commitoffset_minutes: int | None = Field(
        None, alias="log.retention.commitoffset.minutes", ge=-1
    )
    log_retention_commitoffset_ms: int | None = Field(None, alias="log.retention.commitoffset.ms", ge=-1)
    tombstone_null_value_enable: bool = Field(True, alias="tombstone.null.value.enable")

    @model_validator(mode="after")
    def _check(self) -> BrokerConfig:
        TopicConfig.parse(self.topic_defaults())  # surfaces bad policy / commitoffset > retention early
        return self

    @staticmethod
    def _ms(ms: int | None, minutes: int | None, hours: int | None) -> int | None:
        if ms is not None:
            return ms
        if minutes is not None:
            return minutes * _MINUTE_MS if minutes >= 0 else -1
        if hours is not None:
            return hours * _HOUR_MS if hours >= 0 else -1
        return None

    @property
    def retention_ms(self) -> int:
        ms = self._ms(self.log_retention_ms, self.log_retention_minutes, self.log_retention_hours)
        return -1 if ms is None else ms

    @property
    def retention_commitoffset_ms(self) -> int:
        """Broker default of retention.commitoffset.ms: -1 unless log.retention.commitoffset.enable."""
        if not self.log_retention_commitoffset_enable:
            return -1
        ms = self._ms(
            self.log_retention_commitoffset_ms,
            self.log_retention_commitoffset_minutes,
            self.log_retention_commitoffset_hours,
        )
        return -1 if ms is None else ms

    def topic_defaults(self) -> dict[str, Any]:
        """The topic-level view of the broker settings (what a topic without overrides gets)."""
        props = self.to_props()
        out: dict[str, Any] = {topic: props[broker] for broker, topic in _TOPIC_SYNONYMS.items()}
        out["retention.ms"] = self.retention_ms
        out["segment.ms"] = (
            self.log_roll_ms if self.log_roll_ms is not None else self.log_roll_hours * _HOUR_MS
        )
        out["retention.commitoffset.ms"] = self.retention_commitoffset_ms
        return out

    def topic_config(self, overrides: Mapping[str, Any]) -> TopicConfig:
        return TopicConfig.parse(overrides, self.topic_defaults())

    @classmethod
    def parse(cls, props: Mapping[str, Any]) -> BrokerConfig:
        """Validate broker settings; raises InvalidConfigError naming every bad key."""
        try:
            return cls.model_validate(dict(props))
        except ValidationError as exc:
            raise _raise_invalid(exc, "broker") from None
        except InvalidConfigError as exc:
            raise InvalidConfigError(f"broker defaults: {exc}") from None
