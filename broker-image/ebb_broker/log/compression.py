"""Record-batch compression codecs (attributes bits 0-2 of a v2 batch).

Kafka's codec ids: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd. Snappy comes in two shapes: the Java client
writes snappy-java's xerial framing (magic ``\\x82SNAPPY\\x00``, two int32 versions, then int32-length
prefixed raw blocks), librdkafka may write a raw snappy block; we read both and write xerial, as the Java
client does, so every consumer can read what the broker rewrites. LZ4 is the LZ4 frame format (KIP-57).

Compression goes through cramjam (one native package, with Kafka's levels: KIP-390's
``compression.{gzip,lz4,zstd}.level``). Decompression of what a producer sent is bounded: with
``max_size`` no codec ever produces more than ``max_size + 1`` bytes before giving up with
RecordTooLargeError, so a small "bomb" cannot grow the broker's memory (zlib's ``max_length``,
zstandard's stream reader, lz4's ``max_length``, snappy's declared block lengths checked first).
"""

from __future__ import annotations

import enum
import struct
import zlib

import cramjam
import lz4.frame
import zstandard

from ebb_broker.log.errors import CorruptRecordError, RecordTooLargeError

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024  # snappy-java's default block size
_GZIP_MAGIC = b"\x1f\x8b"
_ZLIB_AUTO_HEADER = 32 + 15  # zlib: detect a gzip or zlib header, 32 KiB window


class Compression(enum.IntEnum):
    """Kafka's compression codec ids (the low three bits of the batch attributes)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


def compress(codec: Compression, data: bytes, level: int | None = None) -> bytes:
    """Compress a batch's records section with ``codec`` (``level`` None: the library's default)."""
    if codec == Compression.NONE:
        return data
    if codec == Compression.GZIP:
        # Kafka's compression.gzip.level -1 is zlib's default (6).
        return bytes(cramjam.gzip.compress(data, level=6 if level is None or level < 0 else level))
    if codec == Compression.SNAPPY:
        out = [_XERIAL_HEADER]
        for i in range(0, len(data), _XERIAL_BLOCK):
            block = bytes(cramjam.snappy.compress_raw(data[i : i + _XERIAL_BLOCK]))
            out += (struct.pack(">i", len(block)), block)
        return b"".join(out)
    if codec == Compression.LZ4:
        return bytes(cramjam.lz4.compress(data, level=level))
    if codec == Compression.ZSTD:
        return bytes(cramjam.zstd.compress(data, level=level))
    raise CorruptRecordError(f"unknown compression codec {int(codec)}")


def decompress(codec: int, data: bytes | memoryview, max_size: int | None = None) -> bytes:
    """Decompress a batch's records section.

    Raises CorruptRecordError on an unknown codec or bad data, RecordTooLargeError when ``max_size`` is
    given and the records would decompress to more than that.
    """
    try:
        if codec == Compression.NONE:
            out = bytes(data)
        elif codec == Compression.GZIP:
            out = _gzip_decompress(data, max_size)
        elif codec == Compression.SNAPPY:
            out = _snappy_decompress(bytes(data), max_size)
        elif codec == Compression.LZ4:
            out = _lz4_decompress(data, max_size)
        elif codec == Compression.ZSTD:
            out = _zstd_decompress(data, max_size)
        else:
            raise CorruptRecordError(f"unknown compression codec {codec}")
    except (zlib.error, zstandard.ZstdError, RuntimeError, cramjam.DecompressionError) as exc:
        raise CorruptRecordError(f"cannot decompress {Compression(codec).name} records: {exc}") from None
    if max_size is not None and len(out) > max_size:
        raise _too_large(codec, max_size)
    return out


def _too_large(codec: int, max_size: int) -> RecordTooLargeError:
    return RecordTooLargeError(f"{Compression(codec).name} records decompress to more than {max_size} bytes")


def _room(max_size: int | None, have: int) -> int:
    """How many more bytes to ask a decompressor for: one past the limit, so "more" is detectable."""
    return -1 if max_size is None else max_size - have + 1


def _gzip_decompress(data: bytes | memoryview, max_size: int | None) -> bytes:
    out = bytearray()
    rest = bytes(data)
    while True:
        d = zlib.decompressobj(_ZLIB_AUTO_HEADER)
        room = _room(max_size, len(out))
        out += d.decompress(rest, 0 if room < 0 else room)
        if max_size is not None and len(out) > max_size:
            raise _too_large(Compression.GZIP, max_size)
        if not d.eof:
            raise CorruptRecordError("truncated GZIP records")
        rest = d.unused_data
        # GZIPInputStream reads concatenated members and stops at anything that is not one.
        if not rest.startswith(_GZIP_MAGIC):
            return bytes(out)


def _lz4_decompress(data: bytes | memoryview, max_size: int | None) -> bytes:
    out = bytearray()
    rest = bytes(data)
    while rest:
        d = lz4.frame.LZ4FrameDecompressor()
        out += d.decompress(rest, max_length=_room(max_size, len(out)))
        if max_size is not None and len(out) > max_size:
            raise _too_large(Compression.LZ4, max_size)
        if not d.eof:
            raise CorruptRecordError("truncated LZ4 records")
        rest = d.unused_data
    return bytes(out)


def _zstd_decompress(data: bytes | memoryview, max_size: int | None) -> bytes:
    reader = zstandard.ZstdDecompressor().stream_reader(bytes(data), read_across_frames=True)
    if max_size is None:
        return bytes(reader.readall())
    out = bytearray()
    while len(out) <= max_size:
        chunk = reader.read(max_size - len(out) + 1)
        if not chunk:
            break
        out += chunk
    return bytes(out)


def _snappy_block(block: bytes, max_size: int | None, have: int) -> bytes:
    if max_size is not None and cramjam.snappy.decompress_raw_len(block) > max_size - have:
        raise _too_large(Compression.SNAPPY, max_size)
    return bytes(cramjam.snappy.decompress_raw(block))


def _snappy_decompress(data: bytes, max_size: int | None) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        return _snappy_block(data, max_size, 0)
    pos, out, have = 16, [], 0
    while pos < len(data):
        if pos + 4 > len(data):
            raise CorruptRecordError("truncated xerial snappy block header")
        (n,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if n < 0 or pos + n > len(data):
            raise CorruptRecordError("truncated xerial snappy block")
        block = _snappy_block(data[pos : pos + n], max_size, have)
        have += len(block)
        out.append(block)
        pos += n
    return b"".join(out)
