"""The CompactionConfig handler's decisions: what to set, what is unsupported, who owns a topic."""

from __future__ import annotations

from ebb_operator.handlers.compaction_config import Claim, plan_topic, same_value, winner
from ebb_operator.kafka import (
    ConfigValue,
    TopicConfigs,
)
from ebb_operator.models.compaction_config import CompactionConfigSpec


def test_same_value_compares_as_kafka_means_it() -> None:
    assert same_value("cleanup.policy", "delete,compact", "compact,delete")
    assert not same_value("cleanup.policy", "delete", "compact")
    assert same_value("min.cleanable.dirty.ratio", "0.30", "0.3")
    assert not same_value("min.compaction.lag.ms", None, "0")


def _configs(**values: str) -> TopicConfigs:
    return TopicConfigs(
        {k.replace("_", "."): ConfigValue(v, "DEFAULT_CONFIG", True) for k, v in values.items()}
    )


def test_plan_topic_sets_only_differing_keys_and_reports_missing_settings() -> None:
    described = _configs(cleanup_policy="delete", min_compaction_lag_ms="0")
    desired = {
        "cleanup.policy": "compact",
        "min.compaction.lag.ms": "0",
        "tombstone.null.value.enable": "false",
    }
    changes, unsupported = plan_topic("t", desired, described)
    assert changes == {"cleanup.policy": "compact"}
    assert unsupported == ["tombstone.null.value.enable"]


def _claim(owner: str, created: str, include: str, cluster: str = "<default>") -> Claim:
    spec = CompactionConfigSpec.model_validate({"topics": {"include": [include]}})
    return Claim(owner, created, cluster, spec)


def test_oldest_matching_compaction_config_wins_a_topic() -> None:
    me = _claim("ns/new", "2026-01-02T00:00:00Z", "state-.*")
    old = _claim("ns/old", "2026-01-01T00:00:00Z", "state-a")
    other_cluster = _claim("ns/older", "2025-01-01T00:00:00Z", ".*", cluster="k:9092")
    assert winner("state-a", me, [old, other_cluster]) is old
    assert winner("state-b", me, [old, other_cluster]) is me
