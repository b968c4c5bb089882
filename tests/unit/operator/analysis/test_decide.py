"""The retention rules on small typed inputs: what each partition's figures decide, hold by hold.

Every rule fails closed: a partition is cut only below every counted group's commit, below the offset at
`now - consumedRetention`, at most to the high watermark and above the log start; anything unknown holds
it and says why and who. The groups behind a hold come from `GroupNames`; here a table of them, which
also records what was asked (names are read from the commits only where a hold needs them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from ebb_operator.analysis.decide import (
    MAX_NAMED,
    NOBODY,
    CommitStats,
    GroupCommit,
    LimitedBy,
    Missing,
    Named,
    PartitionDecision,
    PartitionFacts,
    PartitionStatus,
    TopicFacts,
    decide,
    deletes,
    named,
    summarize,
)
from ebb_operator.analysis.snapshot import PartitionState, TopicState
from ebb_operator.models.plan import HoldReason

HELD, DELETABLE = PartitionStatus.HELD, PartitionStatus.DELETABLE


class Names:
    """GroupNames from tables, recording every question."""

    def __init__(
        self,
        missing: Mapping[int, Missing] | None = None,
        out_of_range: Mapping[int, Named] | None = None,
        at_minimum: Mapping[int, Named] | None = None,
        above: Mapping[int, int] | None = None,
    ) -> None:
        self._missing, self._stale, self._at_min = missing or {}, out_of_range or {}, at_minimum or {}
        self._above = above or {}
        self.asked: list[tuple[str, Any]] = []  # the names asked for
        self.asked_above: list[dict[int, int]] = []  # the next levels asked for (what a lone group pins)

    def missing(self, partitions: Sequence[int]) -> Mapping[int, Missing]:
        self.asked.append(("missing", list(partitions)))
        return {i: self._missing[i] for i in partitions if i in self._missing}

    def out_of_range(self, partitions: Sequence[int]) -> Mapping[int, Named]:
        self.asked.append(("out_of_range", list(partitions)))
        return {i: self._stale[i] for i in partitions if i in self._stale}

    def at_minimum(self, minimum: Mapping[int, int]) -> Mapping[int, Named]:
        self.asked.append(("at_minimum", dict(minimum)))
        return {i: self._at_min[i] for i in minimum if i in self._at_min}

    def below(self, limits: Mapping[int, int]) -> Mapping[int, Sequence[GroupCommit]]:
        """No commits below a budget's target here (test_budget.py's `Below` has them)."""
        self.asked.append(("below", dict(limits)))
        return {i: [] for i in limits}

    def above(self, minimum: Mapping[int, int]) -> Mapping[int, int]:
        self.asked_above.append(dict(minimum))
        return {i: self._above[i] for i in minimum if i in self._above}


def state(
    partition: int = 0,
    *,
    topic: str = "orders",
    log_start: int | None = 0,
    hw: int | None = 100,
    size: int | None = 10_000,
    at_retention: int | None = 80,
    error: str | None = None,
) -> PartitionState:
    """A partition; `at_retention`: the offset at now - consumedRetention (ListOffsets by time)."""
    return PartitionState(topic, partition, log_start, hw, size, at_retention, error)


def facts(
    *commits: int,
    alone: str | None = "a",
    readers: int | None = None,
    p: PartitionState | None = None,
    cleanup: str | None = "delete",
    topic_error: str | None = None,
    outsiders: Named = NOBODY,
    grown: bool = False,
) -> PartitionFacts:
    """A partition whose counted groups committed `commits` (by default each group reads it)."""
    p = p or state()
    stats = CommitStats()
    if commits:
        low = min(commits)
        stats = CommitStats(len(commits), low, max(commits), alone if commits.count(low) == 1 else None)
    topic = TopicFacts(
        TopicState(p.topic, cleanup, topic_error),
        len(commits) if readers is None else readers,
        outsiders,
        grown,
    )
    return PartitionFacts(p, topic, stats)


def one(f: PartitionFacts, names: Names | None = None, **options: Any) -> PartitionDecision:
    (d,) = decide([f], names or Names(), **options)
    return d


def groups(*names: str) -> Named:
    return Named(len(names), names)


# -- the cut ------------------------------------------------------------------------------------------


def test_the_slowest_counted_group_sets_the_cut_and_is_named() -> None:
    d = one(facts(50, 70, alone="a"))
    assert (d.status, d.delete_before, d.records, d.limited_by) == (
        DELETABLE,
        50,
        50,
        LimitedBy.CONSUMER_POSITION,
    )
    assert (d.reason, d.blocking_groups, d.blocking_count) == (None, ["a"], 1)
    assert d.bytes == 5_000  # 10 000 bytes over 100 readable offsets, 50 of them go


def test_records_younger_than_consumed_retention_stay_though_every_group_read_them() -> None:
    d = one(facts(90, 95))
    assert (d.status, d.delete_before, d.records, d.limited_by) == (
        DELETABLE,
        80,
        80,
        LimitedBy.CONSUMED_RETENTION,
    )
    assert d.blocking_groups == []  # the time limits the cut, no group does


def test_groups_tied_at_the_minimum_are_read_and_all_named() -> None:
    names = Names(at_minimum={0: groups("a", "b")})
    d = one(facts(40, 40, 60), names)
    assert (d.delete_before, d.blocking_groups) == (40, ["a", "b"])
    assert names.asked == [("at_minimum", {0: 40})]


def test_a_lone_group_at_the_minimum_is_named_without_another_read() -> None:
    names = Names()
    assert one(facts(40, 60, alone="slow"), names).blocking_groups == ["slow"]
    assert names.asked == []


@pytest.mark.parametrize(("at_retention", "hw"), [(100, 100), (120, 100)])
def test_the_cut_never_exceeds_the_high_watermark(at_retention: int, hw: int) -> None:
    d = one(facts(100, p=state(hw=hw, at_retention=at_retention)))
    assert (d.status, d.delete_before) == (DELETABLE, 100)


def test_a_cut_at_or_below_the_log_start_deletes_nothing() -> None:
    d = one(facts(30, p=state(log_start=30)))
    assert (d.status, d.reason, d.delete_before, d.records, d.bytes) == (
        PartitionStatus.UP_TO_DATE,
        HoldReason.NOTHING_TO_DELETE,
        None,
        0,
        0,
    )
    assert d.blocking_groups == ["a"]  # still the group that keeps the records


# -- the holds ----------------------------------------------------------------------------------------


def test_a_counted_reader_without_a_commit_on_the_partition_holds_it() -> None:
    names = Names(missing={1: Missing(groups("b"), NOBODY)})
    cut, held = decide([facts(50, 60), facts(50, readers=2, p=state(1))], names)
    assert cut.status is DELETABLE
    assert (held.status, held.reason, held.blocking_groups) == (HELD, HoldReason.NO_COMMIT, ["b"])
    assert (held.delete_before, held.records) == (None, 0)
    assert names.asked == [("missing", [1])]  # names read for the partition that lacks a commit only


def test_a_partition_lacking_a_commit_is_held_even_when_no_group_can_be_named() -> None:
    d = one(facts(50, readers=2), Names())
    assert (d.status, d.reason, d.blocking_count) == (HELD, HoldReason.NO_COMMIT, 0)


def test_a_required_group_must_have_committed_before_anything_goes() -> None:
    names = Names(missing={0: Missing(groups("audit", "late"), groups("audit"))})
    d = one(facts(50, readers=3), names)
    assert (d.status, d.reason, d.blocking_groups) == (HELD, HoldReason.REQUIRED_GROUP_MISSING, ["audit"])


@pytest.mark.parametrize(("commits", "stale"), [((5, 50), 5), ((50, 101), 101)])
def test_a_commit_outside_the_log_holds_the_partition_and_names_the_group(
    commits: tuple[int, int], stale: int
) -> None:
    names = Names(out_of_range={0: groups("stale")})
    d = one(facts(*commits, p=state(log_start=10, hw=100)), names)
    assert (d.status, d.reason, d.blocking_groups, d.delete_before) == (
        HELD,
        HoldReason.OFFSET_OUT_OF_RANGE,
        ["stale"],
        None,
    )
    # The commit below the log start is read once more: the records between went unread (unread loss).
    assert names.asked == [("out_of_range", [0])] + ([("below", {0: 10})] if stale < 10 else [])


def test_a_commit_outside_the_log_holds_even_when_no_group_can_be_named() -> None:
    d = one(facts(5, 50, p=state(log_start=10)), Names())
    assert (d.status, d.reason) == (HELD, HoldReason.OFFSET_OUT_OF_RANGE)


def test_forced_retention_past_a_groups_commit_holds_the_partition_until_the_group_stops_counting() -> None:
    """KIP-68's forced level (retention.ms) moved the log start past a dead group's commit at 20: what that
    group read is unknown to the log, so nothing more is cut, and the group is named with everything the
    partition retains; once it no longer counts (excluded, or inactive), the others set the cut."""
    names = Names(out_of_range={0: groups("dead")})
    after_forced = state(log_start=40, hw=100)
    result = summarize(decide([facts(20, 90, p=after_forced)], names))
    (d,) = result.decisions
    assert (d.status, d.reason, d.blocking_groups) == (HELD, HoldReason.OFFSET_OUT_OF_RANGE, ["dead"])
    (topic,) = result.topics
    assert [(g.group, g.lag_records, g.lag_bytes) for g in topic.limiting] == [("dead", 60, 10_000)]
    without_it = one(facts(90, p=after_forced))
    assert (without_it.status, without_it.delete_before) == (DELETABLE, 80)


@pytest.mark.parametrize(
    "lookup",
    [
        {"p": state(error="ListOffsets earliest: NOT_LEADER_OR_FOLLOWER")},
        {"p": state(at_retention=None)},  # the offset-for-time lookup failed
        {"p": state(log_start=None)},
        {"p": state(hw=None)},
        {"topic_error": "DescribeConfigs: TOPIC_AUTHORIZATION_FAILED"},
        {"grown": True},  # a counted group committed on a partition the snapshot does not list
    ],
    ids=["partition", "time", "log-start", "high-watermark", "topic", "grown"],
)
def test_any_lookup_failure_holds_the_partition(lookup: dict[str, Any]) -> None:
    names = Names()
    d = one(facts(50, **lookup), names)
    assert (d.status, d.reason, d.delete_before) == (HELD, HoldReason.LOOKUP_FAILED, None)
    assert names.asked == []


def test_a_counted_group_that_could_not_be_described_holds_every_partition_and_is_named() -> None:
    failed = [f"g{i:02}" for i in range(25)]
    d = one(facts(50), failed_groups=failed)
    assert (d.status, d.reason, d.blocking_groups, d.blocking_count) == (
        HELD,
        HoldReason.LOOKUP_FAILED,
        failed[:MAX_NAMED],
        25,
    )


@pytest.mark.parametrize(
    ("cleanup", "deletable"), [("compact", False), ("compact, delete", True), ("Delete", True)]
)
def test_a_compact_only_topic_is_reported_not_attempted(cleanup: str, deletable: bool) -> None:
    result = summarize(decide([facts(50, cleanup=cleanup)], Names()))
    (d,) = result.decisions
    if deletable:
        assert (d.status, d.delete_before) == (DELETABLE, 50)
    else:
        assert (d.status, d.reason, d.delete_before) == (
            PartitionStatus.NOT_DELETABLE,
            HoldReason.COMPACT_ONLY,
            None,
        )
        assert result.deletes == [] and result.summary.held_partitions == 1


def test_exclusive_refuses_a_topic_a_group_outside_include_reads() -> None:
    outsiders = groups("spy")
    d = one(facts(60, outsiders=outsiders), exclusive=True)
    assert (d.status, d.reason, d.blocking_groups) == (HELD, HoldReason.NOT_EXCLUSIVE, ["spy"])
    assert one(facts(60, outsiders=outsiders)).delete_before == 60  # without exclusive they do not count


def test_a_topic_no_counted_group_reads_is_held() -> None:
    d = one(facts(readers=0))
    assert (d.status, d.reason) == (HELD, HoldReason.NO_COUNTED_CONSUMERS)


@pytest.mark.parametrize(
    ("inputs", "reason"),
    [
        ({"topic_error": "x", "cleanup": "compact", "outsiders": groups("o")}, HoldReason.LOOKUP_FAILED),
        ({"cleanup": "compact", "outsiders": groups("o")}, HoldReason.COMPACT_ONLY),
        ({"outsiders": groups("o"), "readers": 2}, HoldReason.NOT_EXCLUSIVE),
        ({"readers": 2, "p": state(log_start=60)}, HoldReason.NO_COMMIT),
    ],
)
def test_the_holds_take_precedence_in_order(inputs: dict[str, Any], reason: HoldReason) -> None:
    names = Names(missing={0: Missing(groups("b"), NOBODY)}, out_of_range={0: groups("a")})
    assert one(facts(50, **inputs), names, exclusive=True).reason is reason


# -- what it reports ----------------------------------------------------------------------------------


def test_the_slowest_groups_lag_is_what_it_holds_on_disk() -> None:
    d = one(facts(40, 90))
    assert (d.lag_records, d.lag_bytes) == (60, 6_000)  # read up to 40 of 100
    below = one(facts(5, p=state(log_start=10)), Names(out_of_range={0: groups("a")}))
    assert below.lag_records == 90  # a commit below the log start: every retained record is unread


def test_the_summary_lists_the_cuts_and_names_the_groups_holding_the_disk() -> None:
    names = Names(missing={1: Missing(groups("b"), NOBODY)})
    result = summarize(
        decide([facts(40, 90, alone="a"), facts(100, readers=2, p=state(1))], names), ["b", "a"]
    )
    s = result.summary
    assert (s.topics, s.partitions, s.held_partitions, s.deletable_records, s.reclaimable_bytes) == (
        1,
        2,
        1,
        40,
        4_000,
    )
    assert [(c.topic, c.partition, c.offset) for c in result.deletes] == [("orders", 0, 40)]
    (topic,) = result.topics
    assert [(h.partition, h.reason, h.blocking_groups) for h in topic.held] == [
        (1, HoldReason.NO_COMMIT, ["b"])
    ]
    # b holds all 100 records of partition 1; a has 60 of partition 0 left to read.
    assert [(g.group, g.partitions, g.lag_records, g.lag_bytes) for g in topic.limiting] == [
        ("b", 1, 100, 10_000),
        ("a", 1, 60, 6_000),
    ]
    assert result.counted_groups == ["a", "b"]


def test_names_and_lists_are_bounded_and_counted() -> None:
    readers = [f"g{i:02}" for i in range(25)]
    assert named(readers) == Named(25, tuple(readers[:MAX_NAMED]))
    names = Names(missing={i: Missing(named(readers[i:]), NOBODY) for i in range(15)})
    result = summarize(
        decide([facts(50, readers=30, p=state(i)) for i in range(15)], names), max_held_per_topic=10
    )
    (topic,) = result.topics
    assert (len(topic.held), topic.held_count) == (10, 15)
    assert (len(topic.limiting), topic.limiting_count) == (10, 25)


def test_cleanup_policy_values_that_delete() -> None:
    assert [deletes(v) for v in ("delete", "compact,delete", " Compact , Delete ", "compact", "", None)] == [
        True,
        True,
        True,
        False,
        False,
        False,
    ]
