"""Fetch responses whose record bytes go from segment files to the socket with os.sendfile.

The codec encodes the whole response in memory, so each partition's records are first encoded
as a placeholder of the exact length (a random 16-byte tag, then zeros): the length prefixes and
the frame size come out right, and `bytes.find` locates each placeholder. The server then writes
the bytes between placeholders and, for each placeholder, `loop.sendfile()`s the engine's
FetchSlices (os.sendfile under the hood), so segment bytes never pass through Python.
Transports without sendfile support get the slices read into memory instead.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Protocol

_TAG_BYTES = 16


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

    def placeholder(self) -> bytes:
        n = self.length
        if n < _TAG_BYTES:
            return self.read()
        return self.tag + bytes(n - _TAG_BYTES)

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


def split(encoded: bytes, files: list[FileRecords]) -> list[Part]:
    """Cut the encoded frame at each placeholder; the placeholders become file parts."""
    parts: list[Part] = []
    pos = 0
    for fr in files:
        if fr.length < _TAG_BYTES:
            continue  # encoded inline by placeholder()
        at = encoded.find(fr.tag, pos)
        if at < 0:
            raise RuntimeError("fetch placeholder not found in the encoded response")
        parts.append(encoded[pos:at])
        parts.append(fr)
        pos = at + fr.length
    parts.append(encoded[pos:])
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
