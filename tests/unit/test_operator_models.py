"""The models accept what a user writes in YAML and refuse bad input with a message naming the field."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError

from ebb_operator.models.common import (
    Condition,
    ConditionStatus,
    TopicSelector,
    duration_ms,
    parse_duration,
    set_condition,
)
from ebb_operator.models.compaction_config import CompactionConfigSpec
from ebb_operator.models.delete_records import (
    DeleteRecordsSpec,
    Guard,
    Phase,
    phase_from_conditions,
)
from ebb_operator.models.plan import PlanSummary
from ebb_operator.models.retention_policy import Engine, RetentionPolicySpec


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90s", timedelta(seconds=90)),
        ("15m", timedelta(minutes=15)),
        ("1h30m", timedelta(minutes=90)),
        ("7d", timedelta(days=7)),
        ("1d2h3m4s", timedelta(days=1, hours=2, minutes=3, seconds=4)),
    ],
)
def test_durations_parse(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "5", "1w", "30m1h", "1.5h", "h"])
def test_bad_durations_are_refused_with_the_accepted_form(text: str) -> None:
    with pytest.raises(ValueError, match="units d, h, m, s"):
        parse_duration(text)


def test_duration_ms_is_kafkas_unit() -> None:
    assert duration_ms("1h") == 3_600_000


def test_delete_records_defaults_and_camel_case() -> None:
    spec = DeleteRecordsSpec.model_validate(
        {
            "partitions": [{"topic": "orders", "partition": 0, "offset": -1}],
            "dryRun": True,
            "cluster": {"bootstrapServers": "a:9092,b:9093"},
        }
    )
    assert spec.guard is Guard.CONSUMED
    assert spec.timeout == "30s"
    assert spec.dry_run is True
    assert spec.to_k8s()["partitions"] == [{"topic": "orders", "partition": 0, "offset": -1}]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"partitions": []}, "partitions"),
        ({"partitions": [{"topic": "bad topic", "partition": 0, "offset": 1}]}, "topic"),
        ({"partitions": [{"topic": "t", "partition": -1, "offset": 1}]}, "partition"),
        ({"partitions": [{"topic": "t", "partition": 0, "offset": -2}]}, "offset"),
        ({"partitions": [{"topic": "t", "partition": 0, "offset": 1}], "guard": "Maybe"}, "guard"),
        ({"partitions": [{"topic": "t", "partition": 0, "offset": 1}], "timeout": "soon"}, "timeout"),
        ({"partitions": [{"topic": "t", "partition": 0, "offset": 1}], "dryrun": True}, "dryrun"),
        (
            {
                "partitions": [{"topic": "t", "partition": 0, "offset": 1}],
                "cluster": {"bootstrapServers": "x"},
            },
            "bootstrapServers",
        ),
    ],
)
def test_bad_delete_records_specs_name_the_field(body: dict, field: str) -> None:
    with pytest.raises(ValidationError) as info:
        DeleteRecordsSpec.model_validate(body)
    assert field in str(info.value)


def test_phase_is_derived_from_ready() -> None:
    assert phase_from_conditions([]) is Phase.PENDING
    running = set_condition([], "Ready", ConditionStatus.UNKNOWN, "Running", "deleting", 1)
    assert phase_from_conditions(running) is Phase.RUNNING
    done = set_condition(running, "Ready", ConditionStatus.TRUE, "Succeeded", "done", 1)
    assert phase_from_conditions(done) is Phase.SUCCEEDED
    partial = set_condition(running, "Ready", ConditionStatus.FALSE, "PartiallyFailed", "1 of 2", 1)
    assert phase_from_conditions(partial) is Phase.PARTIALLY_FAILED
    failed = set_condition(running, "Ready", ConditionStatus.FALSE, "GuardRefused", "group g", 1)
    assert phase_from_conditions(failed) is Phase.FAILED


def test_transition_time_moves_only_when_status_changes() -> None:
    first = [Condition(type="Ready", status=ConditionStatus.FALSE, reason="A", last_transition_time="t0")]
    same = set_condition(first, "Ready", ConditionStatus.FALSE, "B", "still false", 2)
    assert same[0].last_transition_time == "t0" and same[0].reason == "B" and same[0].observed_generation == 2
    flipped = set_condition(first, "Ready", ConditionStatus.TRUE, "Applied", "", 2)
    assert flipped[0].last_transition_time != "t0"


def test_condition_reason_must_be_camel_case() -> None:
    with pytest.raises(ValidationError, match="reason"):
        Condition(type="Ready", status=ConditionStatus.TRUE, reason="not camel")


def test_topic_selector_matches_whole_names() -> None:
    sel = TopicSelector(include=["orders.*", "audit"], exclude=["orders-dlq"])
    assert sel.matches("orders-eu") and sel.matches("audit")
    assert not sel.matches("orders-dlq") and not sel.matches("audit-old") and not sel.matches("x-orders")


@pytest.mark.parametrize("regex", ["(unclosed", "(?=look)", r"(a)\1"])
def test_regexes_outside_re2_are_refused(regex: str) -> None:
    with pytest.raises(ValidationError, match="regex"):
        TopicSelector(include=[regex])


def test_compaction_config_maps_to_kafka_topic_configs() -> None:
    spec = CompactionConfigSpec.model_validate(
        {
            "topics": {"include": ["state-.*"]},
            "cleanupPolicy": "compact,delete",
            "minCompactionLag": "1h",
            "maxCompactionLag": "1d",
            "tombstones": {"retention": "10m", "nullValueIsTombstone": False},
            "minCleanableDirtyRatio": 0.3,
        }
    )
    assert spec.topic_configs() == {
        "cleanup.policy": "compact,delete",
        "min.compaction.lag.ms": "3600000",
        "max.compaction.lag.ms": "86400000",
        "delete.retention.ms": "600000",
        "tombstone.null.value.enable": "false",
        "min.cleanable.dirty.ratio": "0.3",
    }
    assert CompactionConfigSpec.model_validate({"topics": {"include": ["x"]}}).topic_configs() == {
        "cleanup.policy": "compact"
    }


def test_compaction_config_refuses_unknown_policy_and_ratio_out_of_range() -> None:
    with pytest.raises(ValidationError, match="cleanupPolicy"):
        CompactionConfigSpec.model_validate({"topics": {"include": ["x"]}, "cleanupPolicy": "delete"})
    with pytest.raises(ValidationError, match="minCleanableDirtyRatio"):
        CompactionConfigSpec.model_validate({"topics": {"include": ["x"]}, "minCleanableDirtyRatio": 1.5})


def test_retention_policy_defaults() -> None:
    spec = RetentionPolicySpec.model_validate({"topics": {"include": ["events"]}, "consumedRetention": "1h"})
    assert spec.consumers.include == [".*"] and not spec.consumers.exclusive
    assert spec.schedule.interval == "1h"
    assert spec.analysis.engine is Engine.LOCAL
    assert spec.history_limit == 3


def test_retention_policy_requires_consumed_retention() -> None:
    with pytest.raises(ValidationError, match="consumedRetention"):
        RetentionPolicySpec.model_validate({"topics": {"include": ["events"]}})


def test_plan_summary_round_trips_in_camel_case() -> None:
    summary = PlanSummary(
        topics=2, partitions=6, deletable_records=100, reclaimable_bytes=4096, held_partitions=1
    )
    assert PlanSummary.model_validate(summary.to_k8s()) == summary
    assert summary.to_k8s()["reclaimableBytes"] == 4096
