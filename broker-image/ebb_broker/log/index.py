"""What the offset and time indexes share (Kafka's AbstractIndex): a file of fixed-size entries.

Ebb keeps the entries in memory for bisecting and appends them to the file through the OS page cache,
instead of Kafka's preallocated mmap: the file always holds exactly the valid entries, which is what Kafka
leaves after trimming on roll, so Kafka's tools read it. Indexes are not checksummed; a file that fails its
sanity check raises CorruptIndexError and recovery rebuilds it from the .log. Not thread-safe: the owning
segment's log serialises access.
"""

from __future__ import annotations

import os
from pathlib import Path

from ebb_broker.log.errors import CorruptIndexError
from ebb_broker.log.file_handles import LazyFile


class IndexFile:
    """A file of ``entry_size``-byte entries, capped at ``max_index_size`` bytes (segment.index.bytes)."""

    entry_size = 0

    def __init__(self, path: Path, base_offset: int, max_index_size: int) -> None:
        self.base_offset = base_offset
        self.max_entries = max(1, max_index_size // self.entry_size)
        # Opened on demand through the process's bounded descriptor cache (file_handles): the entries
        # live in memory, so the file is touched only to append, truncate and flush.
        self._file = LazyFile(path)
        with self._file:
            pass  # creates the file now, as Kafka does when a segment is created
        self._entries = 0

    @property
    def path(self) -> Path:
        return self._file.path

    def _read_all(self) -> bytes:
        with self._file as fd:
            size = os.fstat(fd).st_size
            if size % self.entry_size:
                raise CorruptIndexError(f"{self.path}: size {size} is not a multiple of {self.entry_size}")
            data = os.pread(fd, size, 0)
        self._entries = size // self.entry_size
        return data

    def _write_entry(self, raw: bytes) -> None:
        with self._file as fd:
            os.pwrite(fd, raw, self._entries * self.entry_size)
        self._entries += 1

    def _truncate_entries(self, n: int) -> None:
        with self._file as fd:
            os.ftruncate(fd, n * self.entry_size)
        self._entries = n

    @property
    def entries(self) -> int:
        return self._entries

    def is_full(self) -> bool:
        return self._entries >= self.max_entries

    def size_in_bytes(self) -> int:
        return self._entries * self.entry_size

    def reset(self) -> None:
        """Drop every entry (before a rebuild)."""
        self._truncate_entries(0)

    def flush(self) -> None:
        with self._file as fd:
            os.fsync(fd)

    def close(self) -> None:
        self._file.close()

    def rename_to(self, path: Path) -> None:
        self._file.rename(path)

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)
