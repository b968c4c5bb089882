"""The DeleteRecords handler's plan (-1 resolved, out-of-range and guarded partitions refused) and how a
run's partitions make its outcome."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import kopf
import pytest

from ebb_operator.handlers.delete_records import _finish, _running, plan_partitions, refuse, stalled
from ebb_operator.kafka import (
    KafkaFailure,
    TopicPartition,
)
from ebb_operator.models.common import ConditionStatus
from ebb_operator.models.delete_records import DeleteRecordsSpec, DeleteRecordsStatus, PartitionResult
from ebb_operator.models.reasons import Reason

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
    assert by_tp["orders", 2].refused and not by_tp["orders", 1].refused
    assert "UNKNOWN_TOPIC_OR_PART" in (by_tp["gone", 0].error or "")


def _partition(
    p: int, *, cut: int | None = None, error: str | None = None, refused: bool = False
) -> PartitionResult:
    result = PartitionResult(topic="orders", partition=p, requested_offset=10, log_start_before=0)
    if cut is not None:
        result.low_watermark = cut
    if refused:
        refuse(result, ["billing (committed 2)"])
    elif error is not None:
        result.error = error
    return result


@pytest.mark.parametrize(
    ("partitions", "ready", "reason"),
    [
        ([_partition(0, cut=10), _partition(1, cut=10)], ConditionStatus.TRUE, Reason.SUCCEEDED),
        (
            [_partition(0, cut=10), _partition(1, refused=True)],
            ConditionStatus.FALSE,
            Reason.PARTIALLY_FAILED,
        ),
        (
            [_partition(0, refused=True), _partition(1, refused=True)],
            ConditionStatus.FALSE,
            Reason.GUARD_REFUSED,
        ),
        (
            [_partition(0, refused=True), _partition(1, error="NOT_LEADER_OR_FOLLOWER: x")],
            ConditionStatus.FALSE,
            Reason.KAFKA_ERROR,
        ),
        # A Kafka error that reads like a refusal is still a Kafka error: the reason comes from the type.
        ([_partition(0, error="GuardRefused: looks like one")], ConditionStatus.FALSE, Reason.KAFKA_ERROR),
    ],
    ids=["all-cut", "some-cut", "all-refused", "refused-and-failed", "text-is-not-a-type"],
)
def test_the_outcome_follows_what_became_of_each_partition(
    partitions: list[PartitionResult], ready: ConditionStatus, reason: Reason
) -> None:
    outcome = _finish(DeleteRecordsStatus(partitions=partitions))
    assert (outcome.ready, outcome.reason) == (ready, reason)


def test_a_refusal_survives_a_restart_of_the_operator() -> None:
    """Status written before a restart and read back after it: the refusal is a field, not a text."""
    written = DeleteRecordsStatus(partitions=[_partition(0, refused=True), _partition(1)]).to_k8s()
    assert written["partitions"][0]["refused"] is True
    reread = DeleteRecordsStatus.model_validate(written)  # partition 1 was still pending: refused now
    refuse(reread.partitions[1], ["audit (no committed offset)"])
    assert _finish(reread).reason is Reason.GUARD_REFUSED


# ---- a request nothing else will finish -----------------------------------------------------------------

NOW = datetime(2026, 11, 27, 18, 30, tzinfo=UTC)


def _request(
    phase: str | None, annotations: dict[str, str], created: str = "2026-11-27T18:00:00Z"
) -> kopf.Body:
    return kopf.Body(
        {
            "metadata": {"uid": "u-1", "creationTimestamp": created, "annotations": annotations},
            "spec": {},
            "status": {"phase": phase} if phase else {},
        }
    )


def _attempt(**fields: object) -> dict[str, str]:
    return {"ebb.dev/deleterecords-execute": json.dumps({"purpose": "create", "retries": 2, **fields})}


HANDLED = {"ebb.dev/last-handled-configuration": '{"spec": {}}'}


@pytest.mark.parametrize(
    ("phase", "annotations", "created", "expected"),
    [
        # kopf recorded the creation as handled, and an older writer's Pending is over the final status
        ("Pending", HANDLED, "2026-11-27T18:29:59Z", True),
        ("Succeeded", HANDLED, "2026-11-27T18:00:00Z", False),
        ("Failed", {}, "2026-11-27T18:00:00Z", False),
        # a retry kopf scheduled: not yet due, due a moment ago, due long ago and never taken up
        ("Pending", _attempt(delayed="2026-11-27T18:31:00+00:00"), "2026-11-27T18:00:00Z", False),
        ("Pending", _attempt(delayed="2026-11-27T18:29:30+00:00"), "2026-11-27T18:00:00Z", False),
        ("Pending", _attempt(delayed="2026-11-27T18:27:39+00:00"), "2026-11-27T18:00:00Z", True),
        # handled, with an attempt an older writer recorded since: its own to make while it is due, the
        # timer's once nobody made it (that writer stopped, and kopf here never calls a create handler again)
        (
            "Running",
            {**HANDLED, **_attempt(delayed="2026-11-27T18:29:50+00:00")},
            "2026-11-27T18:00:00Z",
            False,
        ),
        (
            "Pending",
            {**HANDLED, **_attempt(delayed="2026-11-27T18:27:39+00:00")},
            "2026-11-27T18:00:00Z",
            True,
        ),
        # nothing recorded: a new request kopf is about to run, or one it never took up
        (None, {}, "2026-11-27T18:29:40Z", False),
        (None, {}, "2026-11-27T18:20:00Z", True),
    ],
)
def test_a_request_is_resumed_by_the_timer_only_when_nothing_else_will_finish_it(
    phase: str | None, annotations: dict[str, str], created: str, expected: bool
) -> None:
    assert stalled(_request(phase, annotations, created), NOW) is expected


def test_a_request_this_process_runs_is_never_resumed_beside_it() -> None:
    body = _request("Pending", _attempt(delayed="2026-11-27T18:00:00+00:00"))
    _running.add("u-1")
    try:
        assert not stalled(body, NOW)
    finally:
        _running.discard("u-1")
    assert stalled(body, NOW)
