"""Response bodies written straight to wire bytes, for the few answers where building and encoding the
generated codec's objects is the cost (OffsetFetch v8+). Each such encoder has a unit test that compares
its bytes with the codec's; the compact strings and varints they are made of are `ebb_formats.varint`'s."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ebb_formats.varint import NO_TAGS

INT32 = struct.Struct(">i")


@dataclass(frozen=True)
class EncodedBody:
    """A response body already encoded; the server adds the response header and the frame."""

    body: bytes
    flexible: bool

    def framed(self, correlation_id: int) -> bytes:
        """Header v1 (flexible: correlation id and tags) or v0, the body, and the size in front."""
        header = INT32.pack(correlation_id) + (NO_TAGS if self.flexible else b"")
        return INT32.pack(len(header) + len(self.body)) + header + self.body
