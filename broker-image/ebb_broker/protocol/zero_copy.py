"""Fetch responses whose record bytes go from segment files to the socket with os.sendfile.

The codec encodes the whole response in memory, so each partition's records are encoded as a
16-byte placeholder (a random tag) and `bytes.find` locates it in the encoded frame; `split` then
replaces the placeholder's length prefix with the records' real one (a uvarint of length + 1 in
flexible versions, an int32 before) and corrects the frame size. The server writes the bytes between
placeholders and, for each placeholder, `loop.sendfile()`s the engine's FetchSlices (os.sendfile
under the hood), so segment bytes never pass through Python. (A placeholder as long as the records,
as before, cost four copies of every megabyte fetched: about two thirds of the broker's CPU per
fetch.) Transports without sendfile support get the slices read into memory instead.

The descriptors are the segments' own, held in the process's bounded cache (log.file_handles) until the
response is written: a response opens no file, however many partitions it names or repeats.
"""

from __future__ import annotations

import asyncio
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any, Protocol, cast

from ebb_formats.varint import uvarint

_TAG_BYTES = 16
# Records shorter than this are encoded inline: not worth a placeholder and a sendfile call.
_INLINE_BELOW = 64
# How much is written between two progress reports (write_parts).
_CHUNK = 1 << 20
_INT32 = struct.Struct(">i")


class HeldFile(Protocol):
    """A segment file in the process's descriptor cache (log.file_handles.LazyFile)."""

    def hold(self) -> int | None: ...
    def release(self) -> None: ...


class Slice(Protocol):
    """A byte range of a segment file (the engine's FetchSlice), read-only."""

    @property
    def position(self) -> int: ...
    @property
    def length(self) -> int: ...
    @property
    def file(self) -> HeldFile: ...
    def read_bytes(self) -> bytes: ...


@dataclass(frozen=True)
class _HeldSlice:
    """A slice sent from its segment's own descriptor, held until the response is written."""

    file: HeldFile
    fd: int
    position: int
    length: int


Chunk = _HeldSlice | bytes


def _take(s: Slice) -> Chunk:
    """Hold the slice's segment file, or read its bytes when held files already fill their share of the
    descriptor cache or retention renamed the segment since the read (read_bytes finds the .deleted)."""
    try:
        fd = s.file.hold()
    except FileNotFoundError:
        fd = None
    return _HeldSlice(s.file, fd, s.position, s.length) if fd is not None else s.read_bytes()


class FileRecords:
    """Records of one partition: the placeholder put into the response, and where the bytes are.

    The slices' segment files are held at once, while the engine's read is current: a held descriptor
    survives the retention pass or the cleaner renaming or deleting the segment before the response is
    written (Kafka keeps its FileRecords open for the same reason). They are the segment's own
    descriptors (log.file_handles), shared by every response and every partition a request repeats, so a
    response costs no descriptor of its own; ``close()`` gives them back.
    """

    def __init__(self, slices: list[Slice]) -> None:
        self.tag = os.urandom(_TAG_BYTES)
        self.chunks: list[Chunk] = []
        try:
            for s in slices:
                self.chunks.append(_take(s))
        except BaseException:
            self.close()
            raise
        self.length = sum(c.length if isinstance(c, _HeldSlice) else len(c) for c in self.chunks)
        if self.inline:  # encoded into the response itself: nothing to hold until it is written
            data = self.read()
            self.close()
            self.chunks = [data]

    def close(self) -> None:
        chunks, self.chunks = self.chunks, []
        for c in chunks:
            if isinstance(c, _HeldSlice):
                c.file.release()

    @property
    def inline(self) -> bool:
        return self.length < _INLINE_BELOW

    def placeholder(self) -> bytes:
        """What the codec encodes as this partition's records: the records themselves when short,
        else the tag, whose length prefix `split` corrects."""
        return self.read() if self.inline else self.tag

    def read(self) -> bytes:
        out = bytearray()
        for c in self.chunks:
            out += os.pread(c.fd, c.length, c.position) if isinstance(c, _HeldSlice) else c
        return bytes(out)


class _Descriptor:
    """What loop.sendfile() needs of a file, over a held descriptor it must not close. asyncio lseeks it
    after sending: harmless, every use of segment descriptors is positional (pread, pwritev)."""

    mode = "rb"

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._pos = 0

    def fileno(self) -> int:
        return self._fd

    def seek(self, pos: int, whence: int = 0) -> int:
        self._pos = pos
        return pos

    def readinto(self, buf: memoryview) -> int:  # the fallback's read, for transports without sendfile
        n = os.preadv(self._fd, [buf], self._pos)
        self._pos += n
        return n


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


async def write_parts(
    writer: asyncio.StreamWriter, parts: list[Part], progress: Callable[[], None] = lambda: None
) -> None:
    """Write parts in order; file parts go through loop.sendfile (os.sendfile on plain TCP).

    ``progress`` is called each time up to _CHUNK bytes went out, so connections.max.idle.ms counts a
    client that stops reading as idle and one that reads a large response slowly as active, as Kafka's
    Selector does.

    On TLS the bytes must pass through OpenSSL anyway: the slices are read at once (page cache, one pread
    per slice) and written with the rest, instead of asyncio's sendfile fallback, which reads each
    256 KiB chunk through the default thread pool."""
    loop = asyncio.get_running_loop()
    tls = writer.get_extra_info("ssl_object") is not None
    try:
        for part in parts:
            if isinstance(part, bytes | bytearray):
                await _write(writer, part, progress)
                continue
            if tls:
                await _write(writer, part.read(), progress)
                continue
            await writer.drain()
            for chunk in part.chunks:
                if not isinstance(chunk, _HeldSlice):
                    await _write(writer, chunk, progress)
                    continue
                end = chunk.position + chunk.length
                for pos in range(chunk.position, end, _CHUNK):
                    # Falls back to read+send by itself when the transport cannot sendfile.
                    source = cast("IO[bytes]", _Descriptor(chunk.fd))
                    await loop.sendfile(writer.transport, source, pos, min(_CHUNK, end - pos), fallback=True)
                    progress()
        await writer.drain()
        progress()
    finally:
        close_parts(parts)


def close_parts(parts: list[Part]) -> None:
    """Give back what the file parts hold (again is harmless: write_parts does it when done)."""
    for part in parts:
        if isinstance(part, FileRecords):
            part.close()


async def _write(writer: asyncio.StreamWriter, data: bytes | bytearray, progress: Callable[[], None]) -> None:
    """Buffer small data (drained with what follows); send large data _CHUNK by _CHUNK."""
    if len(data) <= _CHUNK:
        if data:
            writer.write(data)
        return
    view = memoryview(data)
    for pos in range(0, len(view), _CHUNK):
        writer.write(view[pos : pos + _CHUNK])
        await writer.drain()
        progress()


def part_length(part: Part) -> int:
    return len(part) if isinstance(part, bytes | bytearray) else part.length
