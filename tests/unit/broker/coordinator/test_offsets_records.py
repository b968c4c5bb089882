"""`__consumer_offsets` records: the exact bytes Kafka's tools decode, and the group partitioning."""

from __future__ import annotations

import pytest

from ebb_broker.coordinator.offsets_records import (
    GroupKey,
    GroupValue,
    MemberRecord,
    OffsetKey,
    OffsetValue,
    RecordFormatError,
    decode_key,
    partition_for,
)


def test_partition_for_matches_java_string_hashcode() -> None:
    # "hello".hashCode() == 99162322 in Java.
    assert partition_for("hello", 50) == 99162322 % 50
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE; Kafka's Utils.abs maps it to 0.
    assert partition_for("polygenelubricants", 50) == 0
    # A negative hashCode: Utils.abs is Math.abs, not a mask of the sign bit. "Hello World!" hashes to
    # -969099747 in Java: Math.abs gives 969099747 (% 50 == 47), the mask 1178383901 (% 50 == 1).
    assert partition_for("Hello World!", 50) == 47
    # Non-ASCII runs over UTF-16 code units: "é" is 0xE9, one unit.
    assert partition_for("é", 1000) == 0xE9 % 1000


def test_offset_key_is_kafka_v1_layout() -> None:
    key = OffsetKey("g", "t", 3).encode()
    assert key == b"\x00\x01" + b"\x00\x01g" + b"\x00\x01t" + b"\x00\x00\x00\x03"
    assert decode_key(key) == OffsetKey("g", "t", 3)


def test_offset_value_v3_round_trip_and_layout() -> None:
    value = OffsetValue(offset=42, leader_epoch=7, metadata="m", commit_timestamp=1_700_000_000_000)
    raw = value.encode()
    assert raw[:2] == b"\x00\x03"
    assert raw[2:10] == (42).to_bytes(8, "big")
    assert raw[10:14] == (7).to_bytes(4, "big")
    assert OffsetValue.decode(raw) == value


def test_offset_value_v1_from_older_kafka_decodes() -> None:
    # v1: offset, metadata, commit timestamp, expire timestamp.
    raw = (
        b"\x00\x01" + (5).to_bytes(8, "big") + b"\x00\x00" + (9).to_bytes(8, "big") + (10).to_bytes(8, "big")
    )
    assert OffsetValue.decode(raw) == OffsetValue(5, -1, "", 9)


def test_group_metadata_round_trip() -> None:
    member = MemberRecord("m-1", "static-1", "client", "/127.0.0.1", 30000, 10000, b"sub", b"assign")
    value = GroupValue("consumer", 4, "range", "m-1", 123, [member])
    assert GroupValue.decode(value.encode()) == value
    assert decode_key(GroupKey("grp").encode()) == GroupKey("grp")


def test_unknown_key_version_is_skipped_and_garbage_is_an_error() -> None:
    assert decode_key(b"\x00\x05\x00\x01x") is None
    with pytest.raises(RecordFormatError):
        OffsetValue.decode(b"\x00\x03\x00")
    with pytest.raises(RecordFormatError):
        OffsetValue.decode(b"\x00\x09" + bytes(30))
