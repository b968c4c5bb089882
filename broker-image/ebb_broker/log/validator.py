"""Validation of a produced batch before the broker gives it offsets (Kafka's LogValidator).

Every append, on every topic, goes through ``validate_records`` before anything is written. What it
checks, in Kafka 4.x's order and with its error codes:

1. The request carries exactly one v2 batch for the partition (ProduceRequest.validateRecords: produce
   v3+ may hold only one), whole, magic 2, its CRC-32C correct (CORRUPT_MESSAGE), no larger than
   ``max.message.bytes`` (MESSAGE_TOO_LARGE).
2. The batch (``validateBatch``, appends from clients): ``count`` positive and equal to
   ``lastOffsetDelta + 1``; no control batch (COMMIT/ABORT markers come only from the transaction
   coordinator, ``AppendOrigin.COORDINATOR``); an idempotent batch has a sequence, and a transactional one
   a producer id (INVALID_RECORD). Transactional batches are otherwise checked record by record like any
   other; the log then opens the producer's transaction (KIP-98).
3. Every record, decoded in one pass (DefaultRecord.readFrom): its length varint is at least the minimum
   record and lies inside the batch, key and value lengths are ``-1`` (null) or non-negative, headers are
   a non-negative count of non-negative-length UTF-8 keys with ``-1``/non-negative values, the fields add
   up to exactly the record's length, offset deltas run 0..count-1, and exactly ``count`` records fill the
   records section (INVALID_RECORD naming the record). Kafka rewrites a compressed batch whose inner
   offsets are not 0..n-1 (for pre-v2 clients); no v2 producer writes one, so Ebb refuses it instead.
4. Per record, as KIP-467 record errors (``batch_index`` = the record's position in the batch): a key on
   compacted topics (INVALID_RECORD), a CreateTime timestamp within ``message.timestamp.before.max.ms``
   before and ``message.timestamp.after.max.ms`` after now (KIP-937, INVALID_TIMESTAMP). A batch flagged
   LogAppendTime by its producer is refused record by record, as Kafka does on LogAppendTime topics.

Decompression is bounded: a compressed batch whose records would decompress to more than
``max.message.bytes`` is refused (MESSAGE_TOO_LARGE) before more than that is allocated. Kafka streams
the records instead; the same bound applies to what clients produce (both the Java client and librdkafka
cap a batch's uncompressed size by their own limits), and it keeps a small "bomb" from costing the broker
memory or seconds of CPU. The Java producer splits a batch refused this way and retries.

Offsets are the broker's: the log gives the batch its base offset and the records ``count`` offsets, the
count having been checked against the records decoded, so a batch that lies about it is refused, never
stored. The batch's ``maxTimestamp`` is set to its largest record timestamp (Kafka's setMaxTimestamp), or
to the append time on LogAppendTime topics. ``compression.type`` other than ``producer`` recompresses a
batch written with another codec (except control batches, which Kafka never compresses); the records'
bytes are unchanged (offset deltas and the base timestamp stay valid), only the codec, the length, the
attributes and the CRC are new.

Cost: the records are walked once by a tight loop (one-byte varints inlined, values skipped, no objects
per record); the slower pass that names the culprit records runs only when one is refused. The batch's
bytes are not copied unless the header or the codec changes.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

import google_crc32c

from ebb_broker.log.compression import Compression, compress, decompress
from ebb_broker.log.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    RecordError,
    RecordTooLargeError,
    RecordValidationError,
)
from ebb_broker.log.log_config import LogConfig
from ebb_broker.log.records import validate_batch
from ebb_formats.record_batch import (
    CRC_START,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    BatchHeader,
)
from ebb_formats.varint import VarintError, read_varint

# attributes i8, then timestamp delta, offset delta, key length, value length, header count (one byte
# each at their smallest): the shortest record body after its length varint.
MIN_RECORD_BODY = 6
MIN_RECORD_SIZE = MIN_RECORD_BODY + 1
_LONG_MAX = 2**63 - 1
_LONG_MIN = -(2**63)
_CODEC_BY_NAME = {
    "uncompressed": Compression.NONE,
    "gzip": Compression.GZIP,
    "snappy": Compression.SNAPPY,
    "lz4": Compression.LZ4,
    "zstd": Compression.ZSTD,
}
_CRC = struct.Struct(">I")


class AppendOrigin(enum.Enum):
    """Who appends (Kafka's AppendOrigin): clients get every check; the broker's own coordinators write
    batches it built itself: transactional offset commits without a sequence, and the transaction
    markers (control batches)."""

    CLIENT = "client"
    COORDINATOR = "coordinator"


@dataclass(frozen=True, slots=True)
class ValidatedBatch:
    """A batch ready to be stamped and written.

    ``header`` is the batch as it will be stored except for its base offset (the log stamps it);
    ``tail`` is the stored bytes from magic (byte 16) to the end: the log writes its own 16-byte prefix
    (base offset, length, partition leader epoch, all outside the CRC) and then ``tail``.
    """

    header: BatchHeader
    tail: bytes | memoryview
    recompressed: bool = False

    @property
    def size(self) -> int:
        return len(self.tail) + 16


def target_compression(config: LogConfig, source: int) -> int:
    """The codec a batch is stored with: the producer's, or the topic's ``compression.type``."""
    if config.compression_type == "producer":
        return source
    return int(_CODEC_BY_NAME[config.compression_type])


def compression_level(config: LogConfig, codec: int) -> int | None:
    """KIP-390's level for the codec the broker compresses with (None: the codec has no level)."""
    if codec == Compression.GZIP:
        return config.compression_gzip_level
    if codec == Compression.LZ4:
        return config.compression_lz4_level
    if codec == Compression.ZSTD:
        return config.compression_zstd_level
    return None


def validate_records(
    records: bytes | memoryview,
    config: LogConfig,
    *,
    now_ms: int,
    topic_partition: str,
    origin: AppendOrigin = AppendOrigin.CLIENT,
) -> ValidatedBatch:
    """Check one produced batch (see the module docstring) and prepare its stored form.

    Raises CorruptRecordError, InvalidRecordError, RecordValidationError (with KIP-467 record errors)
    and RecordTooLargeError; returns the batch to write.
    """
    buf = records if isinstance(records, bytes) else bytes(records)
    end = len(buf)
    if end == 0:
        raise InvalidRecordError(f"produce request without a record batch for {topic_partition}")
    if end < LOG_OVERHEAD:
        raise CorruptRecordError(f"{end} bytes are not a record batch")
    header = validate_batch(buf, 0, end)
    if header.size > config.max_message_bytes:
        raise RecordTooLargeError(
            f"batch of {header.size} bytes exceeds max.message.bytes={config.max_message_bytes}"
        )
    if header.size > config.segment_bytes:
        raise RecordTooLargeError(
            f"batch of {header.size} bytes exceeds segment.bytes={config.segment_bytes}"
        )
    if header.size < end:
        raise InvalidRecordError(
            f"a produce request may hold exactly one record batch per partition, {topic_partition} got more"
        )
    _validate_batch_header(header, topic_partition, origin)

    codec = header.compression
    if codec == Compression.NONE:
        data, start = buf, HEADER_SIZE
    else:
        data = decompress(codec, memoryview(buf)[HEADER_SIZE:end], config.max_message_bytes)
        start = 0
    stop = len(data)
    count = header.count
    if count > (stop - start) // MIN_RECORD_SIZE:
        raise InvalidRecordError(
            f"batch claims {count} records but its {stop - start} bytes of records hold at most "
            f"{(stop - start) // MIN_RECORD_SIZE} in {topic_partition}"
        )
    min_delta, max_delta, keyless = scan_records(data, start, count)

    append_time = config.message_timestamp_type == "LogAppendTime"
    base_ts = header.base_timestamp
    errors: list[RecordError] = []
    if keyless and config.compact and origin is AppendOrigin.CLIENT:
        errors = keyless_record_errors(data, start, count, topic_partition)
    if header.attributes & TIMESTAMP_TYPE_MASK:
        errors = _merge(errors, _log_append_time_errors(count))
    elif not append_time and _out_of_range(base_ts + min_delta, base_ts + max_delta, now_ms, config):
        errors = _merge(errors, timestamp_record_errors(data, start, count, base_ts, now_ms, config))
    if errors:
        raise record_validation_error(errors)

    max_ts = now_ms if append_time else base_ts + max_delta
    # Kafka's LogValidator: "Do not compress control records unless they are written compressed".
    target = codec if header.is_control else target_compression(config, codec)
    attributes = (header.attributes & ~0x07) | target
    if append_time:
        attributes |= TIMESTAMP_TYPE_MASK
    if target != codec:
        section = data[start:stop] if codec == Compression.NONE else data
        compressed = compress(Compression(target), section, compression_level(config, target))
        batch = _rebuilt(header, attributes, max_ts, compressed)
        if len(batch) > config.max_message_bytes:
            raise RecordTooLargeError(
                f"batch recompressed to {Compression(target).name} is {len(batch)} bytes, more than "
                f"max.message.bytes={config.max_message_bytes}"
            )
        return ValidatedBatch(_read(batch), memoryview(batch)[16:], recompressed=True)
    if attributes != header.attributes or max_ts != header.max_timestamp:
        batch = _rebuilt(header, attributes, max_ts, memoryview(buf)[HEADER_SIZE:end])
        return ValidatedBatch(_read(batch), memoryview(batch)[16:])
    return ValidatedBatch(header, memoryview(buf)[16:end])


def _validate_batch_header(header: BatchHeader, topic_partition: str, origin: AppendOrigin) -> None:
    """Kafka's LogValidator.validateBatch for magic 2."""
    if origin is AppendOrigin.CLIENT:
        if header.last_offset_delta < 0:
            raise InvalidRecordError(
                f"Batch has an invalid offset range: [{header.base_offset}, {header.last_offset}] in "
                f"topic partition {topic_partition}"
            )
        if header.count <= 0:
            raise InvalidRecordError(
                f"Invalid reported count for record batch: {header.count} in topic partition "
                f"{topic_partition}"
            )
        if header.count != header.last_offset_delta + 1:
            raise InvalidRecordError(
                f"Inconsistent batch offset range [{header.base_offset}, {header.last_offset}] and count of "
                f"records {header.count} in topic partition {topic_partition}"
            )
        if header.is_control:
            raise InvalidRecordError(
                f"Clients are not allowed to write control records in topic partition {topic_partition}"
            )
        if header.producer_id >= 0 and header.base_sequence < 0:
            raise InvalidRecordError(
                f"Invalid sequence number {header.base_sequence} in record batch with producerId "
                f"{header.producer_id} in topic partition {topic_partition}"
            )
        if header.is_transactional and header.producer_id < 0:
            raise InvalidRecordError(
                f"Transactional record batch without a producer id in topic partition {topic_partition}"
            )


def scan_records(data: bytes, pos: int, count: int) -> tuple[int, int, int]:
    """Walk ``count`` records from ``data[pos]`` to the end of ``data``, checking their structure (the
    module docstring, step 3).

    Returns (smallest timestamp delta, largest timestamp delta, number of records without a key); raises
    InvalidRecordError naming the first malformed record. This is the hot loop of every produce: one- and
    two-byte varints (every length below 8 KiB, every offset delta below 8192) are decoded inline, values
    are skipped, nothing is allocated per record.
    """
    varint = read_varint
    end = len(data)
    min_body = MIN_RECORD_BODY
    min_ts, max_ts = _LONG_MAX, _LONG_MIN
    keyless = 0
    i = 0
    # Zig-zag: an odd encoding is a negative value; checking the low bit spares decoding the sign.
    try:
        for i in range(count):
            at = pos
            b = data[pos]
            if b < 0x80:
                length = b >> 1 if not b & 1 else -1
                pos += 1
            elif (c := data[pos + 1]) < 0x80:
                u = (b & 0x7F) | (c << 7)
                length = u >> 1 if not u & 1 else -1
                pos += 2
            else:
                length, pos = varint(data, pos)
            rec_end = pos + length
            if length < min_body or rec_end > end:
                raise _bad_length(data, at, i, end)
            b = data[pos + 1]  # after the attributes (unused by Kafka; Ebb's bit 0: KIP-87 tombstone)
            if b < 0x80:
                ts = (b >> 1) ^ -(b & 1)
                p = pos + 2
            else:
                ts, p = varint(data, pos + 1)
            if ts > max_ts:
                max_ts = ts
            if ts < min_ts:
                min_ts = ts
            b = data[p]  # the offset delta must be i, zig-zag encoded as 2i
            if b < 0x80:
                if b != i << 1:
                    raise _bad_delta(data, p, i)
                p += 1
            elif (c := data[p + 1]) < 0x80:
                if (b & 0x7F) | (c << 7) != i << 1:
                    raise _bad_delta(data, p, i)
                p += 2
            else:
                delta, q = varint(data, p)
                if delta != i:
                    raise _bad_delta(data, p, i)
                p = q
            b = data[p]  # key length: -1 (null) or the key's bytes follow
            if b == 1:
                keyless += 1
                p += 1
            elif b < 0x80 and not b & 1:
                p += 1 + (b >> 1)
            else:
                klen, p = varint(data, p)
                if klen < 0:
                    raise InvalidRecordError(f"record {i} has key length {klen}")
                p += klen
            b = data[p]  # value length: -1 (null) or the value's bytes follow
            if b < 0x80 and not b & 1:
                p += 1 + (b >> 1)
            elif b == 1:
                p += 1
            elif b >= 0x80 and not b & 1 and (c := data[p + 1]) < 0x80:
                p += 2 + (((b & 0x7F) | (c << 7)) >> 1)
            else:
                vlen, p = varint(data, p)
                if vlen < -1:
                    raise InvalidRecordError(f"record {i} has value length {vlen}")
                p += max(vlen, 0)
            if data[p] == 0:  # no headers
                p += 1
            else:
                p = _scan_headers(data, p, rec_end, i)
            if p != rec_end:
                raise InvalidRecordError(
                    f"Invalid record size: expected to read {length} bytes in record {i} payload, but "
                    f"instead read {length + p - rec_end}"
                )
            pos = rec_end
    except IndexError:
        raise InvalidRecordError(f"record {i} of {count} is truncated") from None
    except VarintError as exc:
        raise InvalidRecordError(str(exc)) from None
    if pos != end:
        raise InvalidRecordError(
            f"Incorrect declared batch size, {end - pos} bytes of records remain after {count} records"
        )
    return min_ts, max_ts, keyless


def _bad_length(data: bytes, pos: int, i: int, end: int) -> InvalidRecordError:
    length, after = read_varint(data, pos)
    return InvalidRecordError(f"record {i} claims {length} bytes, {end - after} are left in the batch")


def _bad_delta(data: bytes, pos: int, i: int) -> InvalidRecordError:
    delta, _ = read_varint(data, pos)
    return InvalidRecordError(f"record {i} has offset delta {delta}, expected {i}")


def _scan_headers(data: bytes, p: int, rec_end: int, i: int) -> int:
    count, p = read_varint(data, p)
    if count < 0 or count > (rec_end - p) // 2:  # a header takes at least two bytes
        raise InvalidRecordError(f"record {i} has header count {count}")
    for h in range(count):
        klen, p = read_varint(data, p)
        if klen < 0 or p + klen > rec_end:
            raise InvalidRecordError(f"record {i} header {h} has key length {klen}")
        try:
            data[p : p + klen].decode()
        except UnicodeDecodeError:
            raise InvalidRecordError(f"record {i} header {h} key is not UTF-8") from None
        p += klen
        vlen, p = read_varint(data, p)
        if vlen < -1 or p + vlen > rec_end:
            raise InvalidRecordError(f"record {i} header {h} has value length {vlen}")
        p += max(vlen, 0)
    return p


def _record_fields(data: bytes, pos: int, count: int) -> list[tuple[int, int]]:
    """(timestamp delta, key length) of each record of an already-scanned records section."""
    out = []
    for _ in range(count):
        length, pos = read_varint(data, pos)
        end = pos + length
        ts, p = read_varint(data, pos + 1)
        _delta, p = read_varint(data, p)
        klen, p = read_varint(data, p)
        out.append((ts, klen))
        pos = end
    return out


def keyless_record_errors(data: bytes, pos: int, count: int, topic_partition: str) -> list[RecordError]:
    message = f"Compacted topic cannot accept message without key in topic partition {topic_partition}"
    return [
        RecordError(i, message) for i, (_ts, klen) in enumerate(_record_fields(data, pos, count)) if klen < 0
    ]


def _out_of_range(low: int, high: int, now_ms: int, config: LogConfig) -> bool:
    return now_ms - low > config.message_timestamp_before_max_ms or (
        high - now_ms > config.message_timestamp_after_max_ms
    )


def timestamp_record_errors(
    data: bytes, pos: int, count: int, base_timestamp: int, now_ms: int, config: LogConfig
) -> list[RecordError]:
    """KIP-937: CreateTime timestamps too far before or after now, one error per record."""
    before, after = config.message_timestamp_before_max_ms, config.message_timestamp_after_max_ms
    errors = []
    for i, (delta, _klen) in enumerate(_record_fields(data, pos, count)):
        ts = base_timestamp + delta
        if ts != NO_TIMESTAMP and (now_ms - ts > before or ts - now_ms > after):
            errors.append(
                RecordError(
                    i,
                    f"Timestamp {ts} of message with offset {i} is out of range. The timestamp should be "
                    f"within [{now_ms - before}, {now_ms + after}]",
                )
            )
    return errors


def _log_append_time_errors(count: int) -> list[RecordError]:
    message = "Invalid timestamp type in message. Producer should not set timestamp type to LogAppendTime."
    return [RecordError(i, message) for i in range(count)]


def _merge(first: list[RecordError], second: list[RecordError]) -> list[RecordError]:
    """Kafka reports one error per record, the key error first."""
    if not first:
        return second
    seen = {e.batch_index for e in first}
    return sorted([*first, *(e for e in second if e.batch_index not in seen)], key=lambda e: e.batch_index)


def record_validation_error(errors: list[RecordError]) -> RecordValidationError:
    """Kafka's processRecordErrors: INVALID_TIMESTAMP if any record has a bad timestamp, else
    INVALID_RECORD, with Kafka's message (the first three record errors)."""
    if any(e.message.startswith(("Timestamp ", "Invalid timestamp type")) for e in errors):
        cause: InvalidRecordError | InvalidTimestampError = InvalidTimestampError(
            "One or more records have been rejected due to invalid timestamp"
        )
    else:
        shown = ", ".join(
            f"RecordError(batchIndex={e.batch_index}, message='{e.message}')" for e in errors[:3]
        )
        cause = InvalidRecordError(
            f"One or more records have been rejected due to {len(errors)} record errors in total, and only "
            f"showing the first three errors at most: [{shown}]"
        )
    return RecordValidationError(cause, errors)


def _rebuilt(header: BatchHeader, attributes: int, max_timestamp: int, section: bytes | memoryview) -> bytes:
    """The batch with new attributes, maxTimestamp and records section; length and CRC recomputed."""
    head = bytearray(
        HEADER.pack(
            header.base_offset,
            HEADER_SIZE - LOG_OVERHEAD + len(section),
            header.partition_leader_epoch,
            header.magic,
            0,
            attributes,
            header.last_offset_delta,
            header.base_timestamp,
            max_timestamp,
            header.producer_id,
            header.producer_epoch,
            header.base_sequence,
            header.count,
        )
    )
    rest = section if isinstance(section, bytes) else bytes(section)
    crc = google_crc32c.extend(google_crc32c.value(bytes(head[CRC_START:])), rest)
    _CRC.pack_into(head, 17, crc)
    return bytes(head) + rest


def _read(batch: bytes) -> BatchHeader:
    return BatchHeader._make(HEADER.unpack_from(batch, 0))
