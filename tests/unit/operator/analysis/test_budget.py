"""spec.budget on small typed inputs: where the budget puts a partition's lowest cut, what each action
does with a partition still over it after the consumed cut, and how an eviction moves the cut.

The partitions of `test_decide.py` (100 offsets, 10 000 bytes: 100 bytes per offset; the offset at
now - consumedRetention is 80). An eviction moves the cut past the commits of counted groups that are
not required, exactly as far as the budget needs, never past a required group's commit, the offset at
now - consumedRetention or the high watermark; the groups below a target are asked of `GroupNames` only
for the partitions an eviction concerns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from ebb_operator.analysis.decide import (
    NOBODY,
    BudgetState,
    GroupCommit,
    GroupLoss,
    LimitedBy,
    Missing,
    Named,
    PartitionDecision,
    PartitionFacts,
    PartitionStatus,
    budget_offset,
    decide,
    summarize,
)
from ebb_operator.analysis.policy import BudgetRule
from ebb_operator.analysis.snapshot import PartitionState
from ebb_operator.models.plan import HoldReason
from ebb_operator.models.retention_policy import BudgetAction
from tests.unit.operator.analysis.test_decide import Names, facts
from tests.unit.operator.analysis.test_decide import state as partition_state

ALERT, EVICT = BudgetAction.ALERT, BudgetAction.EVICT_SLOWEST
OVER, WITHIN = BudgetState.OVER, BudgetState.WITHIN


class Below(Names):
    """GroupNames with the commits below a budget's target: group -> (commit, required), per partition."""

    def __init__(self, commits: Mapping[int, Mapping[str, tuple[int, bool]]] | None = None, **tables: Any):
        super().__init__(**tables)
        self._commits = commits or {}

    def below(self, limits: Mapping[int, int]) -> Mapping[int, Sequence[GroupCommit]]:
        self.asked.append(("below", dict(limits)))
        return {
            i: sorted(GroupCommit(g, o, r) for g, (o, r) in self._commits.get(i, {}).items() if o < limit)
            for i, limit in limits.items()
        }


def state(
    partition: int = 0, *, replica_bytes: int | None = None, age_offset: int | None = 0, **figures: Any
) -> PartitionState:
    """test_decide's partition, with its largest replica's bytes and the offset at now - maxAge."""
    p = partition_state(partition, **figures)
    return p._replace(replica_bytes=replica_bytes, age_offset=age_offset)


def bytes_budget(max_bytes: int, action: BudgetAction = ALERT) -> BudgetRule:
    return BudgetRule(max_bytes=max_bytes, max_age_ms=None, action=action)


def age_budget(action: BudgetAction = ALERT) -> BudgetRule:
    return BudgetRule(max_bytes=None, max_age_ms=3_600_000, action=action)


def one(f: PartitionFacts, names: Names, budget: BudgetRule) -> PartitionDecision:
    (d,) = decide([f], names, budget=budget)
    return d


def commits(**offsets: int | tuple[int, bool]) -> dict[int, dict[str, tuple[int, bool]]]:
    """Partition 0's counted commits: group=offset, or group=(offset, required)."""
    return {0: {g: o if isinstance(o, tuple) else (o, False) for g, o in offsets.items()}}


# -- where the budget puts the lowest cut -------------------------------------------------------------


def test_an_age_budget_needs_the_cut_at_the_first_record_younger_than_max_age() -> None:
    # ListOffsets by timestamp (now - maxAge) found offset 60: the records below are older than maxAge.
    assert budget_offset(state(age_offset=60), age_budget()) == 60


def test_a_bytes_budget_keeps_the_most_offsets_whose_share_fits_it_exactly() -> None:
    # 100 bytes per offset: 2 500 bytes keep the last 25 offsets (cut 75); 2 550 still keep 25, 2 600 keep 26.
    assert budget_offset(state(), bytes_budget(2_500)) == 75
    assert budget_offset(state(), bytes_budget(2_550)) == 75
    assert budget_offset(state(), bytes_budget(2_600)) == 74


def test_a_bytes_budget_counts_the_largest_replica_not_the_sum_over_replicas() -> None:
    # Three replicas of 10 000 bytes: DescribeLogDirs sums 30 000, each broker's disk holds 10 000.
    assert budget_offset(state(size=30_000, replica_bytes=10_000), bytes_budget(2_500)) == 75


def test_a_partition_that_fits_its_budget_needs_no_cut() -> None:
    assert budget_offset(state(log_start=10), bytes_budget(10_000)) == 10
    assert budget_offset(state(log_start=10, age_offset=5), age_budget()) == 10


def test_both_limits_take_the_higher_cut_and_none_passes_the_high_watermark() -> None:
    both = BudgetRule(max_bytes=2_500, max_age_ms=3_600_000)
    assert budget_offset(state(age_offset=90), both) == 90
    assert budget_offset(state(age_offset=50), both) == 75
    # Every record older than maxAge (ListOffsets answered -1: the snapshot's high watermark).
    assert budget_offset(state(age_offset=100), both) == 100


@pytest.mark.parametrize(
    "p",
    [state(size=None), state(age_offset=None), state(log_start=None)],
    ids=["size unknown", "age unknown", "log start unknown"],
)
def test_a_budget_whose_figures_are_unknown_has_no_cut(p: Any) -> None:
    both = BudgetRule(max_bytes=2_500, max_age_ms=3_600_000)
    assert budget_offset(p, both) is None


# -- Alert: report, delete nothing more ---------------------------------------------------------------


def test_alert_reports_a_partition_over_budget_and_deletes_nothing_more() -> None:
    names = Below(commits(dead=10, live=95))
    d = one(facts(10, 95, alone="dead"), names, bytes_budget(2_500, ALERT))
    assert (d.status, d.delete_before, d.limited_by, d.blocking_groups) == (
        PartitionStatus.DELETABLE,
        10,
        LimitedBy.CONSUMER_POSITION,
        ["dead"],
    )
    assert d.budget is not None and (d.budget.state, d.budget.offset, d.budget.evicted) == (OVER, 75, ())
    assert not [q for q, _ in names.asked if q == "below"], "Alert reads no commits"


def test_a_partition_within_budget_after_the_consumed_cut_is_within() -> None:
    d = one(facts(80, 95), Below(), bytes_budget(2_500, EVICT))
    assert d.budget is not None and (d.budget.state, d.delete_before) == (WITHIN, 80)


def test_held_partitions_are_reported_over_budget_from_their_log_start_and_never_evicted() -> None:
    names = Below(commits(dead=10), missing={0: Missing(Named(1, ("new",)), NOBODY)})
    d = one(facts(10, readers=2), names, bytes_budget(2_500, EVICT))
    assert (d.status, d.reason) == (PartitionStatus.HELD, HoldReason.NO_COMMIT)
    assert d.budget is not None and d.budget.state is OVER
    assert not [q for q, _ in names.asked if q == "below"]


def test_compact_only_partitions_are_not_assessed() -> None:
    d = one(facts(10, cleanup="compact"), Below(), bytes_budget(2_500, EVICT))
    assert d.budget is None


def test_unknown_figures_are_reported_and_evict_nothing() -> None:
    names = Below(commits(dead=10, live=95))
    d = one(facts(10, 95, p=state(size=None)), names, bytes_budget(2_500, EVICT))
    assert d.budget is not None and (d.budget.state, d.delete_before) == (BudgetState.UNKNOWN, 10)


# -- EvictSlowest: past the slowest groups, as far as needed ------------------------------------------


def test_evict_slowest_cuts_exactly_to_the_budget_and_names_each_evicted_group_with_its_loss() -> None:
    names = Below(commits(dead=10, slow=60, live=79))
    d = one(facts(10, 60, 79, alone="dead"), names, bytes_budget(2_500, EVICT))
    assert (d.status, d.delete_before, d.records, d.limited_by) == (
        PartitionStatus.DELETABLE,
        75,
        75,
        LimitedBy.BUDGET,
    )
    assert d.budget is not None and d.budget.state is WITHIN
    # Each evicted group loses what lies between its commit and the new log start; live (79) loses nothing.
    assert d.budget.evicted == (GroupLoss("dead", 65), GroupLoss("slow", 15))
    assert names.asked[-1] == ("below", {0: 75})


def test_an_eviction_never_passes_a_required_groups_commit() -> None:
    names = Below(commits(dead=10, audit=(40, True), live=95))
    d = one(facts(10, 40, 95, alone="dead"), names, bytes_budget(2_500, EVICT))
    assert (d.delete_before, d.limited_by, d.blocking_groups) == (40, LimitedBy.CONSUMER_POSITION, ["audit"])
    assert d.budget is not None and d.budget.state is OVER, "still over budget: the required group holds it"
    assert d.budget.evicted == (GroupLoss("dead", 30),)


def test_a_required_group_at_the_consumed_cut_stops_any_eviction() -> None:
    names = Below(commits(audit=(10, True), dead=20))
    d = one(facts(10, 20, alone="audit"), names, bytes_budget(2_500, EVICT))
    assert d.delete_before == 10 and d.budget is not None
    assert (d.budget.state, d.budget.evicted) == (OVER, ())


def test_an_eviction_never_takes_records_younger_than_consumed_retention() -> None:
    # An age budget can ask for no more than consumedRetention allows (the CRD refuses a shorter maxAge);
    # a bytes budget can: the cut stops at the offset at now - consumedRetention (80).
    names = Below(commits(dead=10, live=95))
    d = one(facts(10, 95, alone="dead"), names, bytes_budget(1_000, EVICT))
    assert (d.delete_before, d.limited_by) == (80, LimitedBy.CONSUMED_RETENTION)
    assert d.budget is not None and (d.budget.state, d.budget.offset) == (OVER, 90)
    assert d.budget.evicted == (GroupLoss("dead", 70),)


def test_an_eviction_never_passes_the_high_watermark() -> None:
    # Every record older than maxAge and consumedRetention, no group at the end: the cut stops at the end.
    p = state(at_retention=100, age_offset=100)
    d = one(facts(10, 100, alone="dead", p=p), Below(commits(dead=10, live=100)), age_budget(EVICT))
    assert (d.delete_before, d.limited_by) == (100, LimitedBy.BUDGET)
    assert d.budget is not None and d.budget.evicted == (GroupLoss("dead", 90),)


def test_an_up_to_date_partition_over_budget_is_cut_by_the_eviction() -> None:
    p = state(log_start=30)
    d = one(facts(30, 95, alone="dead", p=p), Below(commits(dead=30, live=95)), bytes_budget(1_400, EVICT))
    # 10 000 bytes over 70 offsets: 1 400 bytes keep 9 offsets (cut 91, capped by retention at 80).
    assert (d.status, d.delete_before, d.records) == (PartitionStatus.DELETABLE, 80, 50)


def test_a_group_an_earlier_eviction_left_below_the_log_start_is_evicted_again() -> None:
    # dead's commit (5) lies below the log start (30): held OffsetOutOfRange, which an eviction may pass.
    # 10 000 bytes over 70 offsets: 3 600 bytes keep 25 of them (cut 75).
    p = state(log_start=30)
    names = Below(commits(dead=5, live=95), out_of_range={0: Named(1, ("dead",))})
    d = one(facts(5, 95, alone="dead", p=p), names, bytes_budget(3_600, EVICT))
    assert (d.status, d.delete_before) == (PartitionStatus.DELETABLE, 75)
    assert d.budget is not None and d.budget.evicted == (GroupLoss("dead", 45),), "only what is left to lose"


def test_a_commit_above_the_high_watermark_holds_whatever_the_budget() -> None:
    names = Below(commits(dead=5, ghost=120), out_of_range={0: Named(1, ("ghost",))})
    d = one(facts(5, 120, alone="dead"), names, bytes_budget(2_500, EVICT))
    assert (d.status, d.reason) == (PartitionStatus.HELD, HoldReason.OFFSET_OUT_OF_RANGE)


# -- the summary --------------------------------------------------------------------------------------


def test_the_summary_counts_partitions_over_budget_and_lists_every_eviction() -> None:
    names = Below(
        {0: {"dead": (10, False), "live": (79, False)}, 1: {"dead": (10, False), "audit": (20, True)}}
    )
    both = [facts(10, 79, alone="dead", p=state(0)), facts(10, 20, alone="dead", p=state(1))]
    result = summarize(decide(both, names, budget=bytes_budget(2_500, EVICT)))
    assert (result.summary.over_budget_partitions, result.summary.evicted_records) == (1, 65 + 10)
    ((topic),) = result.topics
    assert topic.over_budget == 1
    assert [(e.group, e.partition, e.records) for e in topic.evicted] == [("dead", 0, 65), ("dead", 1, 10)]
    assert [(e.partition, e.offset, [(g.group, g.records) for g in e.groups]) for e in result.evictions] == [
        (0, 75, [("dead", 65)]),
        (1, 20, [("dead", 10)]),
    ]
    assert [(c.partition, c.offset) for c in result.deletes] == [(0, 75), (1, 20)]
    assert [p.over_budget for p in result.partitions] == [False, True]
