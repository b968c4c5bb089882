"""Dynamic broker configs: precedence, what may change, persistence, and the engine taking them at once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ebb_broker.dynamic_config import (
    FILE_NAME,
    ConfigSource,
    DynamicBrokerConfig,
    DynamicConfigError,
    Level,
    Synonym,
)
from ebb_broker.log import LogManager
from ebb_broker.log.errors import InvalidConfigError


def test_precedence_is_broker_then_default_then_static_then_kafkas_default(tmp_path: Path) -> None:
    dyn = DynamicBrokerConfig(tmp_path, {"log.segment.bytes": "2000000"})
    assert dyn.source("log.segment.bytes") is ConfigSource.STATIC_BROKER_CONFIG
    dyn.alter(Level.DEFAULT, {"log.segment.bytes": "3000000"})
    assert dyn.current.log_segment_bytes == 3_000_000
    dyn.alter(Level.BROKER, {"log.segment.bytes": "4000000"})
    assert dyn.current.log_segment_bytes == 4_000_000
    assert dyn.synonyms("log.segment.bytes") == [
        Synonym("log.segment.bytes", "4000000", ConfigSource.DYNAMIC_BROKER_CONFIG),
        Synonym("log.segment.bytes", "3000000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        Synonym("log.segment.bytes", "2000000", ConfigSource.STATIC_BROKER_CONFIG),
        Synonym("log.segment.bytes", 1024**3, ConfigSource.DEFAULT_CONFIG),
    ]
    dyn.alter(Level.BROKER, {})
    assert dyn.current.log_segment_bytes == 3_000_000


def test_log_retention_ms_set_dynamically_wins_over_static_hours(tmp_path: Path) -> None:
    """Kafka's synonyms: log.retention.ms beats log.retention.hours whatever level sets it; the topic
    default follows and says where it comes from."""
    dyn = DynamicBrokerConfig(tmp_path, {"log.retention.hours": "1"})
    assert dyn.current.topic_defaults()["retention.ms"] == 3_600_000
    assert dyn.topic_source("retention.ms") is ConfigSource.STATIC_BROKER_CONFIG
    dyn.alter(Level.DEFAULT, {"log.retention.ms": "60000"})
    assert dyn.current.topic_defaults()["retention.ms"] == 60_000
    assert dyn.topic_source("retention.ms") is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    assert dyn.topic_source("segment.bytes") is ConfigSource.DEFAULT_CONFIG


@pytest.mark.parametrize(
    ("props", "message"),
    [
        (
            {"offsets.topic.num.partitions": "7"},
            "Cannot update these configs dynamically: [offsets.topic.num.partitions]",
        ),
        ({"log.retention.hours": "2"}, "Cannot update these configs dynamically: [log.retention.hours]"),
        ({"no.such.config": "1"}, "Cannot update these configs dynamically: [no.such.config]"),
        ({"log.retention.ms": "abc"}, "log.retention.ms"),
        ({"log.retention.bytes": "-5"}, "log.retention.bytes"),
    ],
)
def test_refused_changes_change_nothing(tmp_path: Path, props: dict[str, str], message: str) -> None:
    dyn = DynamicBrokerConfig(tmp_path, {})
    dyn.alter(Level.DEFAULT, {"log.segment.bytes": "3000000"})
    with pytest.raises(DynamicConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        dyn.alter(Level.DEFAULT, {"log.segment.bytes": "3000000", **props})
    assert dyn.dynamic(Level.DEFAULT) == {"log.segment.bytes": "3000000"}
    assert json.loads((tmp_path / FILE_NAME).read_text())["default"] == {"log.segment.bytes": "3000000"}


def test_dynamic_values_survive_a_restart_and_a_bad_file_is_a_clear_error(tmp_path: Path) -> None:
    DynamicBrokerConfig(tmp_path, {}).alter(Level.DEFAULT, {"log.retention.ms": "60000"})
    assert DynamicBrokerConfig(tmp_path, {}).current.topic_defaults()["retention.ms"] == 60_000
    (tmp_path / FILE_NAME).write_text('{"version": 1, "default": {"num.partitions": "3"}, "broker": {}}')
    with pytest.raises(InvalidConfigError, match="non-dynamic keys"):
        DynamicBrokerConfig(tmp_path, {})
    (tmp_path / FILE_NAME).write_text("not json")
    with pytest.raises(InvalidConfigError, match="not a dynamic broker config file"):
        DynamicBrokerConfig(tmp_path, {})


def test_the_engine_takes_new_defaults_at_once_except_where_a_topic_overrides(tmp_path: Path) -> None:
    dyn = DynamicBrokerConfig(tmp_path, {})
    logs = LogManager.open(tmp_path / "data", dyn.current.log_manager_config())
    try:
        logs.create_topic("plain", 1, {})
        logs.create_topic("own", 1, {"retention.ms": "5000"})
        logs.update_defaults(dyn.alter(Level.DEFAULT, {"log.retention.ms": "60000"}).log_manager_config())
        assert logs.topic_config("plain").retention_ms == 60_000
        assert logs.get_log("plain", 0).config.retention_ms == 60_000
        assert logs.topic_config("own").retention_ms == 5_000
        logs.create_topic("later", 1, {})
        assert logs.topic_config("later").retention_ms == 60_000
    finally:
        logs.close()
