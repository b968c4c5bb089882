"""Log (Kafka's UnifiedLog): append, read, offsets by time, DeleteRecords and retention counts.

Restates cases of Kafka's UnifiedLogTest (log start offset, DeleteRecords, retention) for this engine.
"""

from __future__ import annotations

import pytest

from ebb_broker.log import RecordsDeleted
from ebb_broker.log.errors import (
    CorruptRecordError,
    InvalidProducerEpochError,
    InvalidRecordError,
    OffsetOutOfRangeError,
    OutOfOrderSequenceError,
    PolicyViolationError,
    RecordTooLargeError,
    RecordValidationError,
)
from ebb_broker.log.log import Log
from ebb_broker.log.log_config import LogConfig
from ebb_broker.log.records import NewRecord, Record, build_batch, encode_batch, validate_batch
from ebb_formats.record_batch import read_header
from tests.unit.broker.log.log_helpers import T0, Clock, batch, read_all

ONE = len(batch(b"x" * 10, key=b"k"))  # size of one single-record batch used below


def _fill(lg, n: int, ts: int = T0) -> None:  # type: ignore[no-untyped-def]
    for _ in range(n):
        lg.append(batch(b"x" * 10, key=b"k", ts=ts))


# -- append / read ----------------------------------------------------------------------------------------


def test_append_assigns_offsets_and_hw_follows_leo(make_log) -> None:  # type: ignore[no-untyped-def]
    lg = make_log()
    info = lg.append(batch(b"a", b"b", b"c"))
    assert (info.base_offset, info.last_offset, info.log_append_time) == (0, 2, -1)
    info = lg.append(batch(b"d", b"e"))
    assert (info.base_offset, info.last_offset) == (3, 4)
    assert lg.high_watermark == lg.log_end_offset == 5
    assert [v for _o, _k, v in read_all(lg)] == [b"a", b"b", b"c", b"d", b"e"]
    # Produce v3+ carries exactly one batch per partition (Kafka's ProduceRequest.validateRecords).
    with pytest.raises(InvalidRecordError, match="exactly one record batch"):
        lg.append(batch(b"f") + batch(b"g"))
    assert lg.log_end_offset == 5


def test_produced_bytes_are_stored_unchanged_but_for_the_offset(make_log) -> None:  # type: ignore[no-untyped-def]
    lg = make_log()
    lg.append(batch(b"first"))
    produced = batch(b"payload", key=b"key", ts=T0 + 5)
    lg.append(produced)
    stored = lg.read(1, 1 << 20).to_bytes()
    assert stored[16:] == produced[16:]  # from magic on, byte for byte what the producer sent
    h = validate_batch(stored, 0, len(stored))  # the stamped prefix lies outside the CRC
    assert (h.base_offset, h.partition_leader_epoch) == (1, 0)


def test_log_append_time_stamps_max_timestamp(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    lg = make_log(message_timestamp_type="LogAppendTime")
    info = lg.append(batch(b"a", ts=5))
    assert info.log_append_time == clock.now
    raw = lg.read(0, 1 << 20).to_bytes()
    h = validate_batch(raw, 0, len(raw))  # CRC recomputed
    assert h.timestamp_type == 1 and h.max_timestamp == clock.now
    assert lg.offset_for_timestamp(clock.now) == (0, clock.now)


def test_bad_input_is_refused_and_nothing_is_written(make_log) -> None:  # type: ignore[no-untyped-def]
    lg = make_log(max_message_bytes=500)
    good = batch(b"ok")
    corrupt = bytearray(batch(b"bad"))
    corrupt[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError, match="CRC"):
        lg.append(bytes(corrupt))
    with pytest.raises(CorruptRecordError, match="claims length"):
        lg.append(good[:-2])
    with pytest.raises(InvalidRecordError, match="exactly one record batch"):
        lg.append(good + b"\x00\x01")
    with pytest.raises(RecordTooLargeError, match=r"max\.message\.bytes"):
        lg.append(batch(b"x" * 600))
    txn = encode_batch([Record(0, T0, b"k", b"v")], base_offset=0, is_transactional=True)
    with pytest.raises(InvalidRecordError, match="producer id"):
        lg.append(txn)  # transactional without a producer id
    control = encode_batch(
        [Record(0, T0, b"\x00\x00\x00\x01", b"")],
        base_offset=0,
        producer_id=1,
        is_transactional=True,
        is_control=True,
    )
    with pytest.raises(InvalidRecordError, match="control records"):
        lg.append(control)
    assert lg.log_end_offset == 0 and lg.size_in_bytes() == 0


def test_compacted_topic_refuses_keyless_records(make_log) -> None:  # type: ignore[no-untyped-def]
    lg = make_log(cleanup_policy="compact")
    with pytest.raises(RecordValidationError, match="without key") as refused:
        lg.append(batch(b"v", key=None))
    assert isinstance(refused.value.cause, InvalidRecordError)
    assert [e.batch_index for e in refused.value.record_errors] == [0]
    lg.append(batch(b"v", key=b"k"))
    assert lg.log_end_offset == 1


def test_idempotent_producer_dedup_sequence_and_epoch(make_log) -> None:  # type: ignore[no-untyped-def]
    lg = make_log()

    def produce(seq: int, epoch: int = 0, n: int = 2) -> object:
        return lg.append(
            build_batch(
                [NewRecord(b"k", b"v")] * n,
                producer_id=7,
                producer_epoch=epoch,
                base_sequence=seq,
                timestamp_ms=T0,
            )
        )

    first = produce(0)
    produce(2)
    assert produce(0) == first  # a retry of a recent batch gets its original offsets
    assert lg.log_end_offset == 4
    with pytest.raises(OutOfOrderSequenceError):
        produce(7)
    produce(0, epoch=1)
    with pytest.raises(InvalidProducerEpochError):
        produce(4, epoch=0)
    assert lg.log_end_offset == 6


def test_read_range_rules(make_log) -> None:  # type: ignore[no-untyped-def]
    lg = make_log()
    _fill(lg, 3)
    with pytest.raises(OffsetOutOfRangeError):
        lg.read(4, 100)
    assert lg.read(3, 100).slices == []  # at the high watermark: empty, not an error
    lg.delete_records(2)
    with pytest.raises(OffsetOutOfRangeError):
        lg.read(1, 100)
    assert [o for o, _k, _v in read_all(lg)] == [2]


def test_offset_for_timestamp_and_special_timestamps(make_log) -> None:  # type: ignore[no-untyped-def]
    lg = make_log(segment_bytes=ONE * 2)
    for i in range(6):
        lg.append(batch(b"v", key=b"k", ts=T0 + i * 10))
    assert lg.offset_for_timestamp(T0 + 25) == (3, T0 + 30)
    assert lg.offset_for_timestamp(T0 + 1000) is None
    assert lg.offset_for_timestamp(-3) == (5, T0 + 50)
    lg.delete_records(2)
    assert lg.offset_for_timestamp(-2) == (2, -1)
    assert lg.offset_for_timestamp(-1) == (6, -1)
    assert lg.offset_for_timestamp(T0) == (2, T0 + 20)  # never below the log start offset


# -- rolling ----------------------------------------------------------------------------------------------


def test_roll_on_segment_bytes(make_log) -> None:  # type: ignore[no-untyped-def]
    lg = make_log(segment_bytes=ONE * 5)
    _fill(lg, 15)
    assert [s.base_offset for s in lg.segments()] == [0, 5, 10]


def test_roll_on_segment_ms_measured_on_record_timestamps(make_log) -> None:  # type: ignore[no-untyped-def]
    lg = make_log(segment_ms=1000)
    lg.append(batch(b"a", ts=T0))
    lg.append(batch(b"b", ts=T0 + 1000))  # waited exactly segment.ms: no roll yet
    lg.append(batch(b"c", ts=T0 + 1001))
    assert [s.base_offset for s in lg.segments()] == [0, 2]


def test_roll_when_index_is_full(make_log) -> None:  # type: ignore[no-untyped-def]
    lg = make_log(segment_index_bytes=24, index_interval_bytes=1)  # 3 offset-index entries
    _fill(lg, 12)
    assert len(lg.segments()) > 1
    assert all(s.offset_index.entries <= 3 for s in lg.segments())


def test_compacted_topic_rolls_by_max_compaction_lag(make_log) -> None:  # type: ignore[no-untyped-def]
    lg = make_log(cleanup_policy="compact", max_compaction_lag_ms=100)
    lg.append(batch(b"a", key=b"k", ts=T0))
    lg.append(batch(b"b", key=b"k", ts=T0 + 101))
    assert len(lg.segments()) == 2


# -- DeleteRecords (KIP-107) ------------------------------------------------------------------------------


def test_delete_records_rules(make_log) -> None:  # type: ignore[no-untyped-def]
    lg = make_log()
    _fill(lg, 25)
    assert lg.delete_records(10) == RecordsDeleted(0, 10)
    assert lg.delete_records(5) == RecordsDeleted(10, 10)  # never backwards; idempotent
    with pytest.raises(OffsetOutOfRangeError):
        lg.delete_records(
            26
        )  # HW 25, increment to 26 throws (testCannotIncrementLogStartOffsetPastHighWatermark)
    assert lg.delete_records(-1) == RecordsDeleted(10, 25)  # -1 = high watermark
    assert lg.log_start_offset == 25


def test_delete_records_refused_on_compact_only_topic(make_log) -> None:  # type: ignore[no-untyped-def]
    lg = make_log(cleanup_policy="compact")
    lg.append(batch(b"v", key=b"k"))
    with pytest.raises(PolicyViolationError, match=r"cleanup\.policy=compact"):
        lg.delete_records(1)
    assert lg.log_start_offset == 0


def test_compact_delete_topic_accepts_delete_records(tmp_path, clock) -> None:  # type: ignore[no-untyped-def]
    from ebb_broker.log.log import Log
    from ebb_broker.log.log_config import LogConfig

    lg = Log.open(
        tmp_path / "c-0", "c", 0, LogConfig.parse({"cleanup.policy": "compact,delete"}), clock=clock
    )
    lg.append(batch(b"v", key=b"k"))
    assert lg.delete_records(1).low_watermark == 1
    lg.close()


def test_log_deletion_after_delete_records(make_log) -> None:  # type: ignore[no-untyped-def]
    lg = make_log(segment_bytes=ONE * 5, retention_ms=-1)
    _fill(lg, 15)
    assert len(lg.segments()) == 3
    for start, left in [(1, 3), (6, 2), (15, 1)]:
        lg.delete_records(start)
        lg.delete_old_segments()
        assert len(lg.segments()) == left, start
        assert lg.log_start_offset == start
    assert lg.log_end_offset == 15


def test_delete_records_to_the_end_frees_the_active_segment(make_log) -> None:  # type: ignore[no-untyped-def]
    """Ebb: after DeleteRecords(-1) no reader can reach the active segment, so it goes too (Kafka keeps
    it until it rolls); the pass rolls first and leaves one empty segment at the log end."""
    lg = make_log(segment_bytes=ONE * 100, retention_ms=-1)
    _fill(lg, 10)
    lg.delete_records(-1)
    result = lg.delete_old_segments()
    assert result.segments == 1 and lg.size_in_bytes() == 0
    assert [s.base_offset for s in lg.segments()] == [10]
    assert lg.append(batch(b"x")).base_offset == 10


def test_nothing_is_deleted_while_high_watermark_is_zero(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    lg = make_log(retention_ms=1)
    clock.advance(10_000)
    assert lg.delete_old_segments().segments == 0
    assert len(lg.segments()) == 1 and lg.log_start_offset == 0


# -- retention ----------------------------------------------------------------------------------------------


def test_size_based_retention(make_log) -> None:  # type: ignore[no-untyped-def]
    lg = make_log(segment_bytes=ONE * 5, retention_bytes=ONE * 10, retention_ms=-1)
    _fill(lg, 15)
    result = lg.delete_old_segments()
    assert (result.segments, len(lg.segments())) == (1, 2)
    assert result.by_reason == {"retention-bytes": 1}


def test_size_based_retention_under_limit_deletes_nothing(make_log) -> None:  # type: ignore[no-untyped-def]
    lg = make_log(segment_bytes=ONE * 5, retention_bytes=ONE * 15, retention_ms=-1)
    _fill(lg, 15)
    assert lg.delete_old_segments().segments == 0
    assert len(lg.segments()) == 3


def test_time_based_retention_rolls_and_keeps_one_empty_segment(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    lg = make_log(segment_bytes=ONE * 5, retention_ms=10_000)
    _fill(lg, 15, ts=clock.now - 20_000)
    result = lg.delete_old_segments()
    assert result.segments == 3
    segs = lg.segments()
    assert len(segs) == 1 and segs[0].base_offset == 15 and segs[0].size == 0
    assert lg.log_start_offset == lg.log_end_offset == 15
    with pytest.raises(OffsetOutOfRangeError):
        lg.read(0, 100)  # LogManagerTest.testCleanupExpiredSegments
    assert lg.read(15, 100).slices == []
    assert lg.append(batch(b"again")).base_offset == 15  # the next append gets the LEO


@pytest.mark.parametrize(("policy", "deleted"), [("delete", 3), ("compact", 0), ("compact,delete", 3)])
def test_policies_against_time_and_size(make_log, clock: Clock, policy: str, deleted: int) -> None:  # type: ignore[no-untyped-def]
    lg = make_log(segment_bytes=ONE * 5, retention_ms=10_000, cleanup_policy=policy)
    _fill(lg, 15, ts=clock.now - 20_000)
    assert lg.delete_old_segments().segments == deleted


def test_start_offset_breach_applies_without_delete_policy(make_log) -> None:  # type: ignore[no-untyped-def]
    from ebb_broker.log.log import LogStartOffsetIncrementReason

    lg = make_log(segment_bytes=ONE * 5, cleanup_policy="compact")
    _fill(lg, 15)
    lg.maybe_increment_log_start_offset(10, LogStartOffsetIncrementReason.SEGMENT_DELETION)
    assert lg.delete_old_segments().segments == 2


def test_retention_idempotency(make_log, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    lg = make_log(segment_bytes=ONE, retention_ms=900)
    lg.append(batch(b"x" * 10, key=b"k", ts=clock.now))  # young: blocks the time prefix
    lg.append(batch(b"x" * 10, key=b"k", ts=clock.now - 2000))  # expired
    lg.append(batch(b"x" * 10, key=b"k", ts=clock.now))
    assert lg.delete_old_segments().segments == 0
    lg.delete_records(1)
    assert lg.delete_old_segments().segments == 2
    assert lg.delete_old_segments().segments == 0


def test_deleted_files_renamed_then_removed_after_delay(tmp_path, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    from ebb_broker.log.log import Log
    from ebb_broker.log.log_config import LogConfig

    scheduled: list[tuple[list, int]] = []
    lg = Log.open(
        tmp_path / "t-0",
        "t",
        0,
        LogConfig.parse({"segment.bytes": str(ONE * 5), "file.delete.delay.ms": "60000"}),
        clock=clock,
        schedule_delete=lambda paths, delay: scheduled.append((paths, delay)),
    )
    _fill(lg, 10)
    lg.delete_records(5)
    lg.delete_old_segments()
    ((paths, delay),) = scheduled
    assert delay == 60_000
    assert sorted(p.name for p in paths) == [
        "00000000000000000000.index.deleted",
        "00000000000000000000.log.deleted",
        "00000000000000000000.timeindex.deleted",
    ]
    assert all(p.exists() for p in paths)
    lg.close()


def test_read_stops_before_max_offset(make_log) -> None:  # type: ignore[no-untyped-def]
    lg = make_log(segment_bytes=len(batch(b"a", b"b", b"c")) * 2)
    for _ in range(4):
        lg.append(batch(b"a", b"b", b"c"))  # batches [0,3) [3,6) | [6,9) [9,12)
    first = lg.read(0, 1 << 20, max_offset=3).to_bytes()
    assert read_header(first).next_offset == 3 and len(first) == read_header(first).size
    assert lg.read(3, 1 << 20, max_offset=4).slices == []  # the batch holding 3 reaches past the limit
    assert lg.read(3, 1 << 20, max_offset=5).slices == []
    whole = lg.read(0, 1 << 20, max_offset=9)
    assert sum(s.length for s in whole.slices) == 3 * read_header(first).size


def test_read_without_min_one_message_gives_no_part_of_a_first_batch(make_log) -> None:  # type: ignore[no-untyped-def]
    """KIP-74: only the first partition with records may exceed the limit by its first batch; for the
    others Kafka answers no records rather than an incomplete first batch."""
    lg = make_log()
    _fill(lg, 3)
    assert sum(s.length for s in lg.read(0, ONE - 1).slices) == ONE  # min_one_message: the whole batch
    assert lg.read(0, ONE - 1, min_one_message=False).slices == []
    assert sum(s.length for s in lg.read(0, ONE + 5, min_one_message=False).slices) == ONE + 5


def test_max_timestamp_is_the_first_record_carrying_it_and_survives_a_restart(tmp_path, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    """KIP-734: ListOffsets MAX_TIMESTAMP answers the record with the largest timestamp, not the last offset
    of its batch; the segment's offsetOfMaxTimestamp is rebuilt from the headers after a restart."""
    config = LogConfig.parse({"segment.bytes": "150"})
    lg = Log.open(tmp_path / "mt-0", "mt", 0, config, clock=clock)
    lg.append(batch(b"a", ts=T0 + 1))
    stamps = [T0, T0 + 5, T0 + 2, T0 + 5, T0 + 4]
    lg.append(build_batch([NewRecord(b"k", b"v", timestamp=ts) for ts in stamps]))  # offsets 1..5
    lg.append(batch(b"b", ts=T0 + 3))
    assert lg.offset_for_timestamp(-3) == (2, T0 + 5)
    assert len(lg.segments()) > 1  # the maximum is found across segments
    lg.close()
    again = Log.open(tmp_path / "mt-0", "mt", 0, config, clock=clock, clean_shutdown=True)
    try:
        assert again.offset_for_timestamp(-3) == (2, T0 + 5)
    finally:
        again.close()


def test_flush_messages_fsyncs_every_n_records(make_log) -> None:  # type: ignore[no-untyped-def]
    lg = make_log(flush_messages="3")
    lg.append(batch(b"a", b"b"))
    assert lg.recovery_point == 0
    lg.append(batch(b"c"))
    assert lg.recovery_point == 3  # fsynced up to the log end once 3 records were unflushed
