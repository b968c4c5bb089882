"""Unread loss, counted once: what each run counts from the commits below the log start and the ledger the
last run left in the policy's status, against the records really deleted before their group read them."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ebb_operator.analysis import unread
from ebb_operator.analysis.decide import BelowLogStart
from ebb_operator.analysis.unread import Accounting, account, by_topic
from ebb_operator.models.retention_policy import RetentionPolicyStatus
from ebb_operator.models.unread import UnreadAccount

NOW = 1_800_000_000_000
T = "orders"


def run(
    ledger: Sequence[UnreadAccount],
    commits: dict[tuple[str, int], int],
    log_starts: dict[int, int | None],
    *,
    counted: Sequence[str] | None = None,
    groups: Sequence[str] | None = None,
    now_ms: int = NOW,
) -> Accounting:
    """One run over topic T: `commits` (group, partition) -> offset of the counted groups, as the plan
    reports those below the log start (`decide.behind_log_start`)."""
    counted = sorted({g for g, _ in commits}) if counted is None else counted
    below = [
        BelowLogStart(T, g, p, c, start)
        for (g, p), c in sorted(commits.items())
        if g in counted and (start := log_starts[p]) is not None and c < start
    ]
    starts = {(T, p): s for p, s in log_starts.items()}
    return account(ledger, below, starts, counted, counted if groups is None else groups, now_ms)


def totals(result: Accounting) -> dict[str, int]:
    return {a.group: a.records for a in result.ledger}


def restarted(ledger: Sequence[UnreadAccount]) -> list[UnreadAccount]:
    """The ledger as a new operator process reads it: from the policy's status, through the API server."""
    status = RetentionPolicyStatus(unread_ledger=list(ledger)).model_dump(mode="json", by_alias=True)
    return RetentionPolicyStatus.model_validate(status).unread_ledger


def test_records_below_a_groups_commit_that_left_the_log_are_counted_once() -> None:
    first = run([], {("dead", 0): 5, ("live", 0): 15}, {0: 20})
    assert totals(first) == {"dead": 15, "live": 5}
    assert [(c.group, c.records, c.partitions) for c in first.counted] == [
        ("dead", 15, [0]),
        ("live", 5, [0]),
    ]
    # The same state seen again, by the same process or a restarted one: nothing more.
    for ledger in (first.ledger, restarted(first.ledger)):
        again = run(ledger, {("dead", 0): 5, ("live", 0): 15}, {0: 20}, now_ms=NOW + 60_000)
        assert (again.counted, totals(again)) == ([], {"dead": 15, "live": 5})
    # The log start moves on: only what left since is counted.
    later = run(restarted(first.ledger), {("dead", 0): 5, ("live", 0): 15}, {0: 25}, now_ms=NOW + 60_000)
    assert [(c.group, c.records) for c in later.counted] == [("dead", 5), ("live", 5)]
    assert totals(later) == {"dead": 20, "live": 10}  # each: the new log start minus its commit
    (dead, _) = later.ledger
    assert (dead.since, dead.last_counted) == ("2027-01-15T08:00:00Z", "2027-01-15T08:01:00Z")


def test_status_shows_per_topic_the_groups_with_the_most_loss_first() -> None:
    ledger = run([], {("a", 0): 18, ("b", 0): 2, ("b", 1): 9, ("c", 1): 10}, {0: 20, 1: 10}).ledger
    shown, count = by_topic(ledger)[T]
    assert [(u.group, u.records) for u in shown] == [("b", 19), ("a", 2)]
    assert count == 2  # c is at the log start of partition 1: it lost nothing


def test_a_group_that_caught_up_and_fell_behind_again_counts_from_its_commit() -> None:
    first = run([], {("g", 0): 5}, {0: 10})
    caught_up = run(first.ledger, {("g", 0): 30}, {0: 10})
    assert caught_up.counted == [] and caught_up.ledger[0].partitions == []  # its mark ended, its total stays
    behind = run(caught_up.ledger, {("g", 0): 30}, {0: 40})
    assert totals(behind) == {"g": 5 + 10}


def test_marks_the_run_cannot_check_stay() -> None:
    first = run([], {("g", 0): 5, ("h", 0): 5}, {0: 10})
    # The log start could not be read: nothing counted, nothing forgotten.
    unknown = run(first.ledger, {("g", 0): 5, ("h", 0): 5}, {0: None})
    assert unknown.counted == [] and unknown.ledger == first.ledger
    # h is not counted for a run (inactive, say) while the log moves on, then counted again: what left
    # in between is counted then, and once; a group gone from the cluster loses its marks.
    skipped = run(unknown.ledger, {("g", 0): 5, ("h", 0): 5}, {0: 15}, counted=["g"], groups=["g", "h"])
    assert [(c.group, c.records) for c in skipped.counted] == [("g", 5)]
    back = run(skipped.ledger, {("g", 0): 5, ("h", 0): 5}, {0: 15})
    assert [(c.group, c.records) for c in back.counted] == [("h", 5)]
    assert totals(back) == {"g": 10, "h": 10}
    gone = run(back.ledger, {("g", 0): 5}, {0: 15}, counted=["g"], groups=["g"])
    assert [a.partitions for a in gone.ledger] == [[0], []]


def test_a_topic_created_again_counts_from_the_commit() -> None:
    first = run([], {("g", 0): 5}, {0: 50})
    # The new log starts at 0; the group's old commit at 5 is no longer below it... until records go.
    recreated = run(first.ledger, {("g", 0): 2}, {0: 8})
    assert totals(recreated) == {"g": 45 + 6}


def test_a_full_ledger_defers_loss_to_a_later_run_and_never_counts_it_twice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(unread, "MAX_MARKS", 2)
    commits = {("a", 0): 1, ("a", 1): 1, ("b", 0): 3}
    full = run([], commits, {0: 10, 1: 10})
    assert (totals(full), full.deferred) == ({"a": 18}, 1)
    # a catches up on partition 1: room for b, whose loss is counted from its commit, once.
    commits[("a", 1)] = 12
    later = run(full.ledger, commits, {0: 10, 1: 10})
    assert (totals(later), later.deferred, later.counted[0].group) == ({"a": 18, "b": 7}, 0, "b")
    assert run(later.ledger, commits, {0: 10, 1: 10}).counted == []


# -- against ground truth -------------------------------------------------------------------------------

GROUPS = ("a", "b")
PARTITIONS = (0, 1)
# A step: a group commits further, the log start moves (any path: retention, an eviction, DeleteRecords),
# or a run (which may not read a partition's log start, may not count a group, may follow a restart).
STEPS = st.one_of(
    st.tuples(st.just("commit"), st.sampled_from(GROUPS), st.sampled_from(PARTITIONS), st.integers(0, 6)),
    st.tuples(st.just("delete"), st.sampled_from(PARTITIONS), st.integers(0, 8)),
    st.tuples(
        st.just("run"),
        st.sets(st.sampled_from(PARTITIONS)),  # partitions whose log start it cannot read
        st.sets(st.sampled_from(GROUPS)),  # groups it does not count
        st.booleans(),  # a restarted operator: the ledger comes from status
    ),
)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.lists(STEPS, max_size=30), st.booleans())
def test_no_record_is_counted_twice_nor_one_its_group_had_read(steps: list[tuple], observed: bool) -> None:
    """Commits and log starts move forward; `lost` is what really left before its group read it. Counted
    never exceeds it; where a full run follows every step (`observed`), counted equals it."""
    commits = {(g, p): 0 for g in GROUPS for p in PARTITIONS}
    start = dict.fromkeys(PARTITIONS, 0)
    lost = dict.fromkeys(GROUPS, 0)
    ledger: list[UnreadAccount] = []
    counted = dict.fromkeys(GROUPS, 0)

    def do_run(blind: set[int], skip: set[str], restart: bool) -> None:
        nonlocal ledger
        result = run(
            restarted(ledger) if restart else ledger,
            commits,
            {p: None if p in blind else s for p, s in start.items()},
            counted=[g for g in GROUPS if g not in skip],
            groups=GROUPS,
        )
        for c in result.counted:
            counted[c.group] += c.records
        ledger = result.ledger
        assert totals(result) == {g: n for g, n in counted.items() if n}  # status shows what was counted

    for step in steps:
        if step[0] == "commit":
            _, g, p, by = step
            commits[g, p] += by
        elif step[0] == "delete":
            _, p, by = step
            new = start[p] + by
            for g in GROUPS:
                lost[g] += max(0, new - max(commits[g, p], start[p]))
            start[p] = new
        else:
            do_run(*step[1:])
        if observed:
            do_run(set(), set(), False)
        for g in GROUPS:
            assert counted[g] <= lost[g], (g, counted, lost)
    if observed:
        assert counted == lost
