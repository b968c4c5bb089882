"""Which groups a RetentionPolicy counts, and which topics it matches.

A counted group's commit bounds every cut of the topics it reads; a group that is not counted does not.
Getting this wrong either deletes what a group has not read or holds data forever.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ebb_operator.analysis.decide import classify, matched_topics, with_commit_times
from ebb_operator.analysis.policy import AnalysisPolicy
from ebb_operator.analysis.snapshot import GroupState, TopicState

NOW = 1_800_000_000_000
HOUR = 3_600_000


def policy(**kw: Any) -> AnalysisPolicy:
    base = AnalysisPolicy(namespace="ns", name="rp", consumed_retention_ms=HOUR, topics_include=("orders.*",))
    return dataclasses.replace(base, **kw)


def group(
    name: str,
    members: int | None = 1,
    topics: tuple[str, ...] = (),
    *,
    error: str | None = None,
    empty_since: int | None = None,
    last_commit: int | None = None,
) -> GroupState:
    return GroupState(
        name, "Stable" if members else "Empty", members, topics, error, empty_since, last_commit
    )


def counted(*groups: GroupState, pol: AnalysisPolicy | None = None) -> list[str]:
    return classify(groups, pol or policy(), NOW, ["orders"]).counted


def test_include_and_exclude_decide_which_groups_count() -> None:
    pol = policy(groups_include=("app-.*",), groups_exclude=("app-test",))
    roles = classify([group("app-1"), group("app-test"), group("other")], pol, NOW, ["orders"])
    assert (roles.counted, roles.outside) == (["app-1"], ["app-test", "other"])


def test_a_required_group_counts_outside_include_and_before_it_exists() -> None:
    roles = classify([group("app")], policy(groups_include=("app",), required=("audit",)), NOW, ["orders"])
    assert roles.counted == ["app", "audit"]
    assert roles.required == {"audit"}
    assert roles.expected == {"orders": {"audit"}}  # a required group reads every matched topic


def test_members_assigned_or_subscribed_to_a_topic_make_their_group_a_reader() -> None:
    roles = classify(
        [group("app", topics=("orders", "payments")), group("spy", topics=("orders",))],
        policy(groups_include=("app",)),
        NOW,
        ["orders"],
    )
    assert roles.expected == {"orders": {"app"}}
    assert roles.subscribed_outsiders == {"orders": {"spy"}}


def test_a_counted_group_that_could_not_be_described_is_failed() -> None:
    roles = classify(
        [group("app"), group("mystery", None, error="COORDINATOR_NOT_AVAILABLE")], policy(), NOW, []
    )
    assert (roles.counted, roles.failed) == (["app", "mystery"], ["mystery"])


def test_inactive_after_ignores_only_empty_groups_without_recent_commits() -> None:
    pol = policy(inactive_after_ms=2 * HOUR)
    old, recent = NOW - 10 * HOUR, NOW - HOUR
    assert counted(group("gone", 0, last_commit=old), pol=pol) == []
    assert counted(group("gone", 0, last_commit=recent), pol=pol) == ["gone"]
    assert counted(group("slow", 1, last_commit=old), pol=pol) == ["slow"]  # members: still reading
    assert counted(group("gone", 0, last_commit=old)) == ["gone"]  # no inactiveAfter: everyone counts
    # No commit time (the Admin API source): how long it has been seen empty decides.
    assert counted(group("gone", 0, empty_since=NOW - HOUR), pol=pol) == ["gone"]
    assert counted(group("gone", 0, empty_since=NOW - 3 * HOUR), pol=pol) == []
    assert counted(group("gone", 0), pol=pol) == ["gone"]  # never seen empty: counts


def test_groups_that_never_expire() -> None:
    pol = policy(inactive_after_ms=HOUR)
    gone = group("gone", 0, last_commit=NOW - 10 * HOUR)
    assert counted(gone, pol=dataclasses.replace(pol, required=("gone",))) == ["gone"]
    assert counted(gone, pol=dataclasses.replace(pol, discountable_groups=("mine",))) == ["gone"]
    described_badly = group("odd", 0, error="COORDINATOR_LOAD_IN_PROGRESS", last_commit=NOW - 10 * HOUR)
    assert counted(described_badly, pol=pol) == ["odd"]  # its members are unknown


def test_a_group_outside_the_grant_counts_whatever_exclude_says() -> None:
    pol = policy(groups_exclude=("theirs",), discountable_groups=("mine", "mine-.*"))
    assert counted(group("mine"), group("theirs"), pol=pol) == ["mine", "theirs"]


def test_topic_patterns_match_whole_names_and_internal_topics_never() -> None:
    topics = [
        TopicState(t, "delete", None)
        for t in ("orders", "orders-tmp", "payments", "__consumer_offsets", "x-orders")
    ]
    pol = policy(topics_include=("orders.*", "__.*"), topics_exclude=(".*-tmp",))
    assert [t.topic for t in matched_topics(topics, pol)] == ["orders"]


def test_groups_seen_only_in_commits_join_with_their_commit_times() -> None:
    groups = with_commit_times([group("app")], {"app": NOW - 1, "ghost": NOW - 2})
    assert [(g.group, g.members, g.last_commit) for g in groups] == [
        ("app", 1, NOW - 1),
        ("ghost", None, NOW - 2),
    ]
