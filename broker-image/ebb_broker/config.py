"""The broker's configuration with Kafka's names and defaults, validated by pydantic.

Values arrive as strings (``--config KEY=VALUE``) and are parsed here once; every unknown key or bad value
raises ``InvalidConfigError`` naming the key. Topic-level settings are the log engine's ``LogConfig``
(``ebb_broker.log.log_config``); the broker's ``log.*`` keys are their defaults (Kafka's synonyms). Ebb
adds KIP-68's ``log.retention.commitoffset.{enable,ms,minutes,hours}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from ebb_broker.log.errors import InvalidConfigError
from ebb_broker.log.log_config import (
    HOUR_MS,
    LONG_MAX,
    MINUTE_MS,
    KafkaStyleConfig,
    LogConfig,
    LogManagerConfig,
    invalid_config,
)

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
    "log.flush.interval.ms": "flush.ms",
    "log.message.timestamp.before.max.ms": "message.timestamp.before.max.ms",
    "log.message.timestamp.after.max.ms": "message.timestamp.after.max.ms",
    "compression.type": "compression.type",
    "compression.gzip.level": "compression.gzip.level",
    "compression.lz4.level": "compression.lz4.level",
    "compression.zstd.level": "compression.zstd.level",
    "tombstone.null.value.enable": "tombstone.null.value.enable",
}


class BrokerConfig(KafkaStyleConfig):
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
    log_cleaner_delete_retention_ms: int = Field(24 * HOUR_MS, alias="log.cleaner.delete.retention.ms", ge=0)
    log_cleaner_min_cleanable_ratio: float = Field(0.5, alias="log.cleaner.min.cleanable.ratio", ge=0, le=1)
    log_segment_delete_delay_ms: int = Field(60_000, alias="log.segment.delete.delay.ms", ge=0)
    log_flush_interval_messages: int = Field(LONG_MAX, alias="log.flush.interval.messages", ge=1)
    log_flush_interval_ms: int = Field(LONG_MAX, alias="log.flush.interval.ms", ge=0)
    # How often logs are checked for flush.ms. Kafka's default (Long.MAX) never checks, so flush.ms alone
    # does nothing there; Ebb checks every second, which makes flush.ms work by itself (docs/broker.md).
    log_flush_scheduler_interval_ms: int = Field(1000, alias="log.flush.scheduler.interval.ms", ge=1)
    log_message_timestamp_before_max_ms: int = Field(
        LONG_MAX, alias="log.message.timestamp.before.max.ms", ge=0
    )
    log_message_timestamp_after_max_ms: int = Field(HOUR_MS, alias="log.message.timestamp.after.max.ms", ge=0)
    compression_type: Literal["producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"] = Field(
        "producer", alias="compression.type"
    )
    compression_gzip_level: int = Field(-1, alias="compression.gzip.level")
    compression_lz4_level: int = Field(9, alias="compression.lz4.level")
    compression_zstd_level: int = Field(3, alias="compression.zstd.level")
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
        LogConfig.parse(self.topic_defaults())  # surfaces bad policy / commitoffset > retention early
        return self

    @staticmethod
    def _ms(ms: int | None, minutes: int | None, hours: int | None) -> int | None:
        if ms is not None:
            return ms
        if minutes is not None:
            return minutes * MINUTE_MS if minutes >= 0 else -1
        if hours is not None:
            return hours * HOUR_MS if hours >= 0 else -1
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
            self.log_roll_ms if self.log_roll_ms is not None else self.log_roll_hours * HOUR_MS
        )
        out["retention.commitoffset.ms"] = self.retention_commitoffset_ms
        return out

    def topic_config(self, overrides: Mapping[str, Any]) -> LogConfig:
        return LogConfig.parse(overrides, self.topic_defaults())

    def log_manager_config(self) -> LogManagerConfig:
        """The engine's view of these settings (the log engine imports nothing of the broker)."""
        return LogManagerConfig(self.topic_defaults(), self.log_cleaner_dedupe_buffer_size)

    @classmethod
    def parse(cls, props: Mapping[str, Any]) -> BrokerConfig:
        """Validate broker settings; raises InvalidConfigError naming every bad key."""
        try:
            return cls.model_validate(dict(props))
        except ValidationError as exc:
            raise invalid_config(exc, "broker") from None
        except InvalidConfigError as exc:
            raise InvalidConfigError(f"broker defaults: {exc}") from None
