"""The retention plan on constructed inputs: every safety rule of DESIGN §4 and every policy option.

Each case builds the snapshot a real cluster would give (log start, high watermark, size, the offset at
now - consumedRetention, committed offsets, group descriptions) and asserts the offsets and holds a user
relies on: nothing a counted group has not read is ever below the cut.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest
from pyspark.sql import SparkSession

from ebb_operator.analysis import plan as P
from ebb_operator.analysis.policy import AnalysisPolicy
from ebb_operator.analysis.snapshot import GroupState, PartitionState, Snapshot, TopicState
from ebb_operator.models.plan import HoldReason

NOW = 1_800_000_000_000
HOUR = 3_600_000


def policy(**kw: Any) -> AnalysisPolicy:
    base = AnalysisPolicy(namespace="ns", name="rp", consumed_retention_ms=HOUR, topics_include=("orders.*",))
    return dataclasses.replace(base, **kw)


def part(
    topic: str,
    p: int,
    log_start: int = 0,
    hw: int = 100,
    size: int = 10_000,
    t: int | None = 80,
    error: str | None = None,
) -> tuple[Any, ...]:
    return (topic, p, log_start, hw, size, t, error)


def commit(group: str, topic: str, p: int, offset: int, ts: int | None = NOW - 60_000) -> tuple[Any, ...]:
    return (group, topic, p, offset, ts)


def group(
    name: str,
    members: int = 1,
    topics: Sequence[str] = (),
    error: str | None = None,
    state: str = "Stable",
    empty_since: int | None = None,
) -> tuple[Any, ...]:
    if members == 0 and empty_since is None:
        empty_since = NOW - 100 * HOUR  # empty for long, as the operator remembers it
    return (name, state, members, list(topics), error, empty_since)


def plan_of(
    spark: SparkSession,
    *,
    offsets: Sequence[tuple[Any, ...]],
    partitions: Sequence[tuple[Any, ...]],
    topics: Sequence[tuple[Any, ...]] = (("orders", "delete", None),),
    groups: Sequence[tuple[Any, ...]] = (),
    pol: AnalysisPolicy | None = None,
) -> P.PlanResult:
    snapshot = Snapshot(
        NOW,
        [PartitionState(*p) for p in partitions],
        [TopicState(*t) for t in topics],
        [GroupState(*g) for g in groups],
    )
    return P.plan_from_offsets(
        spark.createDataFrame(list(offsets), P.OFFSETS_SCHEMA), snapshot, pol or policy(), NOW
    )


def run(spark: SparkSession, **inputs: Any) -> dict[tuple[str, int], P.PartitionDecision]:
    return {(d.topic, d.partition): d for d in plan_of(spark, **inputs).decisions}


def test_cut_is_min_of_counted_commits_and_retention_offset(spark: SparkSession) -> None:
    plan = run(
        spark,
        offsets=[
            commit("a", "orders", 0, 50),
            commit("b", "orders", 0, 70),
            commit("a", "orders", 1, 90),
            commit("b", "orders", 1, 95),
        ],
        partitions=[part("orders", 0), part("orders", 1)],
        groups=[group("a", topics=["orders"]), group("b", topics=["orders"])],
    )
    p0, p1 = plan["orders", 0], plan["orders", 1]
    # p0: group a has read only up to 50, so nothing at or above 50 may go; a is named as the holder.
    assert (p0.status, p0.delete_before, p0.records, p0.limited_by) == (
        P.DELETABLE,
        50,
        50,
        P.LIMITED_BY_CONSUMERS,
    )
    assert (p0.reason, p0.blocking_groups) == (None, ["a"])
    assert p0.bytes == 5_000  # 10 000 bytes over 100 readable offsets, 50 of them go
    # p1: both groups are past 80, but records from offset 80 on are younger than consumedRetention.
    assert (p1.status, p1.delete_before, p1.records, p1.limited_by) == (
        P.DELETABLE,
        80,
        80,
        P.LIMITED_BY_RETENTION,
    )
    assert p1.blocking_groups == []


def test_groups_tied_at_the_minimum_are_all_named(spark: SparkSession) -> None:
    plan = run(
        spark,
        offsets=[commit("a", "orders", 0, 40), commit("b", "orders", 0, 40), commit("c", "orders", 0, 60)],
        partitions=[part("orders", 0)],
    )
    assert plan["orders", 0].delete_before == 40
    assert plan["orders", 0].blocking_groups == ["a", "b"]


def test_cut_never_exceeds_high_watermark(spark: SparkSession) -> None:
    # Everything is old (ListOffsets by time found no newer record: the snapshot gives the HW) and consumed.
    plan = run(spark, offsets=[commit("a", "orders", 0, 100)], partitions=[part("orders", 0, hw=100, t=100)])
    assert (plan["orders", 0].status, plan["orders", 0].delete_before) == (P.DELETABLE, 100)


def test_cut_at_or_below_log_start_deletes_nothing(spark: SparkSession) -> None:
    plan = run(spark, offsets=[commit("a", "orders", 0, 30)], partitions=[part("orders", 0, log_start=30)])
    r = plan["orders", 0]
    assert (r.status, r.reason, r.delete_before, r.records, r.bytes) == (
        P.UP_TO_DATE,
        P.NOTHING_TO_DELETE,
        None,
        0,
        0,
    )
    assert r.blocking_groups == ["a"]


def test_counted_group_without_commit_on_a_partition_holds_it(spark: SparkSession) -> None:
    plan = run(
        spark,
        offsets=[commit("a", "orders", 0, 50), commit("b", "orders", 0, 60), commit("a", "orders", 1, 50)],
        partitions=[part("orders", 0), part("orders", 1)],
    )
    assert plan["orders", 0].status == P.DELETABLE
    held = plan["orders", 1]
    assert (held.status, held.reason, held.blocking_groups) == (P.HELD, P.NO_COMMITTED_OFFSET, ["b"])
    assert (held.delete_before, held.records) == (None, 0)


def test_subscribed_group_that_never_committed_holds_the_topic(spark: SparkSession) -> None:
    plan = run(
        spark,
        offsets=[commit("a", "orders", 0, 50)],
        partitions=[part("orders", 0)],
        groups=[group("a", topics=["orders"]), group("new", topics=["orders"])],
    )
    r = plan["orders", 0]
    assert (r.status, r.reason, r.blocking_groups) == (P.HELD, P.NO_COMMITTED_OFFSET, ["new"])


@pytest.mark.parametrize("committed", [5, 101])
def test_committed_offset_outside_log_range_holds_and_is_reported(
    spark: SparkSession, committed: int
) -> None:
    plan = run(
        spark,
        offsets=[commit("a", "orders", 0, 50), commit("stale", "orders", 0, committed)],
        partitions=[part("orders", 0, log_start=10, hw=100)],
    )
    r = plan["orders", 0]
    assert (r.status, r.reason, r.blocking_groups, r.delete_before) == (
        P.HELD,
        P.OFFSET_OUT_OF_RANGE,
        ["stale"],
        None,
    )


def test_lookup_errors_hold_the_partition(spark: SparkSession) -> None:
    plan = run(
        spark,
        offsets=[commit("a", "orders", p, 50) for p in range(3)],
        partitions=[
            part("orders", 0, error="ListOffsets: NOT_LEADER_OR_FOLLOWER"),
            part("orders", 1, t=None),  # the offset-for-time lookup failed
            part("orders", 2),
        ],
    )
    assert (plan["orders", 0].status, plan["orders", 0].reason) == (P.HELD, P.LOOKUP_FAILED)
    assert (plan["orders", 1].status, plan["orders", 1].reason) == (P.HELD, P.LOOKUP_FAILED)
    assert plan["orders", 2].delete_before == 50


def test_topic_config_lookup_error_holds_every_partition(spark: SparkSession) -> None:
    plan = run(
        spark,
        offsets=[commit("a", "orders", 0, 50)],
        partitions=[part("orders", 0)],
        topics=[("orders", None, "DescribeConfigs: TOPIC_AUTHORIZATION_FAILED")],
    )
    assert (plan["orders", 0].status, plan["orders", 0].reason) == (P.HELD, P.LOOKUP_FAILED)


def test_compact_only_topic_is_reported_not_attempted(spark: SparkSession) -> None:
    plan = run(
        spark,
        offsets=[commit("a", "orders", 0, 50), commit("a", "orders-both", 0, 50)],
        partitions=[part("orders", 0), part("orders-both", 0)],
        topics=[("orders", "compact", None), ("orders-both", "compact, delete", None)],
    )
    r = plan["orders", 0]
    assert (r.status, r.reason, r.delete_before, r.records) == (
        P.NOT_DELETABLE,
        P.CLEANUP_POLICY_COMPACT,
        None,
        0,
    )
    assert (plan["orders-both", 0].status, plan["orders-both", 0].delete_before) == (P.DELETABLE, 50)


def test_required_group_must_have_committed_before_anything_goes(spark: SparkSession) -> None:
    offsets = [commit("a", "orders", 0, 50)]
    parts = [part("orders", 0)]
    absent = run(spark, offsets=offsets, partitions=parts, pol=policy(required=("audit",)))
    r = absent["orders", 0]
    assert (r.status, r.reason, r.blocking_groups) == (P.HELD, P.REQUIRED_GROUP_NOT_COMMITTED, ["audit"])
    present = run(
        spark,
        offsets=[*offsets, commit("audit", "orders", 0, 20)],
        partitions=parts,
        pol=policy(required=("audit",)),
    )
    assert (present["orders", 0].delete_before, present["orders", 0].blocking_groups) == (20, ["audit"])


def test_required_group_counts_even_outside_include(spark: SparkSession) -> None:
    plan = run(
        spark,
        offsets=[commit("app", "orders", 0, 60), commit("audit", "orders", 0, 20)],
        partitions=[part("orders", 0)],
        pol=policy(groups_include=("app",), required=("audit",)),
    )
    assert plan["orders", 0].delete_before == 20


def test_exclusive_refuses_topic_read_by_group_outside_include(spark: SparkSession) -> None:
    offsets = [
        commit("app", "orders", 0, 60),
        commit("spy", "orders", 0, 10),
        commit("app", "orders-b", 0, 60),
    ]
    parts = [part("orders", 0), part("orders-b", 0)]
    topics = [("orders", "delete", None), ("orders-b", "delete", None)]
    exclusive = run(
        spark,
        offsets=offsets,
        partitions=parts,
        topics=topics,
        pol=policy(groups_include=("app",), exclusive=True),
    )
    r = exclusive["orders", 0]
    assert (r.status, r.reason, r.blocking_groups) == (P.HELD, P.READ_BY_EXCLUDED_GROUP, ["spy"])
    assert exclusive["orders-b", 0].delete_before == 60  # a topic only `app` reads is unaffected
    # Without `exclusive`, a group outside include does not count: the cut follows `app` alone.
    shared = run(spark, offsets=offsets, partitions=parts, topics=topics, pol=policy(groups_include=("app",)))
    assert (shared["orders", 0].status, shared["orders", 0].delete_before) == (P.DELETABLE, 60)


def test_exclusive_sees_a_subscribed_outsider_that_never_committed(spark: SparkSession) -> None:
    plan = run(
        spark,
        offsets=[commit("app", "orders", 0, 60)],
        partitions=[part("orders", 0)],
        groups=[group("app", topics=["orders"]), group("other", topics=["orders"])],
        pol=policy(groups_include=("app",), exclusive=True),
    )
    assert (plan["orders", 0].reason, plan["orders", 0].blocking_groups) == (
        P.READ_BY_EXCLUDED_GROUP,
        ["other"],
    )


def test_excluded_groups_do_not_count(spark: SparkSession) -> None:
    plan = run(
        spark,
        offsets=[commit("app", "orders", 0, 60), commit("console-consumer-123", "orders", 0, 5)],
        partitions=[part("orders", 0)],
        pol=policy(groups_exclude=("console-consumer-.*",)),
    )
    assert plan["orders", 0].delete_before == 60


def test_inactive_after_ignores_only_empty_groups_without_recent_commits(spark: SparkSession) -> None:
    old = NOW - 10 * HOUR
    offsets = [commit("app", "orders", 0, 60), commit("gone", "orders", 0, 10, ts=old)]
    parts = [part("orders", 0)]
    pol = policy(inactive_after_ms=2 * HOUR)
    # No members, last commit 10 h ago, inactiveAfter 2 h: ignored.
    ignored = run(
        spark, offsets=offsets, partitions=parts, groups=[group("gone", members=0, state="Empty")], pol=pol
    )
    assert ignored["orders", 0].delete_before == 60
    # Still has members (e.g. a slow consumer that stopped committing): it counts.
    alive = run(spark, offsets=offsets, partitions=parts, groups=[group("gone", members=1)], pol=pol)
    assert alive["orders", 0].delete_before == 10
    # Empty but committed recently: it counts.
    recent = run(
        spark,
        offsets=[*offsets[:1], commit("gone", "orders", 0, 10, ts=NOW - HOUR)],
        partitions=parts,
        groups=[group("gone", members=0, state="Empty")],
        pol=pol,
    )
    assert recent["orders", 0].delete_before == 10
    # Without inactiveAfter, an empty group still counts.
    default = run(spark, offsets=offsets, partitions=parts, groups=[group("gone", members=0, state="Empty")])
    assert default["orders", 0].delete_before == 10
    # Empty, no recent commit, but seen empty only recently (the Admin API source has no commit times: the
    # operator's memory of when it saw the group empty decides): it counts.
    just_emptied = run(
        spark,
        offsets=[offsets[0], commit("gone", "orders", 0, 10, ts=None)],
        partitions=parts,
        groups=[group("gone", members=0, state="Empty", empty_since=NOW - HOUR)],
        pol=pol,
    )
    assert just_emptied["orders", 0].delete_before == 10
    # ...and once empty for longer than inactiveAfter, with no commit time known, it is ignored.
    long_empty = run(
        spark,
        offsets=[offsets[0], commit("gone", "orders", 0, 10, ts=None)],
        partitions=parts,
        groups=[group("gone", members=0, state="Empty", empty_since=NOW - 3 * HOUR)],
        pol=pol,
    )
    assert long_empty["orders", 0].delete_before == 60
    # A group the namespace's grant does not let the policy leave out never expires.
    protected = run(
        spark,
        offsets=offsets,
        partitions=parts,
        groups=[group("gone", members=0, state="Empty")],
        pol=dataclasses.replace(pol, discountable_groups=("app",)),
    )
    assert protected["orders", 0].delete_before == 10
    # A required group never expires.
    req = run(
        spark,
        offsets=offsets,
        partitions=parts,
        groups=[group("gone", members=0, state="Empty")],
        pol=dataclasses.replace(pol, required=("gone",)),
    )
    assert req["orders", 0].delete_before == 10


def test_group_lookup_error_holds_every_matched_topic(spark: SparkSession) -> None:
    plan = run(
        spark,
        offsets=[commit("app", "orders", 0, 60)],
        partitions=[part("orders", 0)],
        groups=[
            group("app", topics=["orders"]),
            group("mystery", members=0, error="DescribeGroups: COORDINATOR_NOT_AVAILABLE"),
        ],
    )
    r = plan["orders", 0]
    assert (r.status, r.reason, r.blocking_groups) == (P.HELD, P.LOOKUP_FAILED, ["mystery"])


def test_topic_nobody_counted_reads_is_held(spark: SparkSession) -> None:
    plan = run(spark, offsets=[], partitions=[part("orders", 0)])
    assert (plan["orders", 0].status, plan["orders", 0].reason) == (P.HELD, P.NO_COUNTED_CONSUMERS)


def test_topic_patterns_select_topics_and_internal_topics_never_match(spark: SparkSession) -> None:
    plan = run(
        spark,
        offsets=[commit("a", t, 0, 50) for t in ("orders", "orders-tmp", "payments", "__consumer_offsets")],
        partitions=[part(t, 0) for t in ("orders", "orders-tmp", "payments", "__consumer_offsets")],
        topics=[(t, "delete", None) for t in ("orders", "orders-tmp", "payments", "__consumer_offsets")],
        pol=policy(topics_include=("orders.*", "__.*"), topics_exclude=(".*-tmp",)),
    )
    assert set(plan) == {("orders", 0)}


def test_summary_lists_deletes_and_names_holders(spark: SparkSession) -> None:
    result = plan_of(
        spark,
        offsets=[commit("a", "orders", 0, 50), commit("b", "orders", 0, 70)],
        partitions=[part("orders", 0), part("orders", 1)],
    )
    s = result.summary
    assert (s.topics, s.partitions, s.held_partitions) == (1, 2, 1)
    assert (s.deletable_records, s.reclaimable_bytes) == (50, 5_000)
    assert [(d.topic, d.partition, d.offset) for d in result.deletes] == [("orders", 0, 50)]
    (topic,) = result.topics
    assert [(h.partition, h.reason, h.blocking_groups) for h in topic.held] == [
        (1, HoldReason.NO_COMMIT, ["a", "b"])
    ]


def test_excluding_a_group_outside_the_grant_does_not_discount_it(spark: SparkSession) -> None:
    """A namespace may leave out only the groups its KafkaCluster grant names: another tenant's group
    reading the topic always counts, whatever exclude says."""
    offsets = [commit("mine", "orders", 0, 60), commit("theirs", "orders", 0, 20)]
    pol = policy(groups_exclude=("theirs",), discountable_groups=("mine", "mine-.*"))
    plan = run(spark, offsets=offsets, partitions=[part("orders", 0)], pol=pol)
    assert (plan["orders", 0].delete_before, plan["orders", 0].blocking_groups) == (20, ["theirs"])


def test_the_slowest_groups_lag_is_reported_held_or_not(spark: SparkSession) -> None:
    result = plan_of(
        spark,
        offsets=[commit("a", "orders", 0, 40), commit("b", "orders", 0, 90), commit("a", "orders", 1, 100)],
        partitions=[part("orders", 0), part("orders", 1, t=100)],
        groups=[group("a", topics=["orders"]), group("b", topics=["orders"])],
    )
    p0 = result.decisions[0]
    # a has read up to 40 of 100: 60 records (6 000 of the partition's 10 000 bytes) are held for it.
    assert (p0.partition, p0.blocking_groups, p0.lag_records, p0.lag_bytes) == (0, ["a"], 60, 6_000)
    # b has no commit on p1, which it reads: it holds all 100 records (10 000 bytes) there.
    (topic,) = result.topics
    assert [(g.group, g.partitions, g.lag_records, g.lag_bytes) for g in topic.limiting] == [
        ("b", 1, 100, 10_000),
        ("a", 1, 60, 6_000),
    ]
    assert topic.limiting_count == 2


def test_named_groups_are_bounded_and_counted(spark: SparkSession) -> None:
    """25 readers lack a commit on p1: 20 are named (in name order), all 25 counted."""
    readers = [f"g{i:02}" for i in range(25)]
    result = plan_of(
        spark,
        offsets=[commit(g, "orders", 0, 50) for g in readers] + [commit("z", "orders", 1, 50)],
        partitions=[part("orders", 0), part("orders", 1)],
    )
    (topic,) = result.topics
    held = {h.partition: (h.reason, h.blocking_groups, h.blocking_count) for h in topic.held}
    assert held == {0: (HoldReason.NO_COMMIT, ["z"], 1), 1: (HoldReason.NO_COMMIT, readers[:20], 25)}
    # The topic's limiting list is bounded too, with its total (of the groups its partitions name).
    assert (len(topic.limiting), topic.limiting_count) == (10, 21)
