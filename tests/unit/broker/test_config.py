"""BrokerConfig / LogConfig: Kafka's names and defaults, clear errors, KIP-68 and KIP-87 additions."""

from __future__ import annotations

import re

import pytest

from ebb_broker.config import BrokerConfig
from ebb_broker.log.errors import InvalidConfigError
from ebb_broker.log.log_config import LONG_MAX, LogConfig


def test_kafka_defaults() -> None:
    t = BrokerConfig.parse({}).topic_config({})
    assert (t.cleanup_policy, t.retention_ms, t.retention_bytes) == ("delete", 604_800_000, -1)
    assert (t.segment_bytes, t.segment_ms, t.segment_index_bytes) == (1 << 30, 604_800_000, 10 << 20)
    assert (t.index_interval_bytes, t.min_compaction_lag_ms, t.max_compaction_lag_ms) == (4096, 0, LONG_MAX)
    assert (t.delete_retention_ms, t.min_cleanable_dirty_ratio, t.file_delete_delay_ms) == (
        86_400_000,
        0.5,
        60_000,
    )
    assert t.retention_commitoffset_ms == -1 and t.tombstone_null_value_enable is True


def test_broker_settings_become_topic_defaults() -> None:
    b = BrokerConfig.parse(
        {
            "log.retention.minutes": "5",
            "log.roll.ms": "1000",
            "log.cleanup.policy": "compact",
            "log.segment.delete.delay.ms": "0",
            "log.retention.commitoffset.enable": "true",
            "log.retention.commitoffset.hours": "0",
        }
    )
    t = b.topic_config({})
    assert (t.retention_ms, t.segment_ms, t.cleanup_policy, t.file_delete_delay_ms) == (
        300_000,
        1000,
        "compact",
        0,
    )
    assert t.retention_commitoffset_ms == 0
    assert b.topic_config({"retention.ms": "7"}).retention_ms == 7
    assert BrokerConfig.parse({"log.retention.ms": "5", "log.retention.hours": "1"}).retention_ms == 5


def test_commitoffset_is_off_unless_enabled() -> None:
    b = BrokerConfig.parse({"log.retention.commitoffset.ms": "1000"})
    assert b.topic_config({}).retention_commitoffset_ms == -1
    assert b.topic_config({"retention.commitoffset.ms": "10"}).retention_commitoffset_ms == 10


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"retention.mss": "1"}, "unknown topic config 'retention.mss'"),
        ({"retention.ms": "soon"}, "'retention.ms'"),
        ({"cleanup.policy": "archive"}, "cleanup.policy must be"),
        ({"min.cleanable.dirty.ratio": "1.5"}, "'min.cleanable.dirty.ratio'"),
        ({"retention.ms": "1000", "retention.commitoffset.ms": "5000"}, "may not exceed retention.ms"),
        ({"message.timestamp.type": "WallClock"}, "'message.timestamp.type'"),
        ({"tombstone.null.value.enable": "maybe"}, "'tombstone.null.value.enable'"),
    ],
)
def test_bad_topic_configs_name_the_key(props: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigError) as exc:
        LogConfig.parse(props)
    assert message in str(exc.value)


def test_bad_broker_configs() -> None:
    with pytest.raises(InvalidConfigError, match=re.escape("unknown broker config 'log.retention.days'")):
        BrokerConfig.parse({"log.retention.days": "1"})
    with pytest.raises(InvalidConfigError, match="may not exceed"):
        BrokerConfig.parse(
            {
                "log.retention.ms": "10",
                "log.retention.commitoffset.enable": "true",
                "log.retention.commitoffset.ms": "20",
            }
        )


def test_commitoffset_allowed_with_infinite_retention_and_max_segment_ms() -> None:
    t = LogConfig.parse({"retention.ms": "-1", "retention.commitoffset.ms": "5000"})
    assert t.retention_commitoffset_ms == 5000
    c = LogConfig.parse(
        {"cleanup.policy": "compact,delete", "segment.ms": "1000", "max.compaction.lag.ms": "10"}
    )
    assert c.compact and c.delete and c.max_segment_ms == 10


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"retention.ms": "99999999999999999999999"}, "Not a number of type LONG"),
        ({"retention.ms": str(2**63)}, "Not a number of type LONG"),
        ({"segment.bytes": str(2**31)}, "Not a number of type INT"),
        ({"max.message.bytes": "1e6"}, "Not a number of type INT"),
    ],
)
def test_numbers_are_range_checked_as_kafkas_config_def(props: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigError) as exc:
        LogConfig.parse(props)
    assert message in str(exc.value)
    assert LogConfig.parse({"retention.ms": f" {2**63 - 1} "}).retention_ms == 2**63 - 1


def test_broker_numbers_and_connection_overrides_are_checked() -> None:
    with pytest.raises(InvalidConfigError, match="Not a number of type INT"):
        BrokerConfig.parse({"socket.request.max.bytes": str(2**31)})
    with pytest.raises(InvalidConfigError, match="host:count"):
        BrokerConfig.parse({"max.connections.per.ip.overrides": "10.0.0.1"})
    cfg = BrokerConfig.parse({"max.connections.per.ip.overrides": "10.0.0.1:5, db.local:2"})
    assert cfg.connections_per_ip_overrides == {"10.0.0.1": 5, "db.local": 2}
