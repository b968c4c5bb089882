"""Who pins the disk: what one group alone keeps (from its commit to where the cut would be had it read
everything: the next counted commit, capped by consumedRetention and the high watermark), how old the
oldest record it has not read is, and which commits lie below the log start (unread loss).

The partitions of `test_decide.py`: 100 offsets, 10 000 bytes (100 bytes per offset), the offset at
now - consumedRetention is 80.
"""

from __future__ import annotations

from ebb_operator.analysis.decide import (
    NOBODY,
    BelowLogStart,
    Missing,
    decide,
    set_oldest_unread,
    summarize,
    unread_positions,
)
from ebb_operator.analysis.policy import BudgetRule
from ebb_operator.models.plan import HoldReason
from ebb_operator.models.retention_policy import BudgetAction
from tests.unit.operator.analysis.test_budget import Below
from tests.unit.operator.analysis.test_decide import Names, facts, groups, state

NOW = 1_800_000_000_000
HOUR_MS = 3_600_000


def test_a_group_alone_at_the_minimum_pins_up_to_the_next_commit() -> None:
    names = Names(above={0: 70, 1: 95})
    # Partition 1: the next commit (95) is younger than consumedRetention: the cut would stop at 80.
    decisions = decide([facts(50, 70, alone="slow"), facts(50, 95, alone="slow", p=state(1))], names)
    assert [(d.unread_from, d.pinned_records, d.pinned_bytes) for d in decisions] == [
        (50, 20, 2_000),
        (50, 30, 3_000),
    ]
    assert names.asked_above == [{0: 50, 1: 50}]  # one read of the commits for every partition
    (topic,) = summarize(decisions, ["fast", "slow"]).topics
    (slow,) = topic.limiting
    assert (slow.group, slow.lag_records, slow.pinned_records, slow.pinned_bytes) == ("slow", 100, 50, 5_000)


def test_a_group_without_a_commit_pins_from_the_log_start() -> None:
    late = Names(missing={0: Missing(groups("late"), NOBODY)})
    (d,) = decide([facts(60, readers=2, p=state(log_start=10))], late)
    assert (d.reason, d.unread_from, d.pinned_records, d.pinned_bytes) == (
        HoldReason.NO_COMMIT,
        10,
        50,  # 10 up to the other group's 60
        5_555,  # 10 000 bytes over 90 offsets
    )


def test_a_required_group_without_a_commit_pins_nothing_alone_where_others_lack_one_too() -> None:
    audit = Names(missing={0: Missing(groups("audit", "late"), groups("audit"))})
    (d,) = decide([facts(60, readers=3)], audit)
    assert (d.reason, d.blocking_groups, d.unread_from, d.pinned_records) == (
        HoldReason.REQUIRED_GROUP_MISSING,
        ["audit"],
        0,
        0,  # had audit committed everything, late would still hold the partition
    )


def test_groups_that_stand_together_pin_nothing_alone() -> None:
    tied = Names(at_minimum={0: groups("a", "b")})
    (d,) = decide([facts(50, 50, 70, alone=None)], tied)
    assert (d.blocking_groups, d.unread_from, d.pinned_records) == (["a", "b"], 50, 0)
    (entry, _) = summarize([d]).topics[0].limiting
    assert (entry.lag_records, entry.pinned_records, entry.pinned_bytes) == (50, 0, 0)


def test_the_oldest_unread_record_is_the_one_at_the_groups_position() -> None:
    names = Names(above={0: 70, 1: 70})
    decisions = decide([facts(50, 70, alone="slow"), facts(40, 70, alone="slow", p=state(1))], names)
    result = summarize(decisions, ["fast", "slow"])
    assert unread_positions(result.decisions) == {("orders", 0): 50, ("orders", 1): 40}
    # The older of its records at those positions; a partition whose record could not be read is left out.
    set_oldest_unread(result, {("orders", 0): NOW - 3 * HOUR_MS, ("orders", 1): NOW - HOUR_MS}, NOW)
    (slow,) = result.topics[0].limiting
    assert (slow.oldest_unread, slow.oldest_unread_age_seconds) == ("2027-01-15T05:00:00Z", 3 * 3600)


def test_a_group_that_read_everything_has_no_oldest_unread_record() -> None:
    (d,) = decide([facts(100, 100, alone=None, p=state(at_retention=100))], Names())
    assert unread_positions([d]) == {}


def test_commits_below_the_log_start_are_read_for_unread_loss_only_where_the_minimum_is_below() -> None:
    names = Below({0: {"dead": (5, False), "gone": (8, False), "live": (50, False)}})
    behind, caught_up = facts(5, 8, 50, p=state(log_start=10)), facts(20, 50, p=state(1, log_start=10))
    result = summarize(decide([behind, caught_up], names))
    assert ("below", {0: 10}) in names.asked and ("below", {1: 10}) not in names.asked
    assert result.below_log_start == [
        BelowLogStart("orders", "dead", 0, 5, 10),
        BelowLogStart("orders", "gone", 0, 8, 10),
    ]


def test_an_eviction_moves_where_the_named_group_starts_reading() -> None:
    """EvictSlowest passed the dead group and stopped at the required group's commit: the required group
    limits the cut there, and its unread records start there; nobody pins alone what an eviction moved."""
    names = Below({0: {"dead": (5, False), "audit": (30, True)}}, above={0: 30})
    evict = BudgetRule(max_bytes=2_000, max_age_ms=None, action=BudgetAction.EVICT_SLOWEST)
    (d,) = decide([facts(5, 30, alone="dead")], names, budget=evict)
    assert d.budget is not None and [g.group for g in d.budget.evicted] == ["dead"]
    assert (d.delete_before, d.blocking_groups, d.unread_from, d.pinned_records) == (30, ["audit"], 30, 0)
    assert d.behind == ()  # the dead group committed above the log start: it loses at the eviction
