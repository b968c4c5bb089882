"""CleanerManager: which log, which range (Kafka's LogCleanerManagerTest, restated)."""

from __future__ import annotations

from ebb_broker.log.cleaner_manager import cleanable_offsets
from tests.unit.broker.log.log_helpers import Clock, batch

ONE = len(batch(b"v", key=b"0"))


def _fill(lg, keys, ts: int) -> None:  # type: ignore[no-untyped-def]
    for k in keys:
        lg.append(batch(b"v", key=b"%d" % k, ts=ts))


def test_grab_filthiest_log_by_dirty_ratio(manager, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    mgr = manager()
    for name, keys in (("clean", [0, 1, 2, 3, 4, 5]), ("dirty", [0, 0, 0, 0, 0, 1])):
        mgr.create_topic(name, 1, {"cleanup.policy": "compact", "segment.bytes": str(ONE * 2)})
        _fill(mgr.get_log(name, 0), keys, clock.now)
    mgr.cleaner.checkpoints[("clean", 0)] = 4  # two thirds clean already
    chosen, reason = mgr.cleaner.grab_filthiest(clock.now)
    assert chosen.log.topic == "dirty" and reason == "dirty-ratio"
    assert (chosen.clean_bytes, chosen.cleanable_bytes) == (0, ONE * 4)


def test_log_to_clean_counts_clean_and_cleanable_bytes(manager, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    mgr = manager()
    mgr.create_topic("t", 1, {"cleanup.policy": "compact", "segment.bytes": str(ONE * 2)})
    _fill(mgr.get_log("t", 0), range(9), clock.now)  # segments [0,2) [2,4) [4,6) [6,8) active [8,9)
    mgr.cleaner.checkpoints[("t", 0)] = 4
    ltc = mgr.cleaner.log_to_clean(mgr.get_log("t", 0), clock.now)
    assert (ltc.clean_bytes, ltc.cleanable_bytes, ltc.cleanable_ratio) == (ONE * 4, ONE * 4, 0.5)


def test_delete_only_logs_are_not_cleaned(manager, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    mgr = manager()
    mgr.create_topic("d", 1, {"segment.bytes": str(ONE)})
    _fill(mgr.get_log("d", 0), [0, 0, 0, 0], clock.now)
    assert mgr.run_cleaner() is None
    mgr.create_topic("cd", 1, {"segment.bytes": str(ONE), "cleanup.policy": "compact,delete"})
    _fill(mgr.get_log("cd", 0), [0, 0, 0, 0], clock.now)
    report = mgr.run_cleaner()
    assert report is not None and report.topic == "cd"


def test_dirty_offset_reset_when_out_of_range(manager, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    mgr = manager()
    mgr.create_topic("t", 1, {"cleanup.policy": "compact,delete", "segment.bytes": str(ONE * 2)})
    lg = mgr.get_log("t", 0)
    _fill(lg, range(6), clock.now)
    for bad in (100, 1):
        lg.delete_records(2) if bad == 1 else None
        offsets = cleanable_offsets(lg, bad, clock.now)
        assert offsets.first_dirty == lg.log_start_offset and offsets.checkpoint_reset
    mgr.cleaner.checkpoints[("t", 0)] = 100
    mgr.cleaner.log_to_clean(lg, clock.now)
    assert mgr.cleaner.checkpoints[("t", 0)] == 2  # force-reset and rewritten


def test_cleanable_offsets_end_at_active_segment(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    lg = make_log(cleanup_policy="compact", segment_bytes=ONE * 2)
    assert cleanable_offsets(lg, None, clock.now).first_uncleanable == 0  # nothing but the active segment
    _fill(lg, range(5), clock.now)
    assert cleanable_offsets(lg, None, clock.now).first_uncleanable == 4 == lg.local.active.base_offset


def test_cleanable_offsets_stop_at_min_compaction_lag(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    """KIP-58 (testCleanableOffsetsForTime / ForShortTime)."""
    lg = make_log(cleanup_policy="compact", segment_bytes=ONE * 2, min_compaction_lag_ms=60_000)
    _fill(lg, range(4), clock.now - 120_000)  # old: [0,2) [2,4)
    _fill(lg, range(4), clock.now - 1_000)  # young: [4,6) [6,8)
    _fill(lg, [9], clock.now)
    assert cleanable_offsets(lg, None, clock.now).first_uncleanable == 4
    short = make_log(
        lg.directory.with_name("short-0"),
        cleanup_policy="compact",
        segment_bytes=ONE * 2,
        min_compaction_lag_ms=10,
    )
    _fill(short, range(5), clock.now - 1_000)
    assert cleanable_offsets(short, None, clock.now).first_uncleanable == 4


def test_max_compaction_lag_makes_cleaning_urgent(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    lg = make_log(cleanup_policy="compact", segment_bytes=ONE * 2, max_compaction_lag_ms=60_000)
    _fill(lg, range(3), clock.now - 30_000)
    assert not cleanable_offsets(lg, None, clock.now).needs_compaction_now
    clock.advance(30_001)
    assert cleanable_offsets(lg, None, clock.now).needs_compaction_now
