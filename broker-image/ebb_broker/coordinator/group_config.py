"""The group coordinator's settings, with Kafka's defaults (the broker config gives them Kafka's names)."""

from __future__ import annotations

from dataclasses import dataclass

INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class GroupCoordinatorConfig:
    min_session_timeout_ms: int = 6_000  # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1_800_000  # group.max.session.timeout.ms
    max_size: int = INT_MAX  # group.max.size
    initial_rebalance_delay_ms: int = 3_000  # group.initial.rebalance.delay.ms
    new_member_join_timeout_ms: int = 300_000  # Kafka's NewMemberJoinTimeoutMs (not configurable)
    offsets_retention_ms: int = 7 * 24 * 3_600_000  # offsets.retention.minutes
    offsets_retention_check_interval_ms: int = 600_000  # offsets.retention.check.interval.ms
    offset_metadata_max_bytes: int = 4096  # offset.metadata.max.bytes
