"""Response bodies written straight to wire bytes, for the few answers where building and encoding the
generated codec's objects is the cost (OffsetFetch v8+). Each such encoder has a unit test that compares
its bytes with the codec's."""

from __future__ import annotations

import struct
from dataclasses import dataclass

INT32 = struct.Struct(">i")
NO_TAGS = b"\x00"  # an empty tagged-field section (flexible versions)


@dataclass(frozen=True)
class EncodedBody:
    """A response body already encoded; the server adds the response header and the frame."""

    body: bytes
    flexible: bool

    def framed(self, correlation_id: int) -> bytes:
        """Header v1 (flexible: correlation id and tags) or v0, the body, and the size in front."""
        header = INT32.pack(correlation_id) + (NO_TAGS if self.flexible else b"")
        return INT32.pack(len(header) + len(self.body)) + header + self.body


def uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def compact_length(n: int | None) -> bytes:
    """A compact array's or string's length prefix: n + 1, 0 for null."""
    return uvarint(0 if n is None else n + 1)


def compact_string(value: str | None) -> bytes:
    if value is None:
        return b"\x00"
    data = value.encode()
    return compact_length(len(data)) + data
