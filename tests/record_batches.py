"""Raw v2 record batches with arbitrary, possibly hostile, contents and a correct CRC-32C.

What a producer could send that the validator must refuse (lying counts, negative lengths, truncated
records, decompression bombs): the unit, compat and fuzz tests build them here, so what refuses them is
the record-by-record check and never the checksum.
"""

from __future__ import annotations

import struct

import google_crc32c

from ebb_formats.record_batch import HEADER

NOW = 1_700_000_000_000


def varint(value: int) -> bytes:
    """A zig-zag varint, as the record format writes lengths and deltas."""
    v = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def record(
    offset_delta: int,
    key: bytes | None = b"k",
    value: bytes | None = b"v",
    ts_delta: int = 0,
    headers: bytes = varint(0),
    length: int | None = None,
) -> bytes:
    """One record; ``length`` overrides the true length prefix."""
    body = b"\x00" + varint(ts_delta) + varint(offset_delta)
    body += varint(-1) if key is None else varint(len(key)) + key
    body += varint(-1) if value is None else varint(len(value)) + value
    body += headers
    return varint(len(body) if length is None else length) + body


def raw_batch(
    section: bytes,
    count: int,
    *,
    last_offset_delta: int | None = None,
    attributes: int = 0,
    base_ts: int = NOW,
    max_ts: int | None = None,
    producer_id: int = -1,
    base_sequence: int = -1,
) -> bytes:
    """A batch around an arbitrary records section, with a correct length and CRC-32C."""
    head = bytearray(
        HEADER.pack(
            0,
            49 + len(section),
            0,
            2,
            0,
            attributes,
            count - 1 if last_offset_delta is None else last_offset_delta,
            base_ts,
            base_ts if max_ts is None else max_ts,
            producer_id,
            0,
            base_sequence,
            count,
        )
    )
    crc = google_crc32c.extend(google_crc32c.value(bytes(head[21:])), section)
    struct.pack_into(">I", head, 17, crc)
    return bytes(head) + section


def zstd_zeros(mb: int) -> bytes:
    """A zstd frame of ``mb`` MiB of zeros written as RLE blocks: 4 bytes per 128 KiB (RFC 8878)."""
    head = b"\x28\xb5\x2f\xfd" + b"\x00" + bytes([17 - 10 << 3])  # no content size, 128 KiB window
    rle = (1 << 1 | 131072 << 3).to_bytes(3, "little") + b"\x00"  # an RLE block: 128 KiB of zeros
    last = (1 | 1 << 1 | 131072 << 3).to_bytes(3, "little") + b"\x00"
    return head + rle * (mb * 8 - 1) + last
