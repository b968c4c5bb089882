"""Fetch responses whose record bytes go from segment files to the socket with os.sendfile.

The codec encodes the whole response in memory, so each partition's records are encoded as a
16-byte placeholder (a random tag) and `bytes.find` locates it in the encoded frame; `split` then
replaces the placeholder's length prefix with the records' real one (a uvarint of length + 1 in
flexible versions, an int32 before) and corrects the frame size. The server writes the bytes between
placeholders and, for each placeholder, `loop.sendfile()`s the engine's FetchSlices (os.sendfile
under the hood), so segment bytes never pass through Python. (A placeholder as long as the records,
as before, cost four copies of every megabyte fetched: about two thirds of the broker's CPU per
fetch.) Transports without sendfile support get the slices read into memory instead.
"""

from __future__ import annotations

import asyncio
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from ebb_broker.protocol.encoded import uvarint

_TAG_BYTES = 16
# Records shorter than this are encoded inline: not worth a placeholder and a sendfile call.
_INLINE_BELOW = 64
_INT32 = struct.Struct(">i")


class Slice(Protocol):
    """A byte range of a file (the engine's FetchSlice), read-only."""

    @property
    def path(self) -> Path: ...
    @property
    def position(self) -> int: ...
    @property
    def length(self) -> int: ...


@dataclass
class FileRecords:
    """Records of one partition: the placeholder put into the response, and the file slices.

    The segment files are opened at once, while the engine's read is current: an open file
    survives the retention pass or the cleaner renaming or deleting the segment before the
    response is written (Kafka keeps its FileRecords open for the same reason).
    """

    slices: list[Slice]
    tag: bytes = field(default_factory=lambda: os.urandom(_TAG_BYTES))
    files: list[BinaryIO] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.files = [Path(s.path).open("rb") for s in self.slices]  # noqa: SIM115 (closed after the write)

    def close(self) -> None:
        for f in self.files:
            f.close()

    @property
    def length(self) -> int:
        return sum(s.length for s in self.slices)

    @property
    def inline(self) -> bool:
        return self.length < _INLINE_BELOW

    def placeholder(self) -> bytes:
        """What the codec encodes as this partition's records: the records themselves when short,
        else the tag, whose length prefix `split` corrects."""
        return self.read() if self.inline else self.tag

    def read(self) -> bytes:
        out = bytearray()
        for s, f in zip(self.slices, self.files, strict=True):
            out += os.pread(f.fileno(), s.length, s.position)
        return bytes(out)


@dataclass
class ZeroCopyResponse:
    """A response body plus the partitions whose records are still in segment files."""

    body: Any
    files: list[FileRecords]


Part = bytes | FileRecords


def _length_prefix(length: int, flexible: bool) -> bytes:
    """How the codec prefixes a records field: compact (uvarint length + 1) or int32."""
    return uvarint(length + 1) if flexible else _INT32.pack(length)


def split(encoded: bytes, files: list[FileRecords], *, flexible: bool) -> list[Part]:
    """Cut the framed response at each placeholder; the placeholders become file parts, with their
    length prefixes and the frame size made those of the real records."""
    parts: list[Part] = []
    pos = 0
    grown = 0
    tag_prefix = _length_prefix(_TAG_BYTES, flexible)
    for fr in files:
        if fr.inline:
            continue  # encoded inline by placeholder()
        at = encoded.find(fr.tag, pos)
        start = at - len(tag_prefix)
        if at < 0 or encoded[start:at] != tag_prefix:
            raise RuntimeError("fetch placeholder not found in the encoded response")
        prefix = _length_prefix(fr.length, flexible)
        parts.append(encoded[pos:start] + prefix)
        parts.append(fr)
        grown += len(prefix) - len(tag_prefix) + fr.length - _TAG_BYTES
        pos = at + _TAG_BYTES
    parts.append(encoded[pos:])
    first = parts[0]
    assert isinstance(first, bytes)
    (size,) = _INT32.unpack_from(first)
    parts[0] = _INT32.pack(size + grown) + first[4:]
    return parts


async def write_parts(writer: asyncio.StreamWriter, parts: list[Part]) -> None:
    """Write parts in order; file parts go through loop.sendfile (os.sendfile on plain TCP).

    On TLS the bytes must pass through OpenSSL anyway: the slices are read at once (page cache, one pread
    per slice) and written with the rest, instead of asyncio's sendfile fallback, which reads each
    256 KiB chunk through the default thread pool."""
    loop = asyncio.get_running_loop()
    tls = writer.get_extra_info("ssl_object") is not None
    try:
        for part in parts:
            if isinstance(part, bytes | bytearray):
                if part:
                    writer.write(part)
                continue
            if tls:
                writer.write(part.read())
                continue
            await writer.drain()
            for s, f in zip(part.slices, part.files, strict=True):
                if s.length > 0:
                    # Falls back to read+send by itself when the transport cannot sendfile.
                    await loop.sendfile(writer.transport, f, s.position, s.length, fallback=True)
        await writer.drain()
    finally:
        for part in parts:
            if isinstance(part, FileRecords):
                part.close()


def part_length(part: Part) -> int:
    return len(part) if isinstance(part, bytes | bytearray) else part.length
