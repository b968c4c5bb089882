"""Decode the records of Kafka's `__consumer_offsets` topic (key and value bytes) into plain values.

The group coordinator stores one record per committed offset and one per group state change.
The key starts with an int16 record type (Kafka's `coordinator-key` apiKey; older brokers called it the
key version): 0 and 1 are an OffsetCommitKey, 2 a GroupMetadataKey; 3 and above are KIP-848/share/streams
group records that carry no committed offsets and are skipped. The value starts with its own int16 version.
A record with a null value is a tombstone: it deletes the key (offset expired or deleted, group removed).

Formats follow Kafka's group-coordinator JSON specs: OffsetCommitKey v0; OffsetCommitValue v0-4
(v1 adds expireTimestamp, v3 leaderEpoch, v4 is the first flexible version); GroupMetadataKey v0;
GroupMetadataValue v0-4 (v1 rebalanceTimeout, v2 currentStateTimestamp, v3 groupInstanceId, v4 flexible);
and the consumer protocol's ConsumerProtocolSubscription (non-flexible, topics first) for subscriptions.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

OFFSETS_TOPIC = "__consumer_offsets"
OFFSET_COMMIT_KEY_TYPES = (0, 1)
GROUP_METADATA_KEY_TYPE = 2

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class OffsetsRecordError(ValueError):
    """A `__consumer_offsets` record that does not follow Kafka's format (truncated or unknown version)."""


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group: str


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int


@dataclass(frozen=True, slots=True)
class GroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: tuple[GroupMember, ...]


class _Buffer:
    """A cursor over one record's bytes; every read checks bounds so truncation is an error, not garbage."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _take(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise OffsetsRecordError(f"record truncated: need {n} bytes at {self.pos}, have {len(self.data)}")
        out = self.data[self.pos : end]
        self.pos = end
        return out

    def int16(self) -> int:
        return int(_I16.unpack(self._take(2))[0])

    def int32(self) -> int:
        return int(_I32.unpack(self._take(4))[0])

    def int64(self) -> int:
        return int(_I64.unpack(self._take(8))[0])

    def uvarint(self) -> int:
        """Unsigned varint of the flexible protocol versions (compact lengths, tagged fields)."""
        shift = value = 0
        while True:
            b = self._take(1)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise OffsetsRecordError("varint longer than 10 bytes")

    def string(self, flexible: bool) -> str | None:
        n = self.uvarint() - 1 if flexible else self.int16()
        return None if n < 0 else self._take(n).decode("utf-8")

    def required_string(self, flexible: bool) -> str:
        s = self.string(flexible)
        if s is None:
            raise OffsetsRecordError("null where Kafka's format requires a string")
        return s

    def bytes_(self, flexible: bool) -> bytes:
        n = self.uvarint() - 1 if flexible else self.int32()
        return b"" if n < 0 else self._take(n)

    def array_len(self, flexible: bool) -> int:
        n = self.uvarint() - 1 if flexible else self.int32()
        return max(n, 0)

    def skip_tagged_fields(self) -> None:
        # Flexible versions end every struct with tagged fields; unknown tags must be skipped (KIP-482).
        for _ in range(self.uvarint()):
            self.uvarint()
            self._take(self.uvarint())


def decode_key(key: bytes) -> OffsetCommitKey | GroupMetadataKey | None:
    """Decode a record key; None for record types that hold no offsets or classic-group state."""
    buf = _Buffer(key)
    record_type = buf.int16()
    if record_type in OFFSET_COMMIT_KEY_TYPES:
        return OffsetCommitKey(buf.required_string(False), buf.required_string(False), buf.int32())
    if record_type == GROUP_METADATA_KEY_TYPE:
        return GroupMetadataKey(buf.required_string(False))
    if record_type < 0:
        raise OffsetsRecordError(f"negative record type {record_type}")
    return None


def decode_offset_commit_value(value: bytes) -> OffsetCommitValue:
    """Decode an OffsetCommitValue v0-4."""
    buf = _Buffer(value)
    version = buf.int16()
    if not 0 <= version <= 4:
        raise OffsetsRecordError(f"unknown OffsetCommitValue version {version}")
    flexible = version >= 4
    offset = buf.int64()
    leader_epoch = buf.int32() if version >= 3 else -1
    metadata = buf.string(flexible) or ""
    commit_timestamp = buf.int64()
    expire_timestamp = buf.int64() if version == 1 else -1
    if flexible:
        buf.skip_tagged_fields()
    return OffsetCommitValue(offset, leader_epoch, metadata, commit_timestamp, expire_timestamp)


def decode_group_metadata_value(value: bytes) -> GroupMetadataValue:
    """Decode a GroupMetadataValue v0-4 (a classic group's state after a rebalance)."""
    buf = _Buffer(value)
    version = buf.int16()
    if not 0 <= version <= 4:
        raise OffsetsRecordError(f"unknown GroupMetadataValue version {version}")
    flexible = version >= 4
    protocol_type = buf.required_string(flexible)
    generation = buf.int32()
    protocol = buf.string(flexible)
    leader = buf.string(flexible)
    current_state_timestamp = buf.int64() if version >= 2 else -1
    members = []
    for _ in range(buf.array_len(flexible)):
        member_id = buf.required_string(flexible)
        group_instance_id = buf.string(flexible) if version >= 3 else None
        client_id = buf.required_string(flexible)
        client_host = buf.required_string(flexible)
        if version >= 1:
            buf.int32()  # rebalanceTimeout
        buf.int32()  # sessionTimeout
        subscription = buf.bytes_(flexible)
        assignment = buf.bytes_(flexible)
        if flexible:
            buf.skip_tagged_fields()
        members.append(
            GroupMember(member_id, group_instance_id, client_id, client_host, subscription, assignment)
        )
    if flexible:
        buf.skip_tagged_fields()
    return GroupMetadataValue(
        protocol_type, generation, protocol, leader, current_state_timestamp, tuple(members)
    )


def subscribed_topics(subscription: bytes) -> list[str]:
    """Topics of a ConsumerProtocolSubscription (protocol type "consumer"); newer versions append fields."""
    buf = _Buffer(subscription)
    buf.int16()  # version: Kafka parses newer versions with the current format, so do we
    return [buf.required_string(False) for _ in range(buf.array_len(False))]


# One decoded record as a row of the analysis job's raw schema (offsets_source.py reads them in Spark).
OFFSET_KIND = "offset"
GROUP_KIND = "group"

RAW_SCHEMA = (
    "kind string, source_partition int, source_offset long, tombstone boolean, "
    "group string, topic string, partition int, committed_offset long, commit_timestamp long, "
    "leader_epoch int, protocol_type string, generation int, members int, state_timestamp long, "
    "subscribed_topics array<string>"
)


def decode_row(partition: int, offset: int, key: bytes | None, value: bytes | None) -> tuple[Any, ...] | None:
    """One `__consumer_offsets` record as a RAW_SCHEMA row; None for record types without offsets."""
    where = f"{OFFSETS_TOPIC}-{partition} offset {offset}"
    if key is None:
        raise OffsetsRecordError(f"{where}: record without a key")
    try:
        k = decode_key(key)
        if isinstance(k, OffsetCommitKey):
            if value is None:
                return (OFFSET_KIND, partition, offset, True, k.group, k.topic, k.partition, *([None] * 8))
            v = decode_offset_commit_value(value)
            return (
                OFFSET_KIND, partition, offset, False, k.group, k.topic, k.partition,
                v.offset, v.commit_timestamp, v.leader_epoch, *([None] * 5),
            )  # fmt: skip
        if isinstance(k, GroupMetadataKey):
            if value is None:
                return (GROUP_KIND, partition, offset, True, k.group, *([None] * 10))
            g = decode_group_metadata_value(value)
            topics: set[str] = set()
            if g.protocol_type == "consumer":
                for m in g.members:
                    topics.update(subscribed_topics(m.subscription))
            return (
                GROUP_KIND, partition, offset, False, k.group, None, None, None, None, None,
                g.protocol_type, g.generation, len(g.members), g.current_state_timestamp, sorted(topics),
            )  # fmt: skip
        return None
    except OffsetsRecordError as e:
        # Fail closed: an unreadable record may be some group's commit, and a plan without it could
        # delete records that group has not read.
        raise OffsetsRecordError(f"{where}: {e}") from e
