"""`__consumer_offsets` keys and values: every version Kafka wrote, as Kafka's own classes write them.

`consumer_offsets_vectors.json` holds records Apache Kafka's generated classes and its coordinator's record
helpers wrote, with the fields Kafka's reader reads back (harness/kafka/ConsumerOffsetsVectors.java; the
compat tier regenerates it and checks it is unchanged). The broker's coordinator and the operator's
analysis both read through this one codec; the layout tests pin what Ebb writes byte by byte.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from ebb_formats.consumer_offsets import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    RecordFormatError,
    decode_key,
    partition_for,
)
from ebb_formats.consumer_protocol import subscribed_topics

VECTORS_FILE = Path(__file__).with_name("consumer_offsets_vectors.json")
VECTORS: list[dict[str, Any]] = json.loads(VECTORS_FILE.read_text())["vectors"]


def _by_name(*prefixes: str) -> list[dict[str, Any]]:
    return [v for v in VECTORS if v["name"].startswith(prefixes)]


def test_the_vectors_cover_every_version_kafka_writes() -> None:
    names = {v["name"] for v in VECTORS}
    assert {f"OffsetCommitValue v{n}" for n in range(OffsetCommitValue.HIGHEST_VERSION + 1)} <= names
    assert {f"GroupMetadataValue v{n}" for n in range(GroupMetadataValue.HIGHEST_VERSION + 1)} <= names
    assert {
        "OffsetCommitKey type 1",
        "OffsetCommitKey type 0 (before Kafka 2.x)",
        "GroupMetadataKey",
    } <= names
    # Kafka 4's coordinator writes OffsetCommitValue v4 (the topic id as a tagged field), v1 with an expiry.
    written = {v["value_fields"]["version"] for v in _by_name("Kafka's coordinator: a commit")}
    assert written == {1, 4}


@pytest.mark.parametrize("vector", [v for v in VECTORS if v["key"]], ids=lambda v: v["name"])
def test_keys_kafka_wrote_decode_to_kafkas_fields(vector: dict[str, Any]) -> None:
    key = decode_key(bytes.fromhex(vector["key"]))
    f = vector["key_fields"]
    if "topic" in f:
        assert key == OffsetCommitKey(f["group"], f["topic"], f["partition"])
    else:
        assert key == GroupMetadataKey(f["group"])


@pytest.mark.parametrize(
    "vector", _by_name("OffsetCommitValue", "Kafka's coordinator: a commit"), ids=lambda v: v["name"]
)
def test_offset_commit_values_kafka_wrote_decode_to_kafkas_fields(vector: dict[str, Any]) -> None:
    f = vector["value_fields"]
    value = OffsetCommitValue.decode(bytes.fromhex(vector["value"]))
    assert value == OffsetCommitValue(
        f["offset"], f["leader_epoch"], f["metadata"], f["commit_timestamp"], f["expire_timestamp"]
    )


@pytest.mark.parametrize("vector", _by_name("GroupMetadataValue"), ids=lambda v: v["name"])
def test_group_metadata_values_kafka_wrote_decode_to_kafkas_fields(vector: dict[str, Any]) -> None:
    f = vector["value_fields"]
    g = GroupMetadataValue.decode(bytes.fromhex(vector["value"]))
    assert (g.protocol_type, g.generation, g.protocol, g.leader, g.current_state_timestamp) == (
        f["protocol_type"],
        f["generation"],
        f["protocol"],
        f["leader"],
        f["current_state_timestamp"] if f["version"] >= 2 else -1,
    )
    expected = [
        MemberMetadata(
            m["member_id"],
            m["group_instance_id"],
            m["client_id"],
            m["client_host"],
            m["rebalance_timeout"] if f["version"] >= 1 else -1,
            m["session_timeout"],
            bytes.fromhex(m["subscription"]),
            bytes.fromhex(m["assignment"]),
        )
        for m in f["members"]
    ]
    assert list(g.members) == expected
    assert [subscribed_topics(m.subscription) for m in g.members] == [
        m["subscribed_topics"] for m in f["members"]
    ]


@pytest.mark.parametrize("version", range(OffsetCommitValue.HIGHEST_VERSION + 1))
def test_every_offset_commit_value_version_encodes_as_kafka_does(version: int) -> None:
    """Ebb's writer gives Kafka's bytes at every version (v4 without Kafka's topic id tag)."""
    (vector,) = _by_name(f"OffsetCommitValue v{version}")
    f = vector["value_fields"]
    value = OffsetCommitValue(
        f["offset"], f["leader_epoch"], f["metadata"], f["commit_timestamp"], f["expire_timestamp"]
    )
    kafka = bytes.fromhex(vector["value"])
    if version >= 4:  # Kafka's v4 carries the topic id as tagged field 0: one tag, tag 0, 16 bytes
        assert kafka.endswith(b"\x01\x00\x10" + bytes(15) + b"\x01")
        kafka = kafka[: -len(b"\x01\x00\x10") - 16] + b"\x00"
    assert value.encode(version) == kafka
    assert OffsetCommitValue.decode(value.encode(version)) == value


@pytest.mark.parametrize("version", range(GroupMetadataValue.HIGHEST_VERSION + 1))
def test_every_group_metadata_value_version_encodes_as_kafka_does(version: int) -> None:
    (vector,) = _by_name(f"GroupMetadataValue v{version}")
    kafka = bytes.fromhex(vector["value"])
    assert GroupMetadataValue.decode(kafka).encode(version) == kafka


def test_ebb_writes_the_versions_every_kafka_tool_reads() -> None:
    """OffsetCommitKey type 1, OffsetCommitValue v3, GroupMetadataKey, GroupMetadataValue v3: no tagged
    fields, so `kafka-dump-log --offsets-decoder` of any Kafka since 2.3 and the analysis job read them."""
    key = OffsetCommitKey("g", "t", 3).encode()
    assert key == b"\x00\x01" + b"\x00\x01g" + b"\x00\x01t" + b"\x00\x00\x00\x03"
    raw = OffsetCommitValue(
        offset=42, leader_epoch=7, metadata="m", commit_timestamp=1_700_000_000_000
    ).encode()
    assert (
        raw[:2] == b"\x00\x03"
        and raw[2:10] == (42).to_bytes(8, "big")
        and raw[10:14] == (7).to_bytes(4, "big")
    )
    member = MemberMetadata("m-1", "static-1", "client", "/127.0.0.1", 30000, 10000, b"sub", b"assign")
    group = GroupMetadataValue("consumer", 4, "range", "m-1", 123, (member,))
    assert group.encode()[:2] == b"\x00\x03" and GroupMetadataValue.decode(group.encode()) == group
    assert GroupMetadataKey("grp").encode() == b"\x00\x02\x00\x03grp"


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


def test_other_group_kinds_are_not_read_and_a_negative_type_is_an_error() -> None:
    # KIP-848 consumer-group (3-8, 16), share-group (10-15) and streams-group (17-23) records.
    for record_type in (3, 5, 8, 10, 16, 23):
        assert decode_key(struct.pack(">h", record_type) + b"\x00\x01g") is None
    with pytest.raises(RecordFormatError, match="negative record type -1"):
        decode_key(b"\xff\xff\x00\x01g")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x00\x03\x00", "truncated"),
        (b"\x00\x09" + bytes(30), "unknown OffsetCommitValue version 9"),
        (b"\x00\x03" + bytes(12) + b"\x00\x02\xff\xfe" + bytes(8), "not UTF-8"),
    ],
)
def test_a_bad_offset_commit_value_is_an_error(data: bytes, message: str) -> None:
    with pytest.raises(RecordFormatError, match=message):
        OffsetCommitValue.decode(data)


def test_a_null_where_kafka_requires_a_string_is_an_error() -> None:
    with pytest.raises(RecordFormatError, match="group is null"):
        decode_key(b"\x00\x01\xff\xff")
    member = MemberMetadata("MEMBER", None, "client", "/host", 1, 1, b"", b"")
    raw = GroupMetadataValue("consumer", 1, "range", None, -1, (member,)).encode()
    assert raw.count(b"\x00\x06MEMBER") == 1
    raw = raw.replace(b"\x00\x06MEMBER", b"\xff\xff")  # the member id's length: -1, null
    with pytest.raises(RecordFormatError, match="memberId is null"):
        GroupMetadataValue.decode(raw)


def test_a_flexible_value_with_truncated_tags_is_an_error() -> None:
    v4 = OffsetCommitValue(1, 2, "m", 3).encode(4)
    with pytest.raises(RecordFormatError, match="tagged fields"):
        OffsetCommitValue.decode(v4[:-1] + b"\x01\x00\x05ab")
