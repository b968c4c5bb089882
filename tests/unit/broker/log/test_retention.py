"""Consumed retention (KIP-68) as a retention predicate fed by a snapshot of the committed offsets."""

from __future__ import annotations

from pathlib import Path

import pytest

from ebb_broker.log.retention import CommittedOffsets
from tests.unit.broker.log.log_helpers import Clock, batch

ONE = len(batch(b"x" * 10, key=b"k"))
HOUR = 3_600_000


def _at(minimum: int, *, other: int = 20) -> CommittedOffsets:
    """What the coordinator hands the pass when the slower of the two counted groups on t-0 committed
    `minimum` (the other one `other`)."""
    return CommittedOffsets({"app": {("t", 0): minimum}, "audit": {("t", 0): other}})


def _log(make_log, clock: Clock, commitoffset_ms: int = HOUR, **kw):  # type: ignore[no-untyped-def]
    lg = make_log(
        segment_bytes=ONE * 5,
        retention_ms=kw.pop("retention_ms", 48 * HOUR),
        retention_commitoffset_ms=commitoffset_ms,
        retention_commitoffset_groups=kw.pop("groups", "app,audit"),
        **kw,
    )
    for _ in range(20):  # segments [0,5) [5,10) [10,15) [15,20), two hours old
        lg.append(batch(b"x" * 10, key=b"k", ts=clock.now - 2 * HOUR))
    return lg


def test_consumed_and_old_segments_are_deleted(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    lg = _log(make_log, clock)
    result = lg.delete_old_segments(committed=_at(12))
    # min committed offset 12: [0,5) and [5,10) are wholly consumed, [10,15) is not
    assert result.by_reason == {"consumed": 2} and lg.log_start_offset == 10


def test_a_lagging_group_holds_the_data(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    lg = _log(make_log, clock)
    assert lg.delete_old_segments(committed=_at(4)).segments == 0
    assert lg.delete_old_segments(committed=_at(5)).segments == 1


def test_unknown_offsets_skip_the_partition(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    lg = _log(make_log, clock)
    result = lg.delete_old_segments(committed=CommittedOffsets(known=False))
    assert result.segments == 0 and result.consumed_skipped
    result = lg.delete_old_segments(committed=None)  # no snapshot at all: fail closed
    assert result.segments == 0 and result.consumed_skipped
    nobody_read_t0 = CommittedOffsets({"app": {("other", 0): 20}, "audit": {("other", 0): 20}})
    result = lg.delete_old_segments(committed=nobody_read_t0)
    assert result.segments == 0 and not result.consumed_skipped


def test_every_named_group_must_have_committed(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    lg = _log(make_log, clock)
    only_app = CommittedOffsets({"app": {("t", 0): 20}})  # audit never committed on t-0: read nothing
    assert lg.delete_old_segments(committed=only_app).segments == 0
    assert lg.delete_old_segments(committed=_at(12)).segments == 2


def test_groups_not_named_never_count(make_log, clock: Clock, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Any principal with READ on some group may commit for it: only the topic's named groups count."""
    lg = _log(make_log, clock)
    strangers = CommittedOffsets({"reader": {("t", 0): 20}, "other": {("t", 0): 20}})
    assert lg.delete_old_segments(committed=strangers).segments == 0
    # consumed retention on, no group named: nothing goes
    unnamed = _log(make_log, clock, groups="", directory=tmp_path / "unnamed")
    assert unnamed.delete_old_segments(committed=_at(20)).segments == 0


def test_a_commit_past_the_log_end_proves_nothing(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    """The commit path accepts any offset (as Kafka's): 2**63-1 from a client must not free the log."""
    lg = _log(make_log, clock)
    assert lg.delete_old_segments(committed=_at(2**63 - 1)).segments == 0
    assert lg.delete_old_segments(committed=_at(12, other=21)).segments == 0  # the LEO is 20
    assert lg.delete_old_segments(committed=_at(20, other=20)).segments == 4  # at the LEO: all read


def test_young_data_is_kept_even_when_consumed(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    lg = _log(make_log, clock, commitoffset_ms=3 * HOUR)
    assert lg.delete_old_segments(committed=_at(20)).segments == 0
    clock.advance(HOUR + 1)
    result = lg.delete_old_segments(committed=_at(20))
    assert result.segments == 4 and lg.log_start_offset == 20  # all consumed: roll first, keep one empty


def test_disabled_consumed_retention_deletes_nothing_it_consumed(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    lg = _log(make_log, clock, commitoffset_ms=-1)
    result = lg.delete_old_segments(committed=_at(20))
    assert result.segments == 0 and not result.consumed_skipped


def test_forced_retention_still_runs_after_consumed(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    lg = _log(make_log, clock, commitoffset_ms=HOUR, retention_ms=HOUR)
    result = lg.delete_old_segments(committed=_at(7))
    assert result.by_reason == {"consumed": 1, "retention-ms": 3}


def test_compact_only_topics_ignore_consumed_retention(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    lg = _log(make_log, clock, cleanup_policy="compact")
    assert lg.delete_old_segments(committed=_at(20)).segments == 0


def test_log_manager_hands_the_snapshot_to_every_log(manager, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    mgr = manager(log_retention_commitoffset_enable="true", log_retention_commitoffset_ms="1000")
    mgr.create_topic("t", 1, {"segment.bytes": str(ONE * 5)})
    lg = mgr.get_log("t", 0)
    for _ in range(10):
        lg.append(batch(b"x" * 10, key=b"k", ts=clock.now - 5000))
    report = mgr.run_retention(_at(5))
    assert report.partitions[("t", 0)].by_reason == {}  # no group named: consumed retention frees nothing
    mgr.alter_topic_config("t", {"retention.commitoffset.groups": "app,audit"})
    assert mgr.consumed_retention_groups() == {"app", "audit"}
    report = mgr.run_retention(_at(5, other=10))
    assert report.partitions[("t", 0)].by_reason == {"consumed": 1}


def test_a_snapshot_cannot_change_under_a_running_pass() -> None:
    """The event loop keeps committing while a pass runs in a worker thread: the pass must see the
    offsets as they were when it started, so the snapshot copies and freezes what it is given."""
    live = {("t", 0): 5}
    snapshot = CommittedOffsets({"app": live})
    live[("t", 0)] = 500  # a commit on the loop after the snapshot was taken
    live[("t", 1)] = 7
    assert snapshot.consumed_up_to("t", 0, ["app"], 1000) == 5
    assert snapshot.consumed_up_to("t", 1, ["app"], 1000) is None
    with pytest.raises(TypeError):
        snapshot.by_group["app"][("t", 0)] = 9  # type: ignore[index]
