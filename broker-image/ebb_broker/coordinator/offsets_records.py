"""Kafka's `__consumer_offsets` record format: the keys and values the group coordinator writes.

The schemas are Kafka's group-coordinator message specs (OffsetCommitKey/Value,
GroupMetadataKey/Value). Ebb writes the versions every Kafka tool reads without tagged fields:
OffsetCommitKey v1 + OffsetCommitValue v3 (no expire timestamp, with leader epoch) and
GroupMetadataKey v2 + GroupMetadataValue v3 (with group instance ids), so
`kafka-dump-log --offsets-decoder` and the analysis job decode them. Readers accept value versions
0-3 of both kinds; a key version they do not know is skipped (Kafka's transaction and share-group
records live in other topics). A null value is a tombstone for its key.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

OFFSETS_TOPIC = "__consumer_offsets"

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


def partition_for(group_id: str, partitions: int) -> int:
    """Kafka's `Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`.

    Java's String.hashCode runs over UTF-16 code units as a signed 32-bit int; Kafka's `Utils.abs` is
    `Math.abs`, except that Integer.MIN_VALUE (whose Math.abs is itself) maps to 0.
    """
    h = 0
    data = group_id.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    signed = h - (1 << 32) if h & 0x80000000 else h
    return (0 if signed == -(1 << 31) else abs(signed)) % partitions


class _Writer:
    def __init__(self) -> None:
        self.buf = bytearray()

    def i16(self, v: int) -> _Writer:
        self.buf += _I16.pack(v)
        return self

    def i32(self, v: int) -> _Writer:
        self.buf += _I32.pack(v)
        return self

    def i64(self, v: int) -> _Writer:
        self.buf += _I64.pack(v)
        return self

    def string(self, v: str | None) -> _Writer:
        if v is None:
            return self.i16(-1)
        raw = v.encode()
        self.i16(len(raw))
        self.buf += raw
        return self

    def bytes_(self, v: bytes | None) -> _Writer:
        if v is None:
            return self.i32(-1)
        self.i32(len(v))
        self.buf += v
        return self


class RecordFormatError(ValueError):
    """A key or value that is not in a known `__consumer_offsets` format."""


class _Reader:
    def __init__(self, data: bytes):
        self.data = memoryview(data)
        self.pos = 0

    def _take(self, s: struct.Struct) -> int:
        if self.pos + s.size > len(self.data):
            raise RecordFormatError("truncated record")
        (v,) = s.unpack_from(self.data, self.pos)
        self.pos += s.size
        return int(v)

    def i16(self) -> int:
        return self._take(_I16)

    def i32(self) -> int:
        return self._take(_I32)

    def i64(self) -> int:
        return self._take(_I64)

    def string(self) -> str | None:
        n = self.i16()
        if n < 0:
            return None
        if self.pos + n > len(self.data):
            raise RecordFormatError("truncated string")
        v = bytes(self.data[self.pos : self.pos + n]).decode()
        self.pos += n
        return v

    def bytes_(self) -> bytes | None:
        n = self.i32()
        if n < 0:
            return None
        if self.pos + n > len(self.data):
            raise RecordFormatError("truncated bytes")
        v = bytes(self.data[self.pos : self.pos + n])
        self.pos += n
        return v


@dataclass(frozen=True)
class OffsetKey:
    """OffsetCommitKey: which (group, topic, partition) a commit is for."""

    group: str
    topic: str
    partition: int

    def encode(self) -> bytes:
        return bytes(_Writer().i16(1).string(self.group).string(self.topic).i32(self.partition).buf)


@dataclass(frozen=True)
class OffsetValue:
    """OffsetCommitValue v3: the committed position and its metadata."""

    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = 0

    def encode(self) -> bytes:
        w = _Writer().i16(3).i64(self.offset).i32(self.leader_epoch)
        return bytes(w.string(self.metadata).i64(self.commit_timestamp).buf)

    @classmethod
    def decode(cls, data: bytes) -> OffsetValue:
        r = _Reader(data)
        version = r.i16()
        if not 0 <= version <= 3:
            raise RecordFormatError(f"OffsetCommitValue version {version}")
        offset = r.i64()
        epoch = r.i32() if version >= 3 else -1
        metadata = r.string() or ""
        ts = r.i64()
        return cls(offset, epoch, metadata, ts)


@dataclass(frozen=True)
class GroupKey:
    """GroupMetadataKey: the group a metadata record describes."""

    group: str

    def encode(self) -> bytes:
        return bytes(_Writer().i16(2).string(self.group).buf)


@dataclass(frozen=True)
class MemberRecord:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupValue:
    """GroupMetadataValue v3: the group's generation, protocol, leader and members."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: list[MemberRecord] = field(default_factory=list)

    def encode(self) -> bytes:
        w = _Writer().i16(3).string(self.protocol_type).i32(self.generation)
        w.string(self.protocol).string(self.leader).i64(self.current_state_timestamp).i32(len(self.members))
        for m in self.members:
            w.string(m.member_id).string(m.group_instance_id).string(m.client_id).string(m.client_host)
            w.i32(m.rebalance_timeout).i32(m.session_timeout).bytes_(m.subscription).bytes_(m.assignment)
        return bytes(w.buf)

    @classmethod
    def decode(cls, data: bytes) -> GroupValue:
        r = _Reader(data)
        version = r.i16()
        if not 0 <= version <= 3:
            raise RecordFormatError(f"GroupMetadataValue version {version}")
        protocol_type = r.string() or ""
        generation = r.i32()
        protocol = r.string()
        leader = r.string()
        ts = r.i64() if version >= 2 else -1
        members = []
        for _ in range(r.i32()):
            member_id = r.string() or ""
            instance = r.string() if version >= 3 else None
            client_id = r.string() or ""
            client_host = r.string() or ""
            rebalance = r.i32() if version >= 1 else -1
            session = r.i32()
            members.append(
                MemberRecord(
                    member_id,
                    instance,
                    client_id,
                    client_host,
                    rebalance,
                    session,
                    r.bytes_() or b"",
                    r.bytes_() or b"",
                )
            )
        return cls(protocol_type, generation, protocol, leader, ts, members)


def decode_key(data: bytes) -> OffsetKey | GroupKey | None:
    """The key of a `__consumer_offsets` record, or None for a record kind Ebb does not read."""
    r = _Reader(data)
    version = r.i16()
    if version in (0, 1):
        group, topic = r.string() or "", r.string() or ""
        return OffsetKey(group, topic, r.i32())
    if version == 2:
        return GroupKey(r.string() or "")
    return None
