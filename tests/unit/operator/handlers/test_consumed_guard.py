"""The Consumed guard names the groups behind a cut and fails closed on missing commits."""

from __future__ import annotations

from ebb_operator.handlers.consumed_guard import blocking_groups
from ebb_operator.kafka import GroupDescription, GroupMember, TopicCommits, TopicPartition

T0, T1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
COMMITS = {
    "billing": [TopicCommits("orders", [0, 1], [40, 10])],
    "audit": [TopicCommits("orders", [0], [100])],  # never committed partition 1
    "other": [TopicCommits("logs", [0], [1])],
}


def test_guard_names_groups_behind_the_cut_and_ignores_groups_of_other_topics() -> None:
    assert blocking_groups({T0: 50}, COMMITS, {}) == {T0: ["billing (committed 40)"]}
    assert blocking_groups({T0: 40}, COMMITS, {}) == {T0: []}
    # audit reads the topic but never committed partition 1: it holds it (fail closed), even at offset 0.
    assert blocking_groups({T1: 5}, COMMITS, {}) == {T1: ["audit (no committed offset)"]}
    assert blocking_groups({T1: 0}, COMMITS, {}) == {T1: ["audit (no committed offset)"]}


def test_every_partition_of_one_check_gets_its_own_blockers_in_group_order() -> None:
    targets = {T0: 101, T1: 10, TopicPartition("logs", 0): 2}
    assert blocking_groups(targets, COMMITS, {}) == {
        T0: ["audit (committed 100)", "billing (committed 40)"],
        T1: ["audit (no committed offset)"],
        TopicPartition("logs", 0): ["other (committed 1)"],
    }


def test_guard_counts_a_group_assigned_the_topic_without_any_commit() -> None:
    member = GroupMember("m1", "c1", "/127.0.0.1", (T0,))
    descriptions = {"fresh": GroupDescription("fresh", "STABLE", (member,))}
    assert blocking_groups({T0: 1}, {}, descriptions) == {T0: ["fresh (no committed offset)"]}
    # assigned partition 0 only, yet it reads the topic: partition 1 is held too
    assert blocking_groups({T1: 1}, {}, descriptions) == {T1: ["fresh (no committed offset)"]}


def test_consumed_by_looks_only_at_the_named_groups() -> None:
    member = GroupMember("m1", "c1", "/127.0.0.1", (T1,))
    descriptions = {"fresh": GroupDescription("fresh", "STABLE", (member,))}
    targets = {T0: 50, T1: 5}
    assert blocking_groups(targets, COMMITS, descriptions) == {
        T0: ["billing (committed 40)", "fresh (no committed offset)"],
        T1: ["audit (no committed offset)", "fresh (no committed offset)"],
    }
    assert blocking_groups(targets, COMMITS, descriptions, only=["audit", "other"]) == {
        T0: [],
        T1: ["audit (no committed offset)"],
    }


def test_a_group_a_budget_evicted_is_not_waited_for_on_that_partition_only() -> None:
    """EvictSlowest's cut passes billing's commit on orders-0 on purpose: the guard lets that go, and still
    waits for billing on orders-1 and for every other named group on orders-0."""
    targets = {T0: 101, T1: 20}
    evicted = {T0: ["billing"]}
    assert blocking_groups(targets, COMMITS, {}, only=["billing", "audit"], exempt=evicted) == {
        T0: ["audit (committed 100)"],
        T1: ["audit (no committed offset)", "billing (committed 10)"],
    }
    # The exemption names groups, not positions: a group the budget did not evict is never excused.
    assert blocking_groups({T0: 50}, COMMITS, {}, only=["billing"], exempt={T0: ["audit"]}) == {
        T0: ["billing (committed 40)"]
    }
