"""The v2 record batch (magic 2, Kafka's DefaultRecordBatch): its header layout and control records.

Byte layout, a 61-byte header then the records section::

    baseOffset i64 | length i32 | partitionLeaderEpoch i32 | magic i8 | crc u32 | attributes i16 |
    lastOffsetDelta i32 | baseTimestamp i64 | maxTimestamp i64 | producerId i64 | producerEpoch i16 |
    baseSequence i32 | count i32 | records...

``length`` counts the bytes after itself; the CRC-32C covers ``attributes`` to the end. baseOffset and
partitionLeaderEpoch sit before the CRC on purpose: a broker stamps them without recomputing it. Each
record is a zig-zag varint length, then attributes i8, timestampDelta varlong, offsetDelta varint, key
and value (varint length, -1 for null), and headers (varint count, then key and value per header), all
varints from `ebb_formats.varint`.

A control batch (attribute bit 5) holds one control record: its key is version i16 + type i16 (Kafka's
ControlRecordType: 0 ABORT, 1 COMMIT), and an end-transaction marker's value is version i16 +
coordinatorEpoch i32.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + length: the part of a batch not counted by `length`
MAGIC = 2
CRC_POS = 17
CRC_START = 21  # attributes onwards is covered by the CRC
ATTR_POS = 21
LAST_OFFSET_DELTA_POS = 23
BASE_TS_POS = 27
MAX_TS_POS = 35
COUNT_POS = 57

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08  # 1 = LogAppendTime
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40  # KIP-534: baseTimestamp holds the tombstone delete horizon

NO_TIMESTAMP = -1
CREATE_TIME = 0
LOG_APPEND_TIME = 1

CONTROL_KEY = struct.Struct(">hh")
END_TXN_MARKER = struct.Struct(">hi")
ABORT, COMMIT = 0, 1  # ControlRecordType


class BatchHeader(NamedTuple):
    """The 61-byte v2 batch header, decoded."""

    base_offset: int
    length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    count: int  # type: ignore[assignment]  # Kafka's field name; shadows tuple.count, never called

    @property
    def size(self) -> int:
        """Bytes of the whole batch on disk."""
        return self.length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        return LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_MASK)

    @property
    def delete_horizon_ms(self) -> int | None:
        return self.base_timestamp if self.attributes & DELETE_HORIZON_MASK else None

    @property
    def last_sequence(self) -> int:
        if self.base_sequence < 0:
            return -1
        return (self.base_sequence + self.last_offset_delta) % (2**31)


def read_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Decode the header at ``pos``; the caller guarantees HEADER_SIZE bytes are there."""
    return BatchHeader._make(HEADER.unpack_from(buf, pos))


def control_type(key: bytes | bytearray | memoryview | None) -> int | None:
    """The ControlRecordType in a control record's key (ABORT, COMMIT, ...); None when the key is too
    short to hold one."""
    if key is None or len(key) < CONTROL_KEY.size:
        return None
    return int(CONTROL_KEY.unpack_from(key)[1])
