"""The Consumed guard names the groups behind a cut and fails closed on missing commits."""

from __future__ import annotations

from ebb_operator.handlers.consumed_guard import blocking_groups, readers
from ebb_operator.kafka import (
    GroupDescription,
    GroupMember,
    TopicPartition,
)

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


def test_readers_computed_once_give_the_same_answers_for_every_partition() -> None:
    """`readers` (done once per guard check of many partitions) matches the answer computed per call,
    and `only` (a ConsumedBy guard) leaves the other groups out."""
    member = GroupMember("m1", "c1", "/127.0.0.1", (T1,))
    descriptions = {"fresh": GroupDescription("fresh", "STABLE", (member,))}
    committed = {"billing": {T0: 40, T1: 10}, "audit": {T0: 100}, "other": {TopicPartition("logs", 0): 1}}
    assert readers(committed, descriptions) == {"orders": {"billing", "audit", "fresh"}, "logs": {"other"}}
    reading = readers(committed, descriptions, only=["audit", "other"])
    assert reading == {"orders": {"audit"}, "logs": {"other"}}
    for tp, offset in ((T0, 50), (T1, 5), (TopicPartition("logs", 0), 2)):
        for only in (None, ["audit", "other"]):
            computed = readers(committed, descriptions, only)
            assert blocking_groups(tp, offset, committed, descriptions, reading=computed) == blocking_groups(
                tp, offset, committed, descriptions, only
            )
    assert blocking_groups(T1, 5, committed, descriptions, reading=reading) == ["audit (no committed offset)"]
