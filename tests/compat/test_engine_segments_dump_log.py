"""Segments written by Ebb's log engine are Kafka's on-disk format: Kafka's own kafka-dump-log reads them.

Batches are built with kafka-python's DefaultRecordBatchBuilder (an implementation independent of Ebb, as a
producer would send them), appended through the engine's public API (docs/broker-internals.md), and the
files the engine leaves behind are deep-iterated by Apache Kafka's DumpLogSegments. Each test makes one JVM
call for all of its files.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from ebb_broker.config import BrokerConfig
from ebb_broker.log import LogManager
from harness.dump_log import DumpedRecord, DumpedSegment, dump_log, parse_dump
from harness.kafka import kafka_tool

# kafka-python's codec ids are the v2 batch attribute bits 0-2 (Kafka's CompressionType ids), and the names
# are the ones DumpLogSegments prints.
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


@dataclass(frozen=True)
class Rec:
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: tuple[tuple[str, bytes], ...] = ()


def _batch(records: Sequence[Rec], codec: str = "none") -> bytes:
    """A v2 batch as a non-idempotent producer sends it (offsets from 0; the log stamps the base offset)."""
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=CODECS[codec], is_transactional=False,
        producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=1 << 20,
    )  # fmt: skip
    for i, r in enumerate(records):
        appended = builder.append(i, timestamp=r.timestamp, key=r.key, value=r.value, headers=list(r.headers))
        if appended is None:
            raise AssertionError("batch_size too small for the test records")
    return bytes(builder.build())


def _text(b: bytes | None) -> str | None:
    return None if b is None else b.decode()


def _as_dumped(records: Sequence[tuple[int, Rec]]) -> list[tuple[int, str | None, str | None, int]]:
    return [(off, _text(r.key), _text(r.value), r.timestamp) for off, r in records]


def _seen(segments: Sequence[DumpedSegment]) -> list[tuple[int, str | None, str | None, int]]:
    return [(r.offset, r.key, r.value, r.timestamp) for s in segments for r in s.records]


def _records(segments: Sequence[DumpedSegment]) -> list[DumpedRecord]:
    return [r for s in segments for r in s.records]


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[LogManager]:
    config = BrokerConfig.parse({"log.segment.delete.delay.ms": "0"}).log_manager_config()
    manager = LogManager.open(tmp_path / "data", config)
    try:
        yield manager
    finally:
        manager.close()


def _now_ms() -> int:
    return int(time.time() * 1000)


def test_every_codec_round_trips_through_kafka_dump_log(engine: LogManager, tmp_path: Path) -> None:
    """One batch per codec (none, gzip, snappy, lz4, zstd): DumpLogSegments decompresses each and shows
    exactly the records written, at the offsets the engine assigned, with valid CRCs."""
    engine.create_topic("codecs", 1, {})
    log = engine.get_log("codecs", 0)
    ts = _now_ms()
    expected: list[tuple[int, Rec]] = []
    for n, codec in enumerate(CODECS):
        t = ts + n * 10
        recs = [Rec(f"{codec}-{i}".encode(), (f"value {i} " * (i + 1)).encode(), t + i) for i in range(4)]
        recs += [Rec(None, f"{codec} without key".encode(), t + 5), Rec(f"{codec}-null".encode(), None, ts)]
        info = log.append(_batch(recs, codec))
        expected += [(info.base_offset + i, r) for i, r in enumerate(recs)]
    engine.close()

    segments = dump_log(sorted((tmp_path / "data" / "codecs-0").glob("*.log")))
    assert _seen(segments) == _as_dumped(expected)
    batches = [b for s in segments for b in s.batches]
    assert [b.codec for b in batches] == list(CODECS)
    assert all(b.crc_valid and b.count == 6 for b in batches)
    assert [b.max_timestamp for b in batches] == [ts + n * 10 + 5 for n in range(len(CODECS))]


def test_segments_left_after_delete_records_and_retention(engine: LogManager, tmp_path: Path) -> None:
    """After DeleteRecords (KIP-107) and a retention pass, the surviving segments still parse and hold
    every record from the first surviving segment on, unchanged; nothing below the log start is visible
    through the engine."""
    engine.create_topic("trimmed", 1, {"segment.bytes": "600"})
    log = engine.get_log("trimmed", 0)
    ts = _now_ms()
    written: list[tuple[int, Rec]] = []
    for b in range(8):
        recs = [Rec(f"k{b}-{i}".encode(), b"x" * 50, ts + b) for i in range(3)]
        info = log.append(_batch(recs))
        written += [(info.base_offset + i, r) for i, r in enumerate(recs)]
    assert log.delete_records(13).low_watermark == 13
    engine.run_retention()
    files = sorted((tmp_path / "data" / "trimmed-0").glob("*.log"))
    first_base = int(files[0].stem)
    assert 0 < first_base <= 13  # whole segments below the log start are gone, the one holding 13 stays
    engine.close()

    segments = dump_log(files)
    assert _seen(segments) == _as_dumped([(o, r) for o, r in written if o >= first_base])
    assert [s.file.name for s in segments] == [f.name for f in files]


def test_cleaned_segments_keep_the_latest_value_per_key_and_tombstones(
    engine: LogManager, tmp_path: Path
) -> None:
    """A compacted topic after one cleaning: below the active segment, DumpLogSegments shows only the latest
    record of each key at its original offset; a tombstone survives its first cleaning with a delete
    horizon (now + delete.retention.ms) on its batch, and so does an explicit KIP-87 tombstone (header
    `ebb.tombstone`) together with its payload; the active segment is untouched."""
    overrides = {"cleanup.policy": "compact", "segment.bytes": "400", "min.cleanable.dirty.ratio": "0.01"}
    engine.create_topic("compacted", 1, overrides)
    log = engine.get_log("compacted", 0)
    ts = _now_ms()
    written: list[tuple[int, Rec]] = []
    for round_ in range(8):
        recs = [Rec(f"key-{k}".encode(), f"v{round_}".encode() * 4, ts + round_) for k in range(4)]
        if round_ == 0:
            recs.append(Rec(b"gone", b"soon deleted", ts))
            recs.append(Rec(b"explicit", b"first value", ts))
        if round_ == 2:  # explicit tombstone with a payload, never rewritten
            recs.append(Rec(b"explicit", b"payload kept", ts + round_, (("ebb.tombstone", b""),)))
        if round_ == 3:
            recs.append(Rec(b"gone", None, ts + round_))  # tombstone, never rewritten
        info = log.append(_batch(recs))
        written += [(info.base_offset + i, r) for i, r in enumerate(recs)]
    report = engine.run_cleaner()
    assert report is not None and report.topic == "compacted" and report.stats.records_read > 0
    files = sorted((tmp_path / "data" / "compacted-0").glob("*.log"))
    active_base = int(files[-1].stem)
    tombstone_offset = next(o for o, r in written if r.key == b"gone" and r.value is None)
    explicit_offset = next(o for o, r in written if r.headers)
    assert max(tombstone_offset, explicit_offset) < active_base, "the tombstones must be cleanable"
    engine.close()

    latest: dict[bytes | None, int] = {}
    for off, r in written:
        if off < active_base:
            latest[r.key] = off
    expected = [(o, r) for o, r in written if o >= active_base or latest[r.key] == o]
    assert len(expected) < len(written)
    segments = dump_log(files)
    assert _seen(segments) == _as_dumped(expected)
    day_ms = 86_400_000  # delete.retention.ms default
    for offset in (tombstone_offset, explicit_offset):
        (batch,) = [b for s in segments for b in s.batches if any(r.offset == offset for r in b.records)]
        assert batch.delete_horizon_ms is not None, f"no delete horizon on the batch of tombstone {offset}"
        assert ts + day_ms <= batch.delete_horizon_ms <= _now_ms() + day_ms
    (explicit,) = [r for r in _records(segments) if r.offset == explicit_offset]
    assert (explicit.value, explicit.header_keys) == ("payload kept", ("ebb.tombstone",))


def test_log_append_time_is_stamped_on_batch_and_records(engine: LogManager, tmp_path: Path) -> None:
    """With message.timestamp.type=LogAppendTime the engine stamps the append time; DumpLogSegments reports
    it as LogAppendTime for the batch and every record, replacing the producer's timestamps."""
    engine.create_topic("appendtime", 1, {"message.timestamp.type": "LogAppendTime"})
    log = engine.get_log("appendtime", 0)
    before = _now_ms()
    log.append(_batch([Rec(b"a", b"1", 1_000), Rec(b"b", b"2", 2_000)], "lz4"))
    after = _now_ms()
    engine.close()

    segments = dump_log(sorted((tmp_path / "data" / "appendtime-0").glob("*.log")))
    (batch,) = [b for s in segments for b in s.batches]
    assert batch.timestamp_type == "LogAppendTime"
    assert before <= batch.max_timestamp <= after
    assert [(r.key, r.timestamp_type, r.timestamp) for r in batch.records] == [
        ("a", "LogAppendTime", batch.max_timestamp),
        ("b", "LogAppendTime", batch.max_timestamp),
    ]


def test_offset_and_time_indexes_point_at_their_batches(engine: LogManager, tmp_path: Path) -> None:
    """The engine's sparse `.index` and `.timeindex` are Kafka's: DumpLogSegments reads them next to their
    `.log`, finds no mismatch, and every offset-index entry is (last offset, position) of a batch and every
    time-index entry (max timestamp, last offset) of one."""
    engine.create_topic("indexed", 1, {"index.interval.bytes": "200", "segment.bytes": "3000"})
    log = engine.get_log("indexed", 0)
    ts = _now_ms()
    for b in range(30):
        log.append(_batch([Rec(b"k", b"x" * 30, ts + b * 10 + i) for i in range(3)]))
    engine.close()

    files = sorted((tmp_path / "data" / "indexed-0").iterdir())
    assert {f.suffix for f in files} >= {".log", ".index", ".timeindex"}
    out = kafka_tool(
        "kafka-dump-log", "--deep-iteration", "--print-data-log", "--files", ",".join(str(f) for f in files)
    )
    segments = parse_dump(out.stdout)
    assert "mismatch" not in out.stderr.lower(), out.stderr  # DumpLogSegments' own index/log cross-check

    by_file = {s.file.name: s for s in segments}
    checked = 0
    for log_file in (f for f in files if f.suffix == ".log"):
        batches = by_file[log_file.name].batches
        by_last = {b.last_offset: b for b in batches}
        index = by_file[log_file.with_suffix(".index").name].index_entries
        time_index = by_file[log_file.with_suffix(".timeindex").name].time_index_entries
        assert index and time_index, f"{log_file.name}: expected sparse entries every 200 bytes"
        assert all(by_last[off].position == pos for off, pos in index)
        assert all(by_last[off].max_timestamp == t for t, off in time_index)
        checked += len(index) + len(time_index)
    assert checked >= 10
