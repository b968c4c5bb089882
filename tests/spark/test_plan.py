"""Spark feeds the retention rules what the commits say.

The rules themselves are `decide`'s, tested without Spark (tests/unit/operator/analysis). Here one cluster
with every shape the aggregations must get right (groups tied at a minimum and a lone one, a reader
without a commit, a required group missing, a commit outside the log, more readers than are named, a
topic that grew since the snapshot, subscribed groups that never committed, groups outside include,
inactive and excluded groups, unmatched and internal topics, compact-only ones and lookup failures)
goes through `plan.py`, with and without `exclusive`, and what Spark computes is compared with the
plain reference (tests/plan_reference.py): the per-partition figures and every name a hold may ask for.
The last test follows one small plan through `plan_from_offsets`, the whole way.
"""

from __future__ import annotations

import dataclasses

import pytest
from pyspark.sql import SparkSession

from ebb_operator.analysis import plan as P
from ebb_operator.analysis.decide import LimitedBy, PartitionStatus, with_commit_times
from ebb_operator.analysis.policy import AnalysisPolicy
from ebb_operator.analysis.snapshot import GroupState, PartitionState, Snapshot, TopicState
from ebb_operator.models.plan import HoldReason
from tests.plan_reference import Commit, last_commit_times, reference

NOW = 1_800_000_000_000
HOUR = 3_600_000
RECENT, OLD = NOW - 60_000, NOW - 10 * HOUR
READERS = [f"r{i:02}" for i in range(25)]  # more than a partition names

TOPICS = [
    TopicState("orders", "delete", None),
    TopicState("orders-b", "compact,delete", None),
    TopicState("orders-c", "compact", None),
    TopicState("orders-new", "delete", None),
    TopicState("orders-many", "delete", None),
    TopicState("orders-stale", "delete", None),
    TopicState("payments", "delete", None),
    TopicState("__consumer_offsets", "compact", None),
]
PARTITIONS = [
    PartitionState("orders", 0, 0, 100, 10_000, 80, None),
    PartitionState("orders", 1, 0, 100, 10_000, 80, None),
    PartitionState("orders", 3, 0, 100, 10_000, 100, None),
    PartitionState("orders-b", 0, 0, 100, 10_000, 80, None),
    PartitionState("orders-b", 1, 0, 100, 10_000, 80, "ListOffsets latest: NOT_LEADER_OR_FOLLOWER"),
    PartitionState("orders-c", 0, 0, 100, 10_000, 80, None),
    PartitionState("orders-new", 0, 0, 100, 10_000, 80, None),  # partition 1 appeared after the snapshot
    PartitionState("orders-many", 0, 0, 100, 10_000, 80, None),
    PartitionState("orders-many", 1, 0, 100, 10_000, 80, None),
    PartitionState("orders-stale", 0, 10, 100, 10_000, 80, None),
    PartitionState("payments", 0, 0, 100, 10_000, 80, None),
    PartitionState("__consumer_offsets", 0, 0, 100, 10_000, 80, None),
]
GROUPS = [
    GroupState("a", "Stable", 1, ("orders",), None, None),
    GroupState("new", "Stable", 1, ("orders",), None, None),  # subscribed, never committed
    GroupState("other", "Stable", 1, ("orders-b",), None, None),  # outside include, subscribed
    GroupState("gone", "Empty", 0, (), None, OLD),  # inactive: empty, its last commit long ago
]
COMMITS = [
    # orders-0: a and b tied at the minimum 40; orders-1: c alone at 30; new reads orders, commits nowhere;
    # audit (required) commits everywhere but on orders-1.
    Commit("a", "orders", 0, 40, RECENT),
    Commit("b", "orders", 0, 40, RECENT),
    Commit("c", "orders", 0, 60, RECENT),
    Commit("a", "orders", 1, 50, RECENT),
    Commit("b", "orders", 1, 70, RECENT),
    Commit("c", "orders", 1, 30, RECENT),
    Commit("a", "orders", 3, 100, RECENT),
    Commit("gone", "orders", 0, 1, OLD),
    Commit("console-1", "orders", 0, 2, RECENT),  # excluded
    Commit("spy", "orders", 0, 3, RECENT),  # outside include, commits
    Commit("a", "orders-b", 0, 60, RECENT),
    Commit("audit", "orders-b", 0, 20, RECENT),
    Commit("a", "orders-c", 0, 50, RECENT),
    Commit("a", "orders-new", 0, 50, RECENT),
    Commit("b", "orders-new", 1, 50, RECENT),
    # orders-many: 25 readers on partition 0, another group on partition 1.
    *(Commit(g, "orders-many", 0, 50 + i, None) for i, g in enumerate(READERS)),
    Commit("z", "orders-many", 1, 50, None),
    # orders-stale: stale is below the log start, stale2 above the high watermark.
    Commit("stale", "orders-stale", 0, 5, RECENT),
    Commit("stale2", "orders-stale", 0, 101, RECENT),
    *(Commit("audit", t, p, 90, RECENT) for t, p in [("orders", 0), ("orders", 3), ("orders-many", 0)]),
    *(Commit("audit", t, p, 90, RECENT) for t, p in [("orders-many", 1), ("orders-stale", 0)]),
    Commit("a", "payments", 0, 10, RECENT),
    Commit("a", "__consumer_offsets", 0, 10, RECENT),
]
POLICY = AnalysisPolicy(
    namespace="ns",
    name="rp",
    consumed_retention_ms=HOUR,
    topics_include=("orders.*", "__.*"),
    groups_exclude=("console-.*", "spy", "other"),
    required=("audit",),
    inactive_after_ms=2 * HOUR,
)
SNAPSHOT = Snapshot(NOW, PARTITIONS, TOPICS, GROUPS)


@pytest.mark.parametrize("exclusive", [False, True], ids=["shared", "exclusive"])
def test_spark_feeds_decide_what_the_commits_say(spark: SparkSession, exclusive: bool) -> None:
    policy = dataclasses.replace(POLICY, exclusive=exclusive)
    ref = reference(SNAPSHOT, policy, NOW, COMMITS)
    # The reference's plan, in a user's terms: what Spark's figures must reproduce.
    plan = {(d.topic, d.partition): d for d in ref.plan().decisions}
    assert {t for t, _ in plan} == {t.topic for t in TOPICS if t.topic.startswith("orders")}
    if exclusive:  # spy commits on orders (console-1 too, excluded), other subscribes to orders-b
        assert (plan["orders", 0].reason, plan["orders", 0].blocking_groups) == (
            HoldReason.NOT_EXCLUSIVE,
            ["console-1", "spy"],
        )
        assert plan["orders-b", 0].blocking_groups == ["other"]
    else:
        assert (plan["orders", 0].reason, plan["orders", 0].blocking_groups) == (
            HoldReason.NO_COMMIT,
            ["new"],
        )
        assert (plan["orders", 1].reason, plan["orders", 1].blocking_groups) == (
            HoldReason.REQUIRED_GROUP_MISSING,
            ["audit"],
        )
        assert (plan["orders-stale", 0].reason, plan["orders-stale", 0].blocking_groups) == (
            HoldReason.OFFSET_OUT_OF_RANGE,
            ["stale", "stale2"],
        )
        cut = plan["orders-b", 0]
        assert (cut.status, cut.delete_before, cut.blocking_groups) == (
            PartitionStatus.DELETABLE,
            20,
            ["audit"],
        )
        assert (plan["orders-many", 1].blocking_count, len(plan["orders-many", 1].blocking_groups)) == (
            25,
            20,
        )
    assert (plan["orders-b", 1].reason, plan["orders-c", 0].reason, plan["orders-new", 0].reason) == (
        HoldReason.LOOKUP_FAILED,
        HoldReason.COMPACT_ONLY,
        HoldReason.LOOKUP_FAILED,
    )
    assert ref.counted_readers == sorted({"a", "audit", "b", "c", "new", "stale", "stale2", "z", *READERS})

    # Spark's figures and names equal the reference's: `decide` then decides the same.
    offsets = spark.createDataFrame([tuple(c) for c in COMMITS], P.OFFSETS_SCHEMA)
    snapshot = dataclasses.replace(SNAPSHOT, groups=with_commit_times(GROUPS, last_commit_times(COMMITS)))
    inputs = P.prepare(snapshot, policy, NOW)
    commits = inputs.catalog.encode(offsets).persist()
    try:
        facts = P.partition_facts(commits, inputs)
        assert facts.partitions == ref.partitions
        assert facts.counted_readers == ref.counted_readers
        names = P.SparkNames(commits, inputs)
        every = range(len(ref.partitions))
        assert names.missing(every) == ref.missing(every)
        assert names.out_of_range(every) == ref.out_of_range(every)
        minimum = {
            i: s.min_committed
            for i, f in enumerate(ref.partitions)
            if (s := f.commits).min_committed is not None
        }
        assert names.at_minimum(minimum) == ref.at_minimum(minimum)
        # A budget's eviction: every counted group below a target, required ones flagged.
        targets = {i: 60 + i % 3 * 20 for i in every}
        assert names.below(targets) == ref.below(targets)
        assert any(c.required for found in ref.below(targets).values() for c in found)
        assert names.above(minimum) == ref.above(minimum)
    finally:
        commits.unpersist()


def test_groups_tied_at_a_minimum_and_a_lone_one_are_named(spark: SparkSession) -> None:
    policy = AnalysisPolicy(namespace="ns", name="rp", consumed_retention_ms=HOUR, topics_include=("orders",))
    commits = [
        c for c in COMMITS if c.topic == "orders" and c.partition in (0, 1) and c.group in ("a", "b", "c")
    ]
    commits += [Commit(g, "orders", 3, 100) for g in ("a", "b", "c")]
    snapshot = Snapshot(NOW, [p for p in PARTITIONS if p.topic == "orders" and p.partition != 2], TOPICS[:1])
    offsets = spark.createDataFrame([tuple(c) for c in commits], P.OFFSETS_SCHEMA)
    result = P.plan_from_offsets(offsets, snapshot, policy, NOW)
    plan = {d.partition: (d.delete_before, d.limited_by, d.blocking_groups) for d in result.decisions}
    assert plan == {
        0: (40, LimitedBy.CONSUMER_POSITION, ["a", "b"]),  # tied: named by a second read
        1: (30, LimitedBy.CONSUMER_POSITION, ["c"]),  # alone: named from the aggregation
        3: (100, LimitedBy.CONSUMED_RETENTION, []),
    }
