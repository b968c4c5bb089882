"""A topic's configuration (Kafka's LogConfig): Kafka's names and defaults, validated by pydantic.

The engine's only configuration type. Values arrive as strings (CreateTopics, IncrementalAlterConfigs,
the broker's `--config` defaults) and are parsed here once; every unknown key or bad value raises
``InvalidConfigError`` naming the key, and nothing is applied. Ebb adds KIP-68's consumed retention
(``retention.commitoffset.ms`` and the groups it counts, ``retention.commitoffset.groups``) and KIP-87's
``tombstone.null.value.enable``. The broker-wide settings
(``ebb_broker.config``) build the defaults a topic without overrides gets.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from ebb_broker.log.errors import InvalidConfigError, shown, shown_all

LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)
INT_MAX = 2**31 - 1
INT_MIN = -(2**31)
HOUR_MS = 3_600_000
MINUTE_MS = 60_000

_INTEGER = re.compile(r"[+-]?[0-9]+")


def _kafka_integer(type_name: str, low: int, high: int) -> Callable[[Any], Any]:
    """Kafka's ConfigDef parsing of INT and LONG: Java's parseInt/parseLong on the trimmed string, so a
    value outside the type's range is refused ("Not a number of type LONG") instead of stored."""

    def parse(value: Any) -> Any:
        if isinstance(value, str):
            text = value.strip()
            if not _INTEGER.fullmatch(text):
                raise ValueError(f"Not a number of type {type_name}")
            value = int(text)
        if isinstance(value, bool):
            raise ValueError(f"Not a number of type {type_name}")
        if isinstance(value, int) and not low <= value <= high:
            raise ValueError(f"Not a number of type {type_name}")
        return value

    return parse


KafkaInt = Annotated[int, BeforeValidator(_kafka_integer("INT", INT_MIN, INT_MAX))]
"""A config of Kafka's type INT (32-bit)."""
KafkaLong = Annotated[int, BeforeValidator(_kafka_integer("LONG", LONG_MIN, LONG_MAX))]
"""A config of Kafka's type LONG (64-bit)."""


def invalid_config(exc: ValidationError, kind: str) -> InvalidConfigError:
    parts = []
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"]) or "(config)"
        if err["type"] == "extra_forbidden":
            parts.append(f"unknown {kind} config {shown(key)}")
        else:
            msg = str(err["msg"]).removeprefix("Value error, ")
            parts.append(f"{kind} config {shown(key)}: {msg} (got {shown(err.get('input'))})")
    return InvalidConfigError(shown_all(parts, separator="; "))


class KafkaStyleConfig(BaseModel):
    """Kafka-named keys (aliases), frozen, every key known: the base of topic and broker configs."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, validate_default=True)

    @classmethod
    def keys(cls) -> set[str]:
        """Every accepted Kafka-style key."""
        return {f.alias or name for name, f in cls.model_fields.items()}

    def to_props(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True)


class LogConfig(KafkaStyleConfig):
    """Effective configuration of one topic: broker defaults overlaid with the topic's overrides."""

    cleanup_policy: str = Field("delete", alias="cleanup.policy")
    retention_ms: KafkaLong = Field(7 * 24 * HOUR_MS, alias="retention.ms", ge=-1)
    retention_bytes: KafkaLong = Field(-1, alias="retention.bytes", ge=-1)
    segment_bytes: KafkaInt = Field(1024**3, alias="segment.bytes", ge=14)
    segment_ms: KafkaLong = Field(7 * 24 * HOUR_MS, alias="segment.ms", ge=1)
    segment_index_bytes: KafkaInt = Field(10 * 1024 * 1024, alias="segment.index.bytes", ge=12)
    index_interval_bytes: KafkaInt = Field(4096, alias="index.interval.bytes", ge=0)
    min_compaction_lag_ms: KafkaLong = Field(0, alias="min.compaction.lag.ms", ge=0)
    max_compaction_lag_ms: KafkaLong = Field(LONG_MAX, alias="max.compaction.lag.ms", ge=1)
    delete_retention_ms: KafkaLong = Field(24 * HOUR_MS, alias="delete.retention.ms", ge=0)
    min_cleanable_dirty_ratio: float = Field(0.5, alias="min.cleanable.dirty.ratio", ge=0.0, le=1.0)
    file_delete_delay_ms: KafkaLong = Field(60_000, alias="file.delete.delay.ms", ge=0)
    message_timestamp_type: Literal["CreateTime", "LogAppendTime"] = Field(
        "CreateTime", alias="message.timestamp.type"
    )
    # KIP-937: how far a CreateTime record timestamp may lie before / after the broker's clock.
    message_timestamp_before_max_ms: KafkaLong = Field(
        LONG_MAX, alias="message.timestamp.before.max.ms", ge=0
    )
    message_timestamp_after_max_ms: KafkaLong = Field(HOUR_MS, alias="message.timestamp.after.max.ms", ge=0)
    max_message_bytes: KafkaInt = Field(1_048_588, alias="max.message.bytes", ge=0)
    flush_messages: KafkaLong = Field(LONG_MAX, alias="flush.messages", ge=1)
    flush_ms: KafkaLong = Field(LONG_MAX, alias="flush.ms", ge=0)
    min_insync_replicas: KafkaInt = Field(1, alias="min.insync.replicas", ge=1, le=1)
    compression_type: Literal["producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"] = Field(
        "producer", alias="compression.type"
    )
    # KIP-390: the levels the broker compresses with when compression.type recompresses a batch.
    compression_gzip_level: KafkaInt = Field(-1, alias="compression.gzip.level")
    compression_lz4_level: KafkaInt = Field(9, alias="compression.lz4.level", ge=1, le=17)
    compression_zstd_level: KafkaInt = Field(3, alias="compression.zstd.level", ge=-131072, le=22)
    # KIP-68: consumed retention; -1 disables it. Never longer than forced retention.
    retention_commitoffset_ms: KafkaLong = Field(-1, alias="retention.commitoffset.ms", ge=-1)
    # Ebb: the consumer groups (comma-separated) whose commits consumed retention counts; none named,
    # nothing is consumed. Any principal with READ on some group may commit for it, so counting every
    # group would let a reader delete what others have not read.
    retention_commitoffset_groups: str = Field("", alias="retention.commitoffset.groups")
    # KIP-87: whether a null value is a tombstone (the explicit marker always is).
    tombstone_null_value_enable: bool = Field(True, alias="tombstone.null.value.enable")

    @model_validator(mode="after")
    def _check(self) -> LogConfig:
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
        if self.compression_gzip_level != -1 and not 1 <= self.compression_gzip_level <= 9:
            raise ValueError(f"compression.gzip.level must be -1 or 1..9, got {self.compression_gzip_level}")
        if self.min_compaction_lag_ms > self.max_compaction_lag_ms:
            raise ValueError("min.compaction.lag.ms may not exceed max.compaction.lag.ms")
        return self

    @property
    def consumed_retention_groups(self) -> frozenset[str]:
        """The groups of ``retention.commitoffset.groups``."""
        return frozenset(g.strip() for g in self.retention_commitoffset_groups.split(",") if g.strip())

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
    def parse(cls, props: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> LogConfig:
        """Validate ``props`` over ``defaults``; raises InvalidConfigError naming every bad key."""
        try:
            return cls.model_validate({**(defaults or {}), **props})
        except ValidationError as exc:
            raise invalid_config(exc, "topic") from None


@dataclass(frozen=True)
class LogManagerConfig:
    """What the LogManager needs from the broker's settings: the defaults of every topic's LogConfig
    (the broker's ``log.*`` keys under their topic names), the cleaner's dedupe buffer and the partition
    limit."""

    topic_defaults: Mapping[str, Any] = field(default_factory=dict)
    cleaner_dedupe_buffer_size: int = 128 * 1024 * 1024
    # The most partitions the manager holds; creation past it raises PartitionLimitError.
    max_partitions: int = 10_000

    def topic_config(self, overrides: Mapping[str, Any]) -> LogConfig:
        """A topic's effective config: these defaults overlaid with its overrides (validated)."""
        return LogConfig.parse(overrides, self.topic_defaults)
