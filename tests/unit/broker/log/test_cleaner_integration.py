"""The cleaner driven by the LogManager, end to end (Kafka's LogCleaner*IntegrationTest, restated)."""

from __future__ import annotations

from ebb_broker.log.records import iter_headers
from tests.unit.broker.log.log_helpers import Clock, batch, read_all

ONE = len(batch(b"v0", key=b"k0"))


def _latest(lg) -> dict[bytes, bytes | None]:  # type: ignore[no-untyped-def]
    out: dict[bytes, bytes | None] = {}
    for _o, k, v in read_all(lg):
        out[k] = v  # type: ignore[index]
    return out


def _write(lg, n_keys: int, rounds: int, ts: int) -> dict[bytes, bytes | None]:  # type: ignore[no-untyped-def]
    expected: dict[bytes, bytes | None] = {}
    for r in range(rounds):
        for k in range(n_keys):
            key, value = b"k%d" % k, b"v%d" % r
            lg.append(batch(value, key=key, ts=ts))
            expected[key] = value
    return expected


def test_min_compaction_lag(manager, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    """cleanerTest: nothing is cleaned before minLag; afterwards the key -> value map is unchanged."""
    mgr = manager()
    mgr.create_topic(
        "t",
        1,
        {"cleanup.policy": "compact", "segment.bytes": str(ONE * 10), "min.compaction.lag.ms": "60000"},
    )
    lg = mgr.get_log("t", 0)
    expected = _write(lg, 5, 6, clock.now)
    size = lg.size_in_bytes()
    assert mgr.run_cleaner() is None
    clock.advance(60_001)
    lg.append(batch(b"new", key=b"fresh", ts=clock.now))
    expected[b"fresh"] = b"new"
    report = mgr.run_cleaner()
    assert report is not None and report.first_dirty == 0
    assert lg.size_in_bytes() < size
    assert _latest(lg) == expected


def test_max_compaction_lag_forces_cleaning(manager, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    """testMaxLogCompactionLag: dirty ratio 1.0 is never exceeded, max lag still forces cleaning."""
    mgr = manager()
    mgr.create_topic(
        "t",
        1,
        {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "1.0", "max.compaction.lag.ms": "10000"},
    )
    lg = mgr.get_log("t", 0)
    expected = _write(lg, 3, 4, clock.now)
    assert mgr.run_cleaner() is None
    clock.advance(10_001)
    lg.append(batch(b"x", key=b"k0", ts=clock.now))  # rolls: the segment reached max.compaction.lag.ms
    expected[b"k0"] = b"x"
    report = mgr.run_cleaner()
    assert report is not None and report.reason == "max-compaction-lag"
    assert len(read_all(lg)) == 4 and _latest(lg) == expected


def test_compact_and_delete_topic(manager, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    """testCleansCombinedCompactAndDeleteTopic: compacted and expired by time."""
    mgr = manager()
    mgr.create_topic(
        "t", 1, {"cleanup.policy": "compact,delete", "segment.bytes": str(ONE * 5), "retention.ms": "100000"}
    )
    lg = mgr.get_log("t", 0)
    _write(lg, 5, 4, clock.now)  # segments [0,5) [5,10) [10,15) and the active [15,20)
    report = mgr.run_cleaner()
    assert report is not None and (report.topic, report.first_dirty, report.end_offset) == ("t", 0, 15)
    assert [o for o, _k, _v in read_all(lg)] == list(range(10, 20))  # the active segment is never cleaned
    clock.advance(100_001)
    lg.append(batch(b"late", key=b"k9", ts=clock.now))
    mgr.run_retention()
    assert [(k, v) for _o, k, v in read_all(lg)] == [(b"k9", b"late")]


def test_tombstone_lifecycle_and_idle_partition(manager, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    """The first cleaning stamps a delete horizon (bit 0x40, baseTimestamp); once it has passed an idle
    partition is cleaned again and the tombstone disappears (Ebb closes KAFKA-8522)."""
    mgr = manager()
    mgr.create_topic(
        "t", 1, {"cleanup.policy": "compact", "delete.retention.ms": "5000", "segment.bytes": str(ONE * 4)}
    )
    lg = mgr.get_log("t", 0)
    _write(lg, 4, 2, clock.now)
    lg.append(batch(None, key=b"k1", ts=clock.now))
    for k in range(4):
        lg.append(batch(b"other", key=b"o%d" % k, ts=clock.now))
    first = mgr.run_cleaner()
    assert first is not None and first.reason == "dirty-ratio" and first.stats.records_read > 0
    stamped = [
        h for s in lg.segments() for _p, h in iter_headers(s.log_path.read_bytes()) if h.has_delete_horizon
    ]
    assert [h.delete_horizon_ms for h in stamped] == [clock.now + 5000]
    assert _latest(lg)[b"k1"] is None
    assert mgr.run_cleaner() is None  # idle, horizon not reached
    clock.advance(5001)
    report = mgr.run_cleaner()
    assert report is not None and report.reason == "tombstone-horizon"
    assert b"k1" not in _latest(lg)
    assert mgr.run_cleaner() is None  # nothing left to expire


def test_cleaner_checkpoint_persists(manager, clock: Clock, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from ebb_broker.log.checkpoint import read_offsets

    mgr = manager()
    mgr.create_topic("t", 1, {"cleanup.policy": "compact", "segment.bytes": str(ONE * 4)})
    _write(mgr.get_log("t", 0), 2, 5, clock.now)
    report = mgr.run_cleaner()
    assert report is not None and report.end_offset > 0
    assert read_offsets(tmp_path / "data" / "cleaner-offset-checkpoint") == {("t", 0): report.end_offset}
    mgr.close()
    again = manager()
    assert again.cleaner.checkpoints == {("t", 0): report.end_offset}
