"""The side-effect-free decisions of the handlers: the Consumed guard, DeleteRecords plans, config plans."""

from __future__ import annotations

from ebb_operator.handlers.compaction_config import Claim, plan_topic, same_value, winner
from ebb_operator.handlers.consumed_guard import blocking_groups
from ebb_operator.handlers.delete_records import plan_partitions
from ebb_operator.kafka import (
    ConfigValue,
    GroupDescription,
    GroupMember,
    KafkaFailure,
    TopicConfigs,
    TopicPartition,
)
from ebb_operator.models.compaction_config import CompactionConfigSpec
from ebb_operator.models.delete_records import DeleteRecordsSpec

T0, T1 = TopicPartition("orders", 0), TopicPartition("orders", 1)


def test_guard_names_groups_behind_the_cut_and_ignores_groups_of_other_topics() -> None:
    committed = {"billing": {T0: 40, T1: 10}, "audit": {T0: 100}, "other": {TopicPartition("logs", 0): 1}}
    assert blocking_groups(T0, 50, committed, {}) == ["billing (committed 40)"]
    assert blocking_groups(T0, 40, committed, {}) == []
    # audit reads the topic but never committed partition 1: it holds it (fail closed).
    assert blocking_groups(T1, 5, committed, {}) == ["audit (no committed offset)"]


def test_guard_counts_a_group_assigned_the_topic_without_any_commit() -> None:
    member = GroupMember("m1", "c1", "/127.0.0.1", (T0,))
    descriptions = {"fresh": GroupDescription("fresh", "STABLE", (member,))}
    assert blocking_groups(T0, 1, {}, descriptions) == ["fresh (no committed offset)"]


def test_plan_resolves_high_watermark_and_refuses_what_it_must() -> None:
    spec = DeleteRecordsSpec.model_validate(
        {
            "partitions": [
                {"topic": "orders", "partition": 0, "offset": -1},
                {"topic": "orders", "partition": 1, "offset": 99},
                {"topic": "orders", "partition": 2, "offset": 5},
                {"topic": "gone", "partition": 0, "offset": 5},
            ]
        }
    )
    t2, gone = TopicPartition("orders", 2), TopicPartition("gone", 0)
    plan = plan_partitions(
        spec,
        log_starts={T0: 3, T1: 0, t2: 0},
        high_watermarks={T0: 20, T1: 50, t2: 10},
        lookup_errors={gone: KafkaFailure("UNKNOWN_TOPIC_OR_PART", "no such topic", False)},
        blockers={t2: ["billing (committed 2)"]},
    )
    by_tp = {(r.topic, r.partition): r for r in plan}
    assert by_tp["orders", 0].requested_offset == 20 and by_tp["orders", 0].error is None
    assert by_tp["orders", 0].log_start_before == 3
    assert "OFFSET_OUT_OF_RANGE" in (by_tp["orders", 1].error or "")
    assert by_tp["orders", 2].error == "GuardRefused: not consumed past 5 by billing (committed 2)"
    assert "UNKNOWN_TOPIC_OR_PART" in (by_tp["gone", 0].error or "")


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
