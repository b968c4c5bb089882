"""Record-batch compression codecs (attributes bits 0-2 of a v2 batch), via cramjam.

Kafka's codec ids: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd. Snappy comes in two shapes: the Java client
writes snappy-java's xerial framing (magic ``\\x82SNAPPY\\x00``, two int32 versions, then int32-length
prefixed raw blocks), librdkafka may write a raw snappy block; we read both and write xerial, as the Java
client does, so every consumer can read what the cleaner rewrites. LZ4 is the LZ4 frame format (KIP-57).
"""

from __future__ import annotations

import enum
import struct

import cramjam

from ebb_broker.log.errors import CorruptRecordError

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024  # snappy-java's default block size


class Compression(enum.IntEnum):
    """Kafka's compression codec ids (the low three bits of the batch attributes)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


def compress(codec: Compression, data: bytes) -> bytes:
    """Compress a batch's records section with ``codec``."""
    if codec == Compression.NONE:
        return data
    if codec == Compression.GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec == Compression.SNAPPY:
        out = [_XERIAL_HEADER]
        for i in range(0, len(data), _XERIAL_BLOCK):
            block = bytes(cramjam.snappy.compress_raw(data[i : i + _XERIAL_BLOCK]))
            out += (struct.pack(">i", len(block)), block)
        return b"".join(out)
    if codec == Compression.LZ4:
        return bytes(cramjam.lz4.compress(data))
    if codec == Compression.ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise CorruptRecordError(f"unknown compression codec {int(codec)}")


def decompress(codec: int, data: bytes | memoryview) -> bytes:
    """Decompress a batch's records section; raises CorruptRecordError on an unknown codec or bad data."""
    try:
        if codec == Compression.NONE:
            return bytes(data)
        if codec == Compression.GZIP:
            return bytes(cramjam.gzip.decompress(data))
        if codec == Compression.SNAPPY:
            return _snappy_decompress(bytes(data))
        if codec == Compression.LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec == Compression.ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except cramjam.DecompressionError as exc:
        raise CorruptRecordError(f"cannot decompress {Compression(codec).name} records: {exc}") from None
    raise CorruptRecordError(f"unknown compression codec {codec}")


def _snappy_decompress(data: bytes) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(data))
    pos, out = 16, []
    while pos < len(data):
        if pos + 4 > len(data):
            raise CorruptRecordError("truncated xerial snappy block header")
        (n,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if n < 0 or pos + n > len(data):
            raise CorruptRecordError("truncated xerial snappy block")
        out.append(bytes(cramjam.snappy.decompress_raw(data[pos : pos + n])))
        pos += n
    return b"".join(out)
