"""Kafka's variable-length integers, and the compact strings and tagged fields of flexible versions.

Two encodings, both 7 bits per byte with the high bit set on every byte but the last (protobuf's):
- zig-zag varints and varlongs (Kafka's ByteUtils.readVarint/readVarlong): the lengths, deltas and
  counts inside a v2 record batch; -1 is a null key, value or header value.
- unsigned varints (ByteUtils.readUnsignedVarint): the flexible protocol and record versions (KIP-482),
  where a compact string, bytes or array has its length + 1 in front (0: null) and every struct ends with
  a tagged-field section (a count, then per field a tag, a size and that many bytes).

Readers take a buffer and a position and return (value, next position). A buffer that ends inside a
varint raises IndexError, which the record walks of the broker catch once around their loop (they are
its hot paths and inline the one- and two-byte cases themselves); `VarintError` is a varint longer than a
varlong's 10 bytes.
"""

from __future__ import annotations

# 10 bytes: a varlong's longest (Kafka refuses longer ones).
_MAX_SHIFT = 63


class VarintError(ValueError):
    """A varint longer than 10 bytes (no Kafka writer makes one)."""


def read_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """A zig-zag varint or varlong at ``pos``: (value, next position)."""
    b = buf[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    result, shift = b & 0x7F, 7
    while True:
        pos += 1
        b = buf[pos]
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos + 1
        shift += 7
        if shift > _MAX_SHIFT:
            raise VarintError("varint is too long")


def read_uvarint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """An unsigned varint at ``pos``: (value, next position)."""
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    result, shift = b & 0x7F, 7
    while True:
        pos += 1
        b = buf[pos]
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos + 1
        shift += 7
        if shift > _MAX_SHIFT:
            raise VarintError("varint is too long")


def write_varint(out: bytearray, value: int) -> None:
    """Append ``value`` as a zig-zag varlong (a varint's bytes are the same for 32-bit values)."""
    v = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def write_uvarint(out: bytearray, value: int) -> None:
    """Append ``value`` (>= 0) as an unsigned varint."""
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def uvarint(value: int) -> bytes:
    """``value`` (>= 0) as an unsigned varint."""
    out = bytearray()
    write_uvarint(out, value)
    return bytes(out)


# -- flexible versions (KIP-482) -------------------------------------------------------------------------

NO_TAGS = b"\x00"  # an empty tagged-field section


def compact_length(n: int | None) -> bytes:
    """A compact array's, string's or bytes' length prefix: n + 1, 0 for null."""
    return uvarint(0 if n is None else n + 1)


def compact_string(value: str | None) -> bytes:
    if value is None:
        return b"\x00"
    data = value.encode()
    return compact_length(len(data)) + data


def read_compact_length(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """A compact length at ``pos``: (n, next position), n = -1 for null."""
    n, pos = read_uvarint(buf, pos)
    return n - 1, pos


def skip_tagged_fields(buf: bytes | bytearray | memoryview, pos: int) -> int:
    """The position after the tagged-field section at ``pos``; unknown tags are skipped, as KIP-482 asks.
    IndexError when the section runs past the buffer."""
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        _tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        pos += size
    if pos > len(buf):
        raise IndexError("tagged fields run past the buffer")
    return pos
