"""The produce validator (Kafka's LogValidator) against hostile batches.

Every batch here has a correct CRC-32C, so what refuses it is the record-by-record check, not the
checksum: lying counts, negative or oversized lengths, truncated records, offset deltas out of order,
malformed headers, decompression bombs; then KIP-467 record errors, KIP-937 timestamps, the corrected
maxTimestamp and compression.type.
"""

from __future__ import annotations

import struct
import time
import tracemalloc
import zlib

import cramjam
import lz4.frame
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ebb_broker.log.compression import Compression, decompress
from ebb_broker.log.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    LogError,
    RecordTooLargeError,
    RecordValidationError,
)
from ebb_broker.log.log_config import LogConfig
from ebb_broker.log.records import NewRecord, build_batch, decode_records, validate_batch
from ebb_broker.log.validator import AppendOrigin, ValidatedBatch, validate_records
from ebb_formats.record_batch import read_header
from tests.record_batches import NOW, raw_batch, record, varint, zstd_zeros

DEFAULT = LogConfig.parse({})
COMPACTED = LogConfig.parse({"cleanup.policy": "compact"})


def validate(raw: bytes, config: LogConfig = DEFAULT, **kw: object) -> ValidatedBatch:
    return validate_records(raw, config, now_ms=NOW, topic_partition="t-0", **kw)  # type: ignore[arg-type]


def stored(v: ValidatedBatch) -> bytes:
    """The batch as the log writes it (base offset 0)."""
    return struct.pack(">qii", 0, v.header.length, 0) + bytes(v.tail)


# -- what passes ---------------------------------------------------------------------------------------


def test_a_valid_batch_is_stored_byte_for_byte() -> None:
    raw = raw_batch(b"".join(record(i) for i in range(3)), 3)
    v = validate(raw)
    assert bytes(v.tail) == raw[16:] and not v.recompressed
    assert v.header.count == 3


def test_records_of_every_shape_pass() -> None:
    """Multi-byte varints everywhere: 300 records (two-byte offset deltas), large values, headers."""
    recs = [
        record(i, key=None if i % 3 else b"key-%d" % i, value=b"x" * (i * 13), ts_delta=i * 1000)
        for i in range(300)
    ]
    recs[5] = record(
        5, headers=varint(2) + varint(1) + b"h" + varint(-1) + varint(2) + b"h2" + varint(3) + b"abc"
    )
    raw = raw_batch(b"".join(recs), 300, max_ts=NOW + 299_000)
    assert validate(raw).header.count == 300
    built = build_batch([NewRecord(b"k", b"v" * 20_000, headers=(("a", b"b"),))] * 3, timestamp_ms=NOW)
    assert validate(built).header.count == 3


# -- lying counts --------------------------------------------------------------------------------------


def test_a_count_of_two_billion_is_refused_at_once() -> None:
    raw = raw_batch(b"".join(record(i) for i in range(3)), 2**31 - 1)
    started = time.monotonic()
    with pytest.raises(InvalidRecordError, match="claims 2147483647 records"):
        validate(raw)
    assert time.monotonic() - started < 1


@pytest.mark.parametrize(
    ("count", "last_delta", "records", "message"),
    [
        (5, None, 3, "record 3 of 5 is truncated"),  # claims more records than it holds
        (2, None, 3, "remain after 2 records"),  # holds more than it claims
        (3, 5, 3, "Inconsistent batch offset range"),  # count != lastOffsetDelta + 1
        (0, -1, 0, "Batch has an invalid offset range"),
        (-4, 2, 3, "Invalid reported count"),
    ],
)
def test_counts_that_do_not_match_the_records(
    count: int, last_delta: int | None, records: int, message: str
) -> None:
    section = b"".join(record(i, value=b"v" * 30) for i in range(records))
    raw = raw_batch(section, count, last_offset_delta=last_delta)
    with pytest.raises(InvalidRecordError, match=message):
        validate(raw)


# -- malformed records ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (record(1, length=-5), "claims -5 bytes"),
        (record(1, length=10_000), "claims 10000 bytes"),
        (record(1, length=3), "claims 3 bytes"),
        (
            varint(7) + b"\x00" + varint(0) + varint(1) + varint(-2) + varint(1) + b"v" + varint(0),
            "key length -2",
        ),
        (record(1, value=None)[:-2] + varint(-7) + varint(0), "value length -7|Invalid record size"),
        (record(1, key=b"k" * 40, length=20), "Invalid record size"),  # key runs past the record's end
        (record(2), "offset delta 2, expected 1"),
        (record(0), "offset delta 0, expected 1"),
        (record(1, headers=varint(-1)), "header count -1"),
        (record(1, headers=varint(1) + varint(-3) + varint(-1)), "header 0 has key length -3"),
        (record(1, headers=varint(1) + varint(1) + b"h" + varint(-9)), "header 0 has value length -9"),
        (record(1, headers=varint(1) + varint(2) + b"\xff\xfe" + varint(-1)), "not UTF-8"),
        (record(1, headers=varint(1_000_000)), "header count 1000000"),
        (b"\xff" * 11 + b"\x00" * 10, "varint is too long|claims"),
    ],
)
def test_malformed_records_are_refused(bad: bytes, message: str) -> None:
    raw = raw_batch(record(0) + bad, 2)
    with pytest.raises(InvalidRecordError, match=message):
        validate(raw)


def test_a_truncated_record_is_refused() -> None:
    section = b"".join(record(i, value=b"v" * 30) for i in range(3))
    for cut in (1, 5, 20, 40):
        with pytest.raises(InvalidRecordError):
            validate(raw_batch(section[:-cut], 3))


@given(
    mutations=st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), min_size=1, max_size=6),
    cut=st.integers(0, 20),
)
@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck), database=None)
def test_any_mutated_records_section_is_refused_cleanly_or_stored_consistently(
    mutations: list[tuple[int, int]], cut: int
) -> None:
    """Whatever the bytes (with a correct CRC), the validator raises one of the engine's errors or passes
    a batch that decodes to exactly ``count`` records with offsets 0..count-1."""
    section = bytearray(b"".join(record(i, value=b"val-%d" % i, ts_delta=i) for i in range(12)))
    for pos, byte in mutations:
        section[pos % len(section)] = byte
    raw = raw_batch(bytes(section[: len(section) - cut]), 12)
    try:
        v = validate(raw)
    except LogError:
        return
    records = decode_records(stored(v))
    assert [r.offset for r in records] == list(range(12))


# -- batch-level refusals ------------------------------------------------------------------------------


def test_one_batch_per_request_control_batches_only_from_the_coordinator() -> None:
    one = raw_batch(record(0), 1)
    with pytest.raises(InvalidRecordError, match="exactly one record batch"):
        validate(one + one)
    with pytest.raises(InvalidRecordError, match="control records"):
        validate(raw_batch(record(0), 1, attributes=0x20))
    assert validate(raw_batch(record(0), 1, attributes=0x20), origin=AppendOrigin.COORDINATOR)
    assert validate(raw_batch(record(0), 1, attributes=0x10, producer_id=1, base_sequence=0))
    with pytest.raises(InvalidRecordError, match="Transactional record batch without a producer id"):
        validate(raw_batch(record(0), 1, attributes=0x10))
    with pytest.raises(InvalidRecordError, match="Invalid sequence number -1"):
        validate(raw_batch(record(0), 1, producer_id=7, base_sequence=-1))
    with pytest.raises(InvalidRecordError, match="without a record batch"):
        validate(b"")
    corrupt = bytearray(one)
    corrupt[-1] ^= 1
    with pytest.raises(CorruptRecordError, match="CRC"):
        validate(bytes(corrupt))


# -- KIP-467 record errors -----------------------------------------------------------------------------


def test_keyless_records_on_a_compacted_topic_are_named() -> None:
    bad = {3, 17, 18, 40, 41, 42, 60, 77, 98, 99}
    section = b"".join(record(i, key=None if i in bad else b"k%d" % i) for i in range(100))
    raw = raw_batch(section, 100)
    assert validate(raw).header.count == 100  # a delete topic takes them
    with pytest.raises(RecordValidationError) as refused:
        validate(raw, COMPACTED)
    err = refused.value
    assert isinstance(err.cause, InvalidRecordError)
    assert [e.batch_index for e in err.record_errors] == sorted(bad)
    assert all(
        e.message == "Compacted topic cannot accept message without key in topic partition t-0"
        for e in err.record_errors
    )
    assert str(err).startswith("One or more records have been rejected due to 10 record errors in total")


def test_timestamps_outside_the_kip_937_window_are_named() -> None:
    hour = 3_600_000
    section = record(0, ts_delta=0) + record(1, ts_delta=2 * hour) + record(2, ts_delta=hour - 1)
    with pytest.raises(RecordValidationError) as refused:
        validate(raw_batch(section, 3, max_ts=NOW + 2 * hour))
    assert isinstance(refused.value.cause, InvalidTimestampError)
    assert [e.batch_index for e in refused.value.record_errors] == [1]
    assert "out of range" in refused.value.record_errors[0].message
    strict = LogConfig.parse({"message.timestamp.before.max.ms": "1000"})
    old = record(0) + record(1, ts_delta=-5000)
    with pytest.raises(RecordValidationError) as refused:
        validate(raw_batch(old, 2), strict)
    assert [e.batch_index for e in refused.value.record_errors] == [1]
    # a record without timestamp (-1) is never out of range
    assert validate(raw_batch(record(0), 1, base_ts=-1, max_ts=-1), strict)


def test_log_append_time_set_by_a_producer_is_refused() -> None:
    with pytest.raises(RecordValidationError) as refused:
        validate(raw_batch(record(0) + record(1), 2, attributes=0x08))
    assert isinstance(refused.value.cause, InvalidTimestampError)
    assert [e.batch_index for e in refused.value.record_errors] == [0, 1]


# -- what the broker rewrites --------------------------------------------------------------------------


def test_a_lying_max_timestamp_is_corrected() -> None:
    section = record(0, ts_delta=0) + record(1, ts_delta=7) + record(2, ts_delta=3)
    v = validate(raw_batch(section, 3, max_ts=NOW + 999_999_999))
    assert v.header.max_timestamp == NOW + 7
    out = stored(v)
    validate_batch(out, 0, len(out))  # CRC recomputed
    assert [r.timestamp for r in decode_records(out)] == [NOW, NOW + 7, NOW + 3]


def test_log_append_time_topics_stamp_the_append_time() -> None:
    v = validate(
        raw_batch(record(0), 1, base_ts=5, max_ts=5),
        LogConfig.parse({"message.timestamp.type": "LogAppendTime"}),
    )
    assert v.header.timestamp_type == 1 and v.header.max_timestamp == NOW
    out = stored(v)
    validate_batch(out, 0, len(out))


@pytest.mark.parametrize(
    ("source", "topic", "stored_codec"),
    [
        (Compression.NONE, "zstd", Compression.ZSTD),
        (Compression.GZIP, "uncompressed", Compression.NONE),
        (Compression.LZ4, "snappy", Compression.SNAPPY),
        (Compression.SNAPPY, "gzip", Compression.GZIP),
        (Compression.ZSTD, "lz4", Compression.LZ4),
        (Compression.ZSTD, "zstd", Compression.ZSTD),
        (Compression.GZIP, "producer", Compression.GZIP),
    ],
)
def test_compression_type_recompresses_like_kafka(
    source: Compression, topic: str, stored_codec: Compression
) -> None:
    recs = [NewRecord(b"k%d" % i, b"value %d " % i * 20) for i in range(50)]
    raw = build_batch(recs, compression=source, timestamp_ms=NOW)
    v = validate(raw, LogConfig.parse({"compression.type": topic}))
    assert v.header.compression == stored_codec
    assert v.recompressed == (source != stored_codec)
    out = stored(v)
    h = validate_batch(out, 0, len(out))
    assert [(r.key, r.value) for r in decode_records(out, h)] == [(r.key, r.value) for r in recs]
    if source == stored_codec:
        assert out[16:] == raw[16:]  # same codec: the producer's bytes, untouched


def test_compression_levels_are_kafka_configs() -> None:
    recs = [NewRecord(None, bytes(range(256)) * 40) for _ in range(20)]
    raw = build_batch(recs, timestamp_ms=NOW)
    fast = validate(raw, LogConfig.parse({"compression.type": "zstd", "compression.zstd.level": "1"}))
    best = validate(raw, LogConfig.parse({"compression.type": "zstd", "compression.zstd.level": "19"}))
    assert best.size <= fast.size
    with pytest.raises(LogError, match=r"compression\.gzip\.level"):
        LogConfig.parse({"compression.gzip.level": "12"})
    with pytest.raises(LogError, match=r"compression\.type"):
        LogConfig.parse({"compression.type": "brotli"})


# -- decompression bombs -------------------------------------------------------------------------------


def _zeros_gzip(mb: int) -> bytes:
    c = zlib.compressobj(1, zlib.DEFLATED, 31)
    return b"".join([*(c.compress(bytes(1 << 20)) for _ in range(mb)), c.flush()])


def _zeros_lz4(mb: int) -> bytes:
    c = lz4.frame.LZ4FrameCompressor()
    return b"".join([c.begin(), *(c.compress(bytes(1 << 20)) for _ in range(mb)), c.flush()])


def _snappy_claiming_4_gib() -> bytes:
    # a raw snappy block whose length header says 4 GiB
    return b"\xff\xff\xff\xff\x0f" + bytes(cramjam.snappy.compress_raw(bytes(1000)))[2:]


@pytest.mark.parametrize(
    ("codec", "bomb"),
    [
        (Compression.ZSTD, lambda: zstd_zeros(512)),
        (Compression.GZIP, lambda: _zeros_gzip(32)),
        (Compression.LZ4, lambda: _zeros_lz4(32)),
        (Compression.SNAPPY, _snappy_claiming_4_gib),
    ],
)
def test_decompression_bombs_are_refused_without_growing_memory(codec: Compression, bomb) -> None:  # type: ignore[no-untyped-def]
    section = bomb()
    raw = raw_batch(section, 1000, attributes=int(codec))
    assert len(raw) < 1_048_588  # the compressed batch itself is within max.message.bytes
    tracemalloc.start()
    try:
        with pytest.raises(RecordTooLargeError, match="decompress to more than 1048588 bytes"):
            validate(raw, COMPACTED)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024, f"validating a {len(raw)}-byte bomb allocated {peak} bytes"


def test_the_zstd_bomb_is_a_real_one() -> None:
    """The hand-made frame above is valid zstd and as large as it says (read in pieces here)."""
    reader = zstandard.ZstdDecompressor().stream_reader(zstd_zeros(48))
    total = 0
    while chunk := reader.read(16 << 20):
        assert chunk == bytes(len(chunk))
        total += len(chunk)
    assert total == 48 << 20
    assert len(zstd_zeros(512)) < 17 * 1024  # the bomb below: 16 KiB for 512 MiB


def test_bounded_decompression_still_reads_what_fits() -> None:
    data = bytes(range(256)) * 4000
    for codec in (Compression.GZIP, Compression.LZ4, Compression.ZSTD, Compression.SNAPPY):
        packed = {
            Compression.GZIP: lambda d: bytes(cramjam.gzip.compress(d)),
            Compression.LZ4: lz4.frame.compress,
            Compression.ZSTD: lambda d: zstandard.ZstdCompressor().compress(d),
            Compression.SNAPPY: lambda d: bytes(cramjam.snappy.compress_raw(d)),
        }[codec](data)
        assert decompress(codec, packed, len(data)) == data
        with pytest.raises(RecordTooLargeError):
            decompress(codec, packed, len(data) - 1)


def test_header_and_section_agree_after_stamping() -> None:
    v = validate(raw_batch(b"".join(record(i) for i in range(4)), 4))
    assert read_header(stored(v)).count == 4
