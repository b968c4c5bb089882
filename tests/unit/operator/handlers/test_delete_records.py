"""The DeleteRecords handler's plan: -1 resolved, out-of-range and guarded partitions refused."""

from __future__ import annotations

from ebb_operator.handlers.delete_records import plan_partitions
from ebb_operator.kafka import (
    KafkaFailure,
    TopicPartition,
)
from ebb_operator.models.delete_records import DeleteRecordsSpec

T0, T1 = TopicPartition("orders", 0), TopicPartition("orders", 1)


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
