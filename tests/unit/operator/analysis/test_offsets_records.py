"""Decoding `__consumer_offsets` records byte for byte (Kafka's group-coordinator JSON specs).

The bytes here are built field by field from the specs; the spark tier decodes what Apache Kafka's own
coordinator writes. Together they pin every version the decoder claims and its refusal of bad input.
"""

from __future__ import annotations

import struct

import pytest

from ebb_operator.analysis.offsets_records import (
    GroupMetadataKey,
    OffsetCommitKey,
    OffsetsRecordError,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    decode_row,
    subscribed_topics,
)


def s16(s: str | None) -> bytes:
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def compact(s: str | None) -> bytes:  # flexible versions: unsigned varint length + 1 (small lengths here)
    if s is None:
        return b"\x00"
    b = s.encode()
    return bytes([len(b) + 1]) + b


def b32(b: bytes) -> bytes:
    return struct.pack(">i", len(b)) + b


def subscription(*topics: str) -> bytes:
    return struct.pack(">hi", 1, len(topics)) + b"".join(s16(t) for t in topics) + struct.pack(">i", -1)


@pytest.mark.parametrize("record_type", [0, 1])
def test_offset_commit_key(record_type: int) -> None:
    key = struct.pack(">h", record_type) + s16("g") + s16("orders") + struct.pack(">i", 3)
    assert decode_key(key) == OffsetCommitKey("g", "orders", 3)


def test_group_metadata_key_and_newer_record_types() -> None:
    assert decode_key(struct.pack(">h", 2) + s16("g")) == GroupMetadataKey("g")
    # KIP-848 consumer-group records (type 3+) carry no committed offsets: skipped, not an error.
    assert decode_key(struct.pack(">h", 5) + s16("g")) is None


@pytest.mark.parametrize(
    ("value", "epoch", "expire"),
    [
        (struct.pack(">hq", 0, 42) + s16("m") + struct.pack(">q", 1000), -1, -1),
        (struct.pack(">hq", 1, 42) + s16("m") + struct.pack(">qq", 1000, 2000), -1, 2000),
        (struct.pack(">hq", 2, 42) + s16("m") + struct.pack(">q", 1000), -1, -1),
        (struct.pack(">hqi", 3, 42, 7) + s16("m") + struct.pack(">q", 1000), 7, -1),
        # v4 is flexible: compact string and a tagged-field section (one unknown tag, skipped per KIP-482).
        (struct.pack(">hqi", 4, 42, 7) + compact("m") + struct.pack(">q", 1000) + b"\x01\x09\x02ab", 7, -1),
    ],
)
def test_offset_commit_value_versions(value: bytes, epoch: int, expire: int) -> None:
    v = decode_offset_commit_value(value)
    assert (v.offset, v.leader_epoch, v.metadata, v.commit_timestamp, v.expire_timestamp) == (
        42,
        epoch,
        "m",
        1000,
        expire,
    )


def _member_v(version: int, member: str, topics: tuple[str, ...]) -> bytes:
    flexible = version >= 4
    st = compact if flexible else s16
    out = st(member)
    if version >= 3:
        out += st(None)
    out += st("client") + st("/127.0.0.1")
    if version >= 1:
        out += struct.pack(">i", 300000)
    out += struct.pack(">i", 45000)
    sub, assignment = subscription(*topics), b""
    if flexible:
        out += bytes([len(sub) + 1]) + sub + bytes([len(assignment) + 1]) + assignment + b"\x00"
    else:
        out += b32(sub) + b32(assignment)
    return out


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_group_metadata_value_versions(version: int) -> None:
    flexible = version >= 4
    st = compact if flexible else s16
    body = struct.pack(">h", version) + st("consumer") + struct.pack(">i", 5) + st("range") + st("m1")
    if version >= 2:
        body += struct.pack(">q", 123)
    members = [_member_v(version, "m1", ("a", "b")), _member_v(version, "m2", ("c",))]
    body += (bytes([len(members) + 1]) if flexible else struct.pack(">i", len(members))) + b"".join(members)
    if flexible:
        body += b"\x00"
    g = decode_group_metadata_value(body)
    assert (g.protocol_type, g.generation, g.protocol, g.leader) == ("consumer", 5, "range", "m1")
    assert g.current_state_timestamp == (123 if version >= 2 else -1)
    assert [m.member_id for m in g.members] == ["m1", "m2"]
    assert [subscribed_topics(m.subscription) for m in g.members] == [["a", "b"], ["c"]]


def test_tombstones_become_tombstone_rows() -> None:
    key = struct.pack(">h", 1) + s16("g") + s16("orders") + struct.pack(">i", 0)
    row = decode_row(3, 99, key, None)
    assert row is not None and row[:7] == ("offset", 3, 99, True, "g", "orders", 0)
    row = decode_row(3, 100, struct.pack(">h", 2) + s16("g"), None)
    assert row is not None and row[:5] == ("group", 3, 100, True, "g")


@pytest.mark.parametrize(
    "value",
    [
        struct.pack(">hq", 3, 42),  # truncated
        struct.pack(">hq", 9, 42) + s16("") + struct.pack(">q", 1),  # unknown version
    ],
)
def test_bad_values_fail_loudly_with_their_position(value: bytes) -> None:
    key = struct.pack(">h", 1) + s16("g") + s16("orders") + struct.pack(">i", 0)
    with pytest.raises(OffsetsRecordError, match=r"__consumer_offsets-2 offset 17"):
        decode_row(2, 17, key, value)
