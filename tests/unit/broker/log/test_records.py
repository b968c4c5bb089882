"""The v2 batch codec: what Kafka clients and tools rely on byte for byte."""

from __future__ import annotations

import struct

import cramjam
import pytest

from ebb_broker.log.compression import Compression, decompress
from ebb_broker.log.errors import CorruptRecordError
from ebb_broker.log.records import (
    NewRecord,
    Record,
    build_batch,
    crc32c,
    decode_records,
    encode_batch,
    validate_batch,
    with_offset,
)
from ebb_formats.record_batch import HEADER_SIZE, read_header


def test_header_layout_matches_kafka() -> None:
    raw = build_batch(
        [NewRecord(b"k", b"v", timestamp=1000)],
        base_offset=7,
        producer_id=42,
        producer_epoch=3,
        base_sequence=9,
    )
    h = read_header(raw)
    assert HEADER_SIZE == 61
    assert (h.base_offset, h.magic, h.count, h.last_offset_delta) == (7, 2, 1, 0)
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (42, 3, 9)
    assert h.length == len(raw) - 12
    assert h.crc == crc32c(raw[21:])
    assert struct.unpack_from(">q", raw, 27)[0] == 1000  # baseTimestamp


@pytest.mark.parametrize("codec", list(Compression))
def test_round_trip_every_codec(codec: Compression) -> None:
    recs = [
        NewRecord(b"k%d" % i, b"v" * i, headers=(("h", b"x"), ("n", None)), timestamp=500 + i)
        for i in range(20)
    ]
    recs.append(NewRecord(None, None, timestamp=600))
    raw = build_batch(recs, base_offset=100, compression=codec)
    h = validate_batch(raw, 0, len(raw))
    assert h.compression == codec
    out = decode_records(raw)
    assert [(r.offset, r.key, r.value, r.timestamp) for r in out] == [
        (100 + i, r.key, r.value, r.timestamp) for i, r in enumerate(recs)
    ]
    assert out[0].headers == (("h", b"x"), ("n", None))


def test_restamping_offset_keeps_crc_valid() -> None:
    raw = build_batch([NewRecord(b"a", b"b")])
    moved = with_offset(raw, 12345)
    assert validate_batch(moved, 0, len(moved)).base_offset == 12345


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda b: b[:30], "truncated|claims length"),
        (lambda b: b[:16] + b"\x01" + b[17:], "magic"),
        (lambda b: b[:-1] + bytes([b[-1] ^ 1]), "CRC"),
    ],
)
def test_corrupt_batches_are_refused(mutate, message: str) -> None:  # type: ignore[no-untyped-def]
    raw = mutate(build_batch([NewRecord(b"k", b"value")]))
    with pytest.raises(CorruptRecordError, match=message):
        validate_batch(raw, 0, len(raw))


def test_snappy_reads_raw_and_xerial_framing() -> None:
    data = b"hello snappy " * 100
    raw_block = bytes(cramjam.snappy.compress_raw(data))
    assert decompress(Compression.SNAPPY, raw_block) == data  # librdkafka's raw block
    batch = build_batch([NewRecord(b"k", data)], compression=Compression.SNAPPY)
    assert batch[HEADER_SIZE:].startswith(b"\x82SNAPPY\x00")  # what the Java client writes
    assert decode_records(batch)[0].value == data


def test_tombstones_null_value_attribute_bit_and_header() -> None:
    null = Record(0, 0, b"k", None)
    assert null.is_tombstone(True) and not null.is_tombstone(False)  # tombstone.null.value.enable
    flagged = Record(0, 0, b"k", b"who deleted it", attributes=0x01)
    assert flagged.is_tombstone(False)
    headed = Record(0, 0, b"k", b"payload", headers=(("ebb.tombstone", b""),))
    assert headed.is_tombstone(False)
    assert not Record(0, 0, b"k", b"v").is_tombstone(True)
    raw = build_batch([NewRecord(b"k", b"payload", attributes=0x01)])
    assert decode_records(raw)[0].attributes == 0x01


def test_delete_horizon_keeps_absolute_timestamps() -> None:
    recs = [Record(10, 1_000, b"a", None), Record(11, 2_000, b"b", b"v")]
    raw = encode_batch(recs, base_offset=10, base_timestamp=99_999, delete_horizon=True)
    h = read_header(raw)
    assert h.has_delete_horizon and h.delete_horizon_ms == 99_999
    assert [r.timestamp for r in decode_records(raw)] == [1_000, 2_000]


def test_empty_batch_spans_its_offsets() -> None:
    raw = encode_batch([], base_offset=5, base_timestamp=1, max_timestamp=1, last_offset_delta=4)
    h = validate_batch(raw, 0, len(raw))
    assert (h.count, h.last_offset, h.next_offset) == (0, 9, 10)
    assert decode_records(raw) == []
