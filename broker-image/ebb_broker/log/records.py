"""The v2 record batch as the log engine uses it: CRC-32C validation, record decoding, key scans for the
cleaner, and a batch builder.

The layout itself (the 61-byte header, its attribute bits, control records) is Kafka's format, in
`ebb_formats.record_batch`, and the varints inside records are `ebb_formats.varint`'s; this module adds
what the engine does with them: the CRC check (google_crc32c), compression, Ebb's explicit tombstones
(KIP-87), and the record walks. The produce path checks every record without building objects
(validator.py); records are decoded into ``Record`` objects where a feature needs their contents (the
cleaner, tombstone detection, timestamp lookups inside a batch).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import google_crc32c

from ebb_broker.log.compression import Compression, compress, decompress
from ebb_broker.log.errors import CorruptRecordError
from ebb_formats.record_batch import (
    COMPRESSION_MASK,
    CONTROL_KEY,
    CONTROL_MASK,
    COUNT_POS,
    CRC_POS,
    CRC_START,
    CREATE_TIME,
    DELETE_HORIZON_MASK,
    END_TXN_MARKER,
    HEADER,
    HEADER_SIZE,
    LAST_OFFSET_DELTA_POS,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    MAGIC,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    BatchHeader,
    read_header,
)
from ebb_formats.varint import VarintError, read_varint, write_varint

RECORD_TOMBSTONE_ATTR = 0x01  # Ebb's KIP-87 explicit tombstone: bit 0 of the record attributes byte
TOMBSTONE_HEADER = "ebb.tombstone"  # ... or this header, for clients that cannot set record attributes
_LENGTH = struct.Struct(">i")


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """CRC-32C (Castagnoli) in C; google_crc32c wants a bytes object, so views are copied once."""
    if not isinstance(data, bytes):
        data = bytes(data)
    return int(google_crc32c.value(data))


def validate_batch(buf: bytes | memoryview, pos: int, end: int) -> BatchHeader:
    """Check framing, magic and CRC-32C of the batch at ``pos``; raise CorruptRecordError. What the batch
    holds (count, records) is the validator's (validator.py)."""
    if end - pos < HEADER_SIZE:
        raise CorruptRecordError(f"truncated batch header at byte {pos}: {end - pos} bytes left")
    header = read_header(buf, pos)
    if header.magic != MAGIC:
        raise CorruptRecordError(f"batch at byte {pos} has magic {header.magic}; only magic 2 (v2) is stored")
    if header.length < HEADER_SIZE - LOG_OVERHEAD or pos + header.size > end:
        raise CorruptRecordError(f"batch at byte {pos} claims length {header.length}, {end - pos} bytes left")
    if crc32c(buf[pos + CRC_START : pos + header.size]) != header.crc:
        raise CorruptRecordError(f"batch at byte {pos} fails its CRC-32C check")
    return header


def iter_headers(buf: bytes | memoryview, *, validate: bool = True) -> Iterator[tuple[int, BatchHeader]]:
    """Yield ``(position, header)`` for every batch of a buffer that must hold whole batches only."""
    pos, end = 0, len(buf)
    while pos < end:
        header = validate_batch(buf, pos, end) if validate else read_header(buf, pos)
        yield pos, header
        pos += header.size


# -- records -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Record:
    """One decoded record with its absolute offset and timestamp."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    attributes: int = 0

    def is_tombstone(self, null_value_is_tombstone: bool = True) -> bool:
        """KIP-87 as Ebb defines it: the explicit marker (attribute bit 0 or header), or a null value
        when tombstone.null.value.enable is true."""
        if self.attributes & RECORD_TOMBSTONE_ATTR:
            return True
        if self.headers and any(k == TOMBSTONE_HEADER for k, _ in self.headers):
            return True
        return null_value_is_tombstone and self.value is None


def batch_records_section(batch: bytes | memoryview, header: BatchHeader) -> bytes:
    """The records section of a batch, decompressed."""
    return decompress(header.compression, batch[HEADER_SIZE : header.size])


def decode_records(batch: bytes | memoryview, header: BatchHeader | None = None) -> list[Record]:
    """Decode every record of one whole batch (decompressing it if needed)."""
    if header is None:
        header = read_header(batch)
    data = batch_records_section(batch, header)
    base_offset, base_ts = header.base_offset, header.base_timestamp
    append_time = header.max_timestamp if header.timestamp_type == LOG_APPEND_TIME else None
    out: list[Record] = []
    pos = 0
    try:
        for _ in range(header.count):
            length, pos = read_varint(data, pos)
            end = pos + length
            attributes = data[pos]
            ts_delta, p = read_varint(data, pos + 1)
            off_delta, p = read_varint(data, p)
            klen, p = read_varint(data, p)
            key = None if klen < 0 else data[p : p + klen]
            p += max(klen, 0)
            vlen, p = read_varint(data, p)
            value = None if vlen < 0 else data[p : p + vlen]
            p += max(vlen, 0)
            nheaders, p = read_varint(data, p)
            headers: list[tuple[str, bytes | None]] = []
            for _h in range(nheaders):
                hk, p = read_varint(data, p)
                hkey = data[p : p + hk].decode()
                p += hk
                hv, p = read_varint(data, p)
                headers.append((hkey, None if hv < 0 else data[p : p + hv]))
                p += max(hv, 0)
            if p != end:
                raise CorruptRecordError(f"record at offset delta {off_delta} has {end - p} stray bytes")
            pos = end
            ts = append_time if append_time is not None else base_ts + ts_delta
            out.append(Record(base_offset + off_delta, ts, key, value, tuple(headers), attributes))
    except (IndexError, UnicodeDecodeError) as exc:
        raise CorruptRecordError(f"malformed record in batch at offset {base_offset}: {exc}") from None
    except VarintError:
        raise CorruptRecordError("varint too long") from None
    if pos != len(data):
        raise CorruptRecordError(
            f"batch at offset {base_offset} has {len(data) - pos} bytes after its records"
        )
    return out


def read_end_txn_marker(batch: bytes | memoryview, header: BatchHeader) -> tuple[int, int] | None:
    """``(ControlRecordType, coordinator epoch)`` of a control batch's marker record; None when the
    batch holds no readable end-transaction marker (nothing completes then)."""
    try:
        records = decode_records(batch, header)
    except CorruptRecordError:
        return None
    if not records or records[0].key is None or len(records[0].key) < CONTROL_KEY.size:
        return None
    _version, control_type = CONTROL_KEY.unpack_from(records[0].key)
    value = records[0].value
    epoch = END_TXN_MARKER.unpack_from(value)[1] if value is not None and len(value) >= 6 else -1
    return control_type, epoch


def encode_record(
    out: bytearray,
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[tuple[str, bytes | None]] = (),
    attributes: int = 0,
) -> None:
    """Append one v2 record (length-prefixed) to ``out``."""
    body = bytearray()
    body.append(attributes & 0xFF)
    write_varint(body, timestamp_delta)
    write_varint(body, offset_delta)
    for field in (key, value):
        if field is None:
            write_varint(body, -1)
        else:
            write_varint(body, len(field))
            body += field
    write_varint(body, len(headers))
    for hkey, hvalue in headers:
        raw = hkey.encode()
        write_varint(body, len(raw))
        body += raw
        if hvalue is None:
            write_varint(body, -1)
        else:
            write_varint(body, len(hvalue))
            body += hvalue
    write_varint(out, len(body))
    out += body


def encode_batch(
    records: Sequence[Record],
    *,
    base_offset: int,
    base_timestamp: int | None = None,
    max_timestamp: int | None = None,
    last_offset_delta: int | None = None,
    compression: Compression = Compression.NONE,
    timestamp_type: int = CREATE_TIME,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    partition_leader_epoch: int = 0,
    delete_horizon: bool = False,
    is_transactional: bool = False,
    is_control: bool = False,
) -> bytes:
    """Encode records (absolute offsets and timestamps) as one v2 batch.

    ``base_timestamp`` defaults to the first record's timestamp; with ``delete_horizon`` it is the horizon
    and the record deltas are computed against it so absolute timestamps are unchanged (KIP-534).
    ``last_offset_delta`` lets the cleaner keep an empty batch that still spans its original offsets.
    """
    if base_timestamp is None:
        base_timestamp = records[0].timestamp if records else NO_TIMESTAMP
    if max_timestamp is None:
        max_timestamp = max((r.timestamp for r in records), default=NO_TIMESTAMP)
    if last_offset_delta is None:
        if not records:
            raise ValueError("an empty batch needs an explicit last_offset_delta")
        last_offset_delta = records[-1].offset - base_offset
    body = bytearray()
    for r in records:
        encode_record(
            body,
            r.offset - base_offset,
            r.timestamp - base_timestamp,
            r.key,
            r.value,
            r.headers,
            r.attributes,
        )
    section = compress(compression, bytes(body))
    attributes = int(compression) & COMPRESSION_MASK
    if timestamp_type == LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= TRANSACTIONAL_MASK
    if is_control:
        attributes |= CONTROL_MASK
    if delete_horizon:
        attributes |= DELETE_HORIZON_MASK
    length = HEADER_SIZE - LOG_OVERHEAD + len(section)
    header = bytearray(
        HEADER.pack(
            base_offset,
            length,
            partition_leader_epoch,
            MAGIC,
            0,
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            len(records),
        )
    )
    crc = google_crc32c.extend(google_crc32c.value(bytes(header[CRC_START:])), section)
    struct.pack_into(">I", header, CRC_POS, crc)
    return bytes(header) + section


@dataclass(frozen=True, slots=True)
class NewRecord:
    """A record to produce: what a client hands to the builder (timestamp None = now)."""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp: int | None = None
    attributes: int = 0


def build_batch(
    records: Sequence[NewRecord],
    *,
    base_offset: int = 0,
    compression: Compression = Compression.NONE,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    timestamp_ms: int | None = None,
) -> bytes:
    """Build a v2 batch the way a producer does (offset deltas 0..n-1); for the coordinator and tests."""
    if not records:
        raise ValueError("a produced batch holds at least one record")
    now = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
    decoded = [
        Record(
            base_offset + i,
            now if r.timestamp is None else r.timestamp,
            r.key,
            r.value,
            r.headers,
            r.attributes,
        )
        for i, r in enumerate(records)
    ]
    return encode_batch(
        decoded,
        base_offset=base_offset,
        compression=compression,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
    )


def with_offset(batch: bytes | memoryview, base_offset: int) -> bytes:
    """A copy of ``batch`` re-stamped at ``base_offset`` (outside the CRC, so it stays valid)."""
    return struct.pack(">q", base_offset) + bytes(batch[8:])


def scan_keys(
    batch: bytes | memoryview,
    header: BatchHeader,
    null_is_tombstone: bool,
    starts: list[int] | None = None,
    data: bytes | None = None,
) -> tuple[list[int], list[bytes | None], list[int]]:
    """Offsets and keys of every record, and the offsets of tombstones: the cleaner's map pass.

    The same wire walk as decode_records, without building Records: one- and two-byte varints are
    inlined (deltas and lengths of records up to 8 KiB), values are skipped, headers are looked at only
    for the KIP-87 marker.
    """
    if data is None:
        data = batch_records_section(batch, header)
    base = header.base_offset
    offsets: list[int] = []
    keys: list[bytes | None] = []
    tombs: list[int] = []
    pos = 0
    varint = read_varint
    try:
        for _ in range(header.count):
            if starts is not None:
                starts.append(pos)
            b = data[pos]
            if b < 0x80:
                length, pos = (b >> 1) ^ -(b & 1), pos + 1
            elif data[pos + 1] < 0x80:
                u = (b & 0x7F) | (data[pos + 1] << 7)
                length, pos = (u >> 1) ^ -(u & 1), pos + 2
            else:
                length, pos = varint(data, pos)
            end = pos + length
            attributes = data[pos]
            p = pos + 1
            if data[p] < 0x80:  # timestamp delta: skipped
                p += 1
            elif data[p + 1] < 0x80:
                p += 2
            else:
                _, p = varint(data, p)
            b = data[p]
            if b < 0x80:
                delta, p = (b >> 1) ^ -(b & 1), p + 1
            elif data[p + 1] < 0x80:
                u = (b & 0x7F) | (data[p + 1] << 7)
                delta, p = (u >> 1) ^ -(u & 1), p + 2
            else:
                delta, p = varint(data, p)
            b = data[p]
            if b < 0x80:
                klen, p = (b >> 1) ^ -(b & 1), p + 1
            else:
                klen, p = varint(data, p)
            if klen < 0:
                keys.append(None)
            else:
                keys.append(data[p : p + klen])
                p += klen
            offset = base + delta
            offsets.append(offset)
            if attributes & RECORD_TOMBSTONE_ATTR:
                tombs.append(offset)
            else:
                b = data[p]
                if b < 0x80:
                    vlen, p = (b >> 1) ^ -(b & 1), p + 1
                elif data[p + 1] < 0x80:
                    u = (b & 0x7F) | (data[p + 1] << 7)
                    vlen, p = (u >> 1) ^ -(u & 1), p + 2
                else:
                    vlen, p = varint(data, p)
                if vlen < 0:
                    if null_is_tombstone:
                        tombs.append(offset)
                else:
                    p += vlen
                    if data[p] != 0 and _has_tombstone_header(data, p):
                        tombs.append(offset)
            pos = end
    except IndexError:
        raise CorruptRecordError(f"malformed record in batch at offset {base}") from None
    except VarintError:
        raise CorruptRecordError("varint too long") from None
    return offsets, keys, tombs


def _has_tombstone_header(data: bytes, p: int) -> bool:
    nh, p = read_varint(data, p)
    for _h in range(nh):
        hk, p = read_varint(data, p)
        if data[p : p + hk] == _TOMBSTONE_HEADER_BYTES:
            return True
        p += hk
        hv, p = read_varint(data, p)
        p += max(hv, 0)
    return False


_TOMBSTONE_HEADER_BYTES = TOMBSTONE_HEADER.encode()


def splice_batch(
    batch: bytes,
    header: BatchHeader,
    keep: set[int],
    *,
    keep_last_offset_delta: bool,
    scanned: tuple[list[int], list[int]] | None = None,
) -> bytes:
    """The batch with only the records whose offsets are in ``keep``, their bytes copied verbatim.

    Offset and timestamp deltas stay valid because base offset and base timestamp are unchanged; only
    count, lastOffsetDelta (unless ``keep_last_offset_delta``) and the CRC are rewritten, and a compressed
    batch is recompressed with its codec. ``scanned`` (offsets, record starts) skips the record walk.
    """
    data = batch_records_section(batch, header)
    if scanned is not None:  # offsets and record starts from the map pass
        offsets, starts = scanned[0], [*scanned[1], len(data)]
    else:
        starts = []
        offsets, _keys, _tombs = scan_keys(batch, header, True, starts, data)
        starts.append(len(data))
    kept = [i for i, o in enumerate(offsets) if o in keep]
    section = b"".join(data[starts[i] : starts[i + 1]] for i in kept)
    if header.compression:
        section = compress(Compression(header.compression), section)
    last_delta = header.last_offset_delta
    if not keep_last_offset_delta and kept:
        last_delta = offsets[kept[-1]] - header.base_offset
    head = bytearray(batch[:HEADER_SIZE])
    _LENGTH.pack_into(head, 8, HEADER_SIZE - LOG_OVERHEAD + len(section))
    _LENGTH.pack_into(head, LAST_OFFSET_DELTA_POS, last_delta)
    _LENGTH.pack_into(head, COUNT_POS, len(kept))
    crc = google_crc32c.extend(google_crc32c.value(bytes(head[CRC_START:])), section)
    struct.pack_into(">I", head, CRC_POS, crc)
    return bytes(head) + section
