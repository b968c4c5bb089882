"""The Consumed guard names the groups behind a cut and fails closed on missing commits."""

from __future__ import annotations

from ebb_operator.handlers.consumed_guard import blocking_groups
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
