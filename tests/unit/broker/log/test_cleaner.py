"""Cleaner: the offset map and the recopy rules (Kafka's LogCleanerTest, restated for this engine)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ebb_broker.log.cleaner import Cleaner, CleanerStats, OffsetMap, group_segments_by_size
from ebb_broker.log.log import Log
from ebb_broker.log.log_config import LogConfig
from ebb_broker.log.records import iter_headers
from tests.unit.broker.log.log_helpers import T0, Clock, batch, read_all

ONE = len(batch(b"v0", key=b"k0"))


def _records(lg: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    return read_all(lg, lg.log_start_offset)


def _keyed(lg: Log, keys: list[int], value: bytes | None = b"v", ts: int = T0) -> None:
    for k in keys:
        lg.append(batch(value, key=b"%d" % k, ts=ts))


def _cleaner(clock: Clock, buffer: int = 1 << 20) -> Cleaner:
    return Cleaner(buffer, clock)


def test_clean_segments_removes_keys_mapped_later(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    """testCleanSegments: keys mapped to an offset above theirs vanish; bytes read = segment sizes."""
    lg = make_log(cleanup_policy="compact", segment_bytes=ONE * 4)
    _keyed(lg, list(range(10)) * 2)
    offset_map = OffsetMap(1 << 20)
    for k in (1, 3, 5, 7, 9):
        offset_map.put(b"%d" % k, 2**62)
    offset_map.start = offset_map.latest_offset = 2**62  # the map covers a later (dirty) range
    offset_map.seal()
    segs = lg.segments()[:-1]
    stats = CleanerStats()
    _cleaner(clock)._clean_group(lg, segs[:2], offset_map, clock.now, stats)
    assert stats.bytes_read == sum(s.size for s in segs[:2])
    keys_left = {k for o, k, _v in _records(lg) if o < 8}
    assert keys_left == {b"0", b"2", b"4", b"6"}


def test_cleaning_with_deletes(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    """testCleaningWithDeletes: after tombstones for all even keys, no even key has a value."""
    lg = make_log(cleanup_policy="compact", segment_bytes=ONE * 6)
    _keyed(lg, list(range(10)))
    _keyed(lg, [0, 2, 4, 6, 8], value=None)
    _keyed(lg, [100])  # so the tombstones are not in the active segment
    lg.roll()
    _cleaner(clock).clean(lg, 0, lg.local.active.base_offset)
    values = {k: v for _o, k, v in _records(lg)}
    assert all(values[b"%d" % k] is None for k in (0, 2, 4, 6, 8))  # tombstones survive the first cleaning
    assert all(values[b"%d" % k] == b"v" for k in (1, 3, 5, 7, 9))
    assert len([k for _o, k, _v in _records(lg)]) == 11


def test_partial_segment_clean(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    """testPartialSegmentClean: a map of one entry removes one duplicate per pass."""
    lg = make_log(cleanup_policy="compact")
    _keyed(lg, [0, 1, 0, 1, 0])
    lg.roll()
    cleaner = _cleaner(clock, buffer=48)  # capacity 1
    assert cleaner.clean(lg, 2, 5).end_offset == 3
    assert [(o, k) for o, k, _v in _records(lg)] == [(1, b"1"), (2, b"0"), (3, b"1"), (4, b"0")]
    assert cleaner.clean(lg, 3, 5).end_offset == 4
    assert [o for o, _k, _v in _records(lg)] == [2, 3, 4]
    cleaner.clean(lg, 4, 5)
    assert [(o, k) for o, k, _v in _records(lg)] == [(3, b"1"), (4, b"0")]


def test_uncleanable_section_is_untouched(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    lg = make_log(cleanup_policy="compact", segment_bytes=ONE * 3)
    _keyed(lg, [0, 0, 0, 1, 1, 1, 2, 2, 2, 0, 1, 2])
    untouched = {s.base_offset: s.log_path.read_bytes() for s in lg.segments() if s.base_offset >= 6}
    _cleaner(clock).clean(lg, 0, 6)
    assert {s.base_offset: s.log_path.read_bytes() for s in lg.segments() if s.base_offset >= 6} == untouched
    assert [o for o, _k, _v in _records(lg) if o < 6] == [2, 5]


def test_unkeyed_records_are_dropped_and_counted(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    lg = make_log(segment_bytes=ONE * 3)
    lg.append(batch(b"a", key=None))
    _keyed(lg, [1, 2, 1, 2])
    lg.update_config(LogConfig.parse({"cleanup.policy": "compact", "segment.bytes": str(ONE * 3)}))
    result = _cleaner(clock).clean(lg, 0, lg.local.active.base_offset)
    assert result.stats.invalid_records == 1
    assert all(k is not None for _o, k, _v in _records(lg))


def test_segment_grouping_by_size_index_and_offset_span(tmp_path: Path, clock: Clock) -> None:
    lg = Log.open(
        tmp_path / "t-0",
        "t",
        0,
        LogConfig.parse({"segment.bytes": str(ONE), "index.interval.bytes": "0"}),
        clock=clock,
    )
    _keyed(lg, list(range(10)))
    segs = lg.segments()[:-1]
    assert [len(g) for g in group_segments_by_size(segs, ONE * 3, 1 << 20)] == [3, 3, 3]
    assert all(s.time_index.size_in_bytes() == 12 for s in segs)  # the final entry written on roll
    assert [len(g) for g in group_segments_by_size(segs, ONE * 100, 24)] == [2, 2, 2, 2, 1]
    lg.close()
    sparse = Log.open(tmp_path / "s-0", "s", 0, LogConfig.parse({"segment.bytes": str(ONE)}), clock=clock)
    for offset in (0, 2**31 - 2, 2**31 + 5):  # offset jumps: an int32 relative offset would overflow
        raw = bytearray(batch(b"v", key=b"k"))
        raw[:8] = offset.to_bytes(8, "big")
        seg = sparse.local.new_segment(offset) if offset else sparse.local.active
        from ebb_broker.log.segment import BatchInfo
        from ebb_formats.record_batch import read_header

        h = read_header(bytes(raw))
        seg.append([bytes(raw)], [BatchInfo(len(raw), h.last_offset, h.max_timestamp)])
        sparse.local.segments.add(seg)
    assert [len(g) for g in group_segments_by_size(sparse.segments(), ONE * 100, 1 << 20)] == [2, 1]
    sparse.close()


def test_cleaning_beyond_missing_offsets(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    """testCleaningBeyondMissingOffsets: across gaps, the next dirty offset is the active segment's base."""
    lg = make_log(cleanup_policy="compact", segment_bytes=ONE * 2)
    _keyed(lg, [0, 0, 1, 1, 2, 2, 3])
    cleaner = _cleaner(clock)
    cleaner.clean(lg, 0, 6)  # leaves gaps at offsets 0, 2, 4
    result = cleaner.clean(lg, 0, 6)
    assert result.end_offset == lg.local.active.base_offset == 6


def test_tombstone_kept_regardless_of_its_own_timestamp(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    """testCleanTombstone: an old tombstone is still retained by the next cleanings (the horizon counts
    from the cleaning that first saw it, not from the record)."""
    lg = make_log(cleanup_policy="compact", delete_retention_ms=1000)
    lg.append(batch(b"v", key=b"k", ts=0))
    lg.append(batch(None, key=b"k", ts=0))
    lg.append(batch(b"other", key=b"z"))
    lg.roll()
    cleaner = _cleaner(clock)
    cleaner.clean(lg, 0, 3)
    cleaner.clean(lg, 0, 3)
    assert [(k, v) for _o, k, v in _records(lg)] == [(b"k", None), (b"z", b"other")]
    clock.advance(1001)
    cleaner.clean(lg, 0, 3)
    assert [(k, v) for _o, k, v in _records(lg)] == [(b"z", b"other")]


def test_retains_last_empty_batch(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    """testCleanSegmentsRetainingLastEmptyBatch: all keys deleted, one empty batch keeps the group's
    last offset so the segment still ends at the next segment's base - 1."""
    lg = make_log(cleanup_policy="compact", delete_retention_ms=0)
    _keyed(lg, [0, 1])
    _keyed(lg, [0, 1], value=None)
    lg.roll()
    cleaner = _cleaner(clock)
    cleaner.clean(lg, 0, 4)
    clock.advance(1)
    cleaner.clean(lg, 0, 4)
    assert _records(lg) == []
    first = lg.segments()[0]
    hs = [h for _p, h in iter_headers(first.log_path.read_bytes())]
    assert [(h.count, h.last_offset) for h in hs] == [(0, 3)]
    assert lg.segments()[1].base_offset == 4


@pytest.mark.parametrize("null_is_tombstone", [True, False])
def test_tombstone_null_value_enable(make_log, clock: Clock, null_is_tombstone: bool) -> None:  # type: ignore[no-untyped-def]
    lg = make_log(
        cleanup_policy="compact",
        delete_retention_ms=0,
        tombstone_null_value_enable=str(null_is_tombstone).lower(),
    )
    _keyed(lg, [0], value=None)
    _keyed(lg, [1])
    lg.roll()
    cleaner = _cleaner(clock)
    cleaner.clean(lg, 0, 2)
    clock.advance(1)
    cleaner.clean(lg, 0, 2)
    keys = [k for _o, k, _v in _records(lg)]
    assert keys == ([b"1"] if null_is_tombstone else [b"0", b"1"])


def test_explicit_tombstones_keep_their_payload_until_removed(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    """KIP-87 as Ebb defines it: attribute bit 0x01 or header ebb.tombstone; the payload stays readable
    until the tombstone expires."""
    from ebb_broker.log.records import NewRecord, build_batch

    lg = make_log(cleanup_policy="compact", delete_retention_ms=1000, tombstone_null_value_enable="false")
    _keyed(lg, [1, 2])
    lg.append(build_batch([NewRecord(b"1", b"deleted by job 42", attributes=0x01)], timestamp_ms=clock.now))
    lg.append(
        build_batch(
            [NewRecord(b"2", b"deleted by job 43", headers=(("ebb.tombstone", b""),))], timestamp_ms=clock.now
        )
    )
    lg.roll()
    cleaner = _cleaner(clock)
    cleaner.clean(lg, 0, 4)
    assert [(k, v) for _o, k, v in _records(lg)] == [
        (b"1", b"deleted by job 42"),
        (b"2", b"deleted by job 43"),
    ]
    clock.advance(1001)
    cleaner.clean(lg, 0, 4)
    assert _records(lg) == []


@pytest.mark.parametrize("codec", ["GZIP", "SNAPPY", "LZ4", "ZSTD"])
def test_compressed_batches_are_cleaned_and_keep_their_codec(make_log, clock: Clock, codec: str) -> None:  # type: ignore[no-untyped-def]
    from ebb_broker.log.compression import Compression
    from ebb_broker.log.records import NewRecord, build_batch

    lg = make_log(cleanup_policy="compact")
    for r in range(3):  # each batch holds every key once, with a shuffled order, so batches are partly kept
        keys = [b"k%d" % ((i * 7 + r) % 10) for i in range(10)]
        recs = [NewRecord(k, b"round-%d" % r) for k in keys]
        lg.append(build_batch(recs, compression=Compression[codec], timestamp_ms=clock.now))
    lg.append(
        build_batch([NewRecord(b"k1", b"latest")], compression=Compression[codec], timestamp_ms=clock.now)
    )
    lg.roll()
    _cleaner(clock).clean(lg, 0, lg.log_end_offset)
    values = {k: v for _o, k, v in _records(lg)}
    assert values == {**{b"k%d" % i: b"round-2" for i in range(10)}, b"k1": b"latest"}
    assert len(_records(lg)) == 10  # the last round's batch was spliced: 9 of its 10 records kept
    for seg in lg.segments():
        for _p, h in iter_headers(seg.log_path.read_bytes()):
            assert h.compression == Compression[codec]


def test_cleaner_retains_each_producers_last_sequence(manager, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    """testLogCleanerRetainsProducerLastSequence: a producer's newest batch survives cleaning (empty if
    superseded), so after a restart its retry is still recognised as a duplicate."""
    from ebb_broker.log.records import NewRecord, build_batch

    mgr = manager()
    mgr.create_topic("t", 1, {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"})
    lg = mgr.get_log("t", 0)
    idempotent = build_batch(
        [NewRecord(b"k", b"old")], producer_id=5, producer_epoch=0, base_sequence=0, timestamp_ms=clock.now
    )
    first = lg.append(idempotent)
    lg.append(batch(b"newer", key=b"k"))  # supersedes the producer's only record
    lg.roll()
    report = mgr.run_cleaner()
    assert report is not None and (report.first_dirty, report.end_offset) == (0, 2)
    assert [v for _o, _k, v in _records(lg)] == [b"newer"]
    mgr.abandon()
    lg = manager().get_log("t", 0)
    assert lg.append(idempotent) == first  # the retry is answered, not written again
    assert lg.log_end_offset == 2
