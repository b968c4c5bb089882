"""`__consumer_offsets`: the keys and values Kafka's group coordinator writes, in every version Kafka wrote.

A key starts with an int16 record type (Kafka's CoordinatorRecordType; older brokers called it the key
version): 0 and 1 are an OffsetCommitKey (group, topic, partition), 2 a GroupMetadataKey (group); 3 and
above are KIP-848 consumer-group, share-group and streams-group records, which hold no committed offset
and no classic group: `decode_key` answers None for them. A value starts with its own int16 version. A
record with a null value is a tombstone: it deletes its key (an offset expired or deleted, a group gone).

Versions, from Kafka's group-coordinator message specs (and pinned by test vectors Apache Kafka's own
classes wrote, tests/unit/formats/consumer_offsets_vectors.json):

- OffsetCommitValue v0: offset, metadata, commitTimestamp; v1 adds expireTimestamp (written while a
  commit could carry its own retention); v2 drops it; v3 adds leaderEpoch; v4 is flexible (compact
  metadata, tagged fields: Kafka 4 writes the topic id as tag 0, skipped here). Kafka 4 writes v4 (v1 for
  a commit with an expire timestamp); Ebb writes v3, which every Kafka tool reads.
- GroupMetadataValue v0: protocolType, generation, protocol, leader, members (memberId, clientId,
  clientHost, sessionTimeout, subscription, assignment); v1 adds the members' rebalanceTimeout; v2 the
  group's currentStateTimestamp; v3 the members' groupInstanceId (KIP-345); v4 is flexible. Kafka 4 and
  Ebb write v3.

A string Kafka's spec does not allow to be null, a truncated record or an unknown value version raises
RecordFormatError: readers fail closed (the operator) or skip the record with a warning (the broker).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ebb_formats.varint import VarintError, read_uvarint, skip_tagged_fields, uvarint

OFFSETS_TOPIC = "__consumer_offsets"

LEGACY_OFFSET_COMMIT, OFFSET_COMMIT, GROUP_METADATA = 0, 1, 2  # CoordinatorRecordType ids

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class RecordFormatError(ValueError):
    """A key or value that is not in a `__consumer_offsets` format Kafka writes."""


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


# -- reading -------------------------------------------------------------------------------------------


class _Reader:
    """A cursor over one key or value; every read is bounds-checked, so truncation is an error."""

    __slots__ = ("data", "flexible", "pos")

    def __init__(self, data: bytes, pos: int = 0, flexible: bool = False) -> None:
        self.data = data
        self.pos = pos
        self.flexible = flexible

    def _fixed(self, s: struct.Struct) -> int:
        pos = self.pos
        if pos + s.size > len(self.data):
            raise RecordFormatError(f"record truncated at byte {pos} of {len(self.data)}")
        self.pos = pos + s.size
        return int(s.unpack_from(self.data, pos)[0])

    def i16(self) -> int:
        return self._fixed(_I16)

    def i32(self) -> int:
        return self._fixed(_I32)

    def i64(self) -> int:
        return self._fixed(_I64)

    def _length(self, fixed: struct.Struct) -> int:
        """A length prefix: int16/int32 before the flexible versions, unsigned varint n + 1 in them."""
        if not self.flexible:
            return self._fixed(fixed)
        try:
            n, self.pos = read_uvarint(self.data, self.pos)
        except (IndexError, VarintError):
            raise RecordFormatError(f"bad length at byte {self.pos}") from None
        return n - 1

    def _take(self, n: int) -> bytes:
        pos, end = self.pos, self.pos + n
        if end > len(self.data):
            raise RecordFormatError(f"record truncated: {n} bytes at {pos}, have {len(self.data)}")
        self.pos = end
        return self.data[pos:end]

    def nullable_string(self) -> str | None:
        n = self._length(_I16)
        if n < 0:
            return None
        try:
            return self._take(n).decode()
        except UnicodeDecodeError as exc:
            raise RecordFormatError(f"string at byte {self.pos - n} is not UTF-8") from exc

    def string(self, field: str) -> str:
        s = self.nullable_string()
        if s is None:
            raise RecordFormatError(f"{field} is null, which Kafka's format does not allow")
        return s

    def bytes_(self) -> bytes:
        n = self._length(_I32)
        return b"" if n < 0 else self._take(n)

    def array_length(self) -> int:
        return max(self._length(_I32), 0)

    def tagged_fields(self) -> None:
        """Skip a flexible struct's tagged fields (KIP-482: unknown tags are ignored)."""
        try:
            self.pos = skip_tagged_fields(self.data, self.pos)
        except (IndexError, VarintError):
            raise RecordFormatError(f"tagged fields truncated at byte {self.pos}") from None


# -- writing -------------------------------------------------------------------------------------------


class _Writer:
    __slots__ = ("buf", "flexible")

    def __init__(self, version: int, flexible: bool = False) -> None:
        self.buf = bytearray(_I16.pack(version))
        self.flexible = flexible

    def i32(self, v: int) -> _Writer:
        self.buf += _I32.pack(v)
        return self

    def i64(self, v: int) -> _Writer:
        self.buf += _I64.pack(v)
        return self

    def _length(self, fixed: struct.Struct, n: int) -> None:
        self.buf += uvarint(n + 1) if self.flexible else fixed.pack(n)

    def string(self, v: str | None) -> _Writer:
        if v is None:
            self._length(_I16, -1)
        else:
            raw = v.encode()
            self._length(_I16, len(raw))
            self.buf += raw
        return self

    def bytes_(self, v: bytes) -> _Writer:
        self._length(_I32, len(v))
        self.buf += v
        return self

    def array_length(self, n: int) -> _Writer:
        self._length(_I32, n)
        return self

    def tagged_fields(self) -> _Writer:
        if self.flexible:
            self.buf.append(0)
        return self


# -- keys ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    """Which (group, topic, partition) a commit is for."""

    group: str
    topic: str
    partition: int

    def encode(self, record_type: int = OFFSET_COMMIT) -> bytes:
        w = _Writer(record_type).string(self.group).string(self.topic).i32(self.partition)
        return bytes(w.buf)


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    """The classic group a GroupMetadataValue describes."""

    group: str

    def encode(self) -> bytes:
        return bytes(_Writer(GROUP_METADATA).string(self.group).buf)


def decode_key(data: bytes) -> OffsetCommitKey | GroupMetadataKey | None:
    """The key of a `__consumer_offsets` record; None for the record types of other group kinds."""
    r = _Reader(data)
    record_type = r.i16()
    if record_type in (LEGACY_OFFSET_COMMIT, OFFSET_COMMIT):
        return OffsetCommitKey(r.string("group"), r.string("topic"), r.i32())
    if record_type == GROUP_METADATA:
        return GroupMetadataKey(r.string("group"))
    if record_type < 0:
        raise RecordFormatError(f"negative record type {record_type}")
    return None


# -- values --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    """A committed position and its metadata."""

    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = 0
    expire_timestamp: int = -1  # v1 only

    WRITTEN_VERSION = 3  # what Ebb writes
    HIGHEST_VERSION = 4

    def encode(self, version: int = WRITTEN_VERSION) -> bytes:
        if not 0 <= version <= self.HIGHEST_VERSION:
            raise ValueError(f"OffsetCommitValue has no version {version}")
        w = _Writer(version, flexible=version >= 4).i64(self.offset)
        if version >= 3:
            w.i32(self.leader_epoch)
        w.string(self.metadata).i64(self.commit_timestamp)
        if version == 1:
            w.i64(self.expire_timestamp)
        return bytes(w.tagged_fields().buf)

    @classmethod
    def decode(cls, data: bytes) -> OffsetCommitValue:
        r = _Reader(data)
        version = r.i16()
        if not 0 <= version <= cls.HIGHEST_VERSION:
            raise RecordFormatError(f"unknown OffsetCommitValue version {version}")
        r.flexible = version >= 4
        offset = r.i64()
        leader_epoch = r.i32() if version >= 3 else -1
        metadata = r.nullable_string() or ""
        commit_timestamp = r.i64()
        expire_timestamp = r.i64() if version == 1 else -1
        if r.flexible:
            r.tagged_fields()
        return cls(offset, leader_epoch, metadata, commit_timestamp, expire_timestamp)


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    """One member of a classic group as its GroupMetadataValue stores it."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int  # -1 in v0, which did not store it
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    """A classic group at its last stable point: generation, protocol, leader and members."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = -1  # v2+
    members: tuple[MemberMetadata, ...] = ()

    WRITTEN_VERSION = 3
    HIGHEST_VERSION = 4

    def encode(self, version: int = WRITTEN_VERSION) -> bytes:
        if not 0 <= version <= self.HIGHEST_VERSION:
            raise ValueError(f"GroupMetadataValue has no version {version}")
        w = _Writer(version, flexible=version >= 4).string(self.protocol_type).i32(self.generation)
        w.string(self.protocol).string(self.leader)
        if version >= 2:
            w.i64(self.current_state_timestamp)
        w.array_length(len(self.members))
        for m in self.members:
            w.string(m.member_id)
            if version >= 3:
                w.string(m.group_instance_id)
            w.string(m.client_id).string(m.client_host)
            if version >= 1:
                w.i32(m.rebalance_timeout)
            w.i32(m.session_timeout).bytes_(m.subscription).bytes_(m.assignment).tagged_fields()
        return bytes(w.tagged_fields().buf)

    @classmethod
    def decode(cls, data: bytes) -> GroupMetadataValue:
        r = _Reader(data)
        version = r.i16()
        if not 0 <= version <= cls.HIGHEST_VERSION:
            raise RecordFormatError(f"unknown GroupMetadataValue version {version}")
        r.flexible = version >= 4
        protocol_type = r.string("protocolType")
        generation = r.i32()
        protocol = r.nullable_string()
        leader = r.nullable_string()
        current_state_timestamp = r.i64() if version >= 2 else -1
        members = []
        for _ in range(r.array_length()):
            member_id = r.string("memberId")
            group_instance_id = r.nullable_string() if version >= 3 else None
            client_id = r.string("clientId")
            client_host = r.string("clientHost")
            rebalance_timeout = r.i32() if version >= 1 else -1
            session_timeout = r.i32()
            subscription = r.bytes_()
            assignment = r.bytes_()
            if r.flexible:
                r.tagged_fields()
            members.append(
                MemberMetadata(
                    member_id,
                    group_instance_id,
                    client_id,
                    client_host,
                    rebalance_timeout,
                    session_timeout,
                    subscription,
                    assignment,
                )
            )
        if r.flexible:
            r.tagged_fields()
        return cls(protocol_type, generation, protocol, leader, current_state_timestamp, tuple(members))
