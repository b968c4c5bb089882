"""The sparse time index (Kafka's TimeIndex): 12-byte entries ``int64 timestamp, int32 offset - base``.

An entry is written only when its timestamp exceeds the last one, so the file stays monotonic; a lookup
answers the last entry with timestamp <= target. The final entry of a segment is forced on roll/close so
the segment's largest timestamp survives a restart.
"""

from __future__ import annotations

import struct
from bisect import bisect_right
from pathlib import Path

from ebb_broker.log.errors import CorruptIndexError
from ebb_broker.log.index import IndexFile
from ebb_formats.record_batch import NO_TIMESTAMP

_ENTRY = struct.Struct(">qi")


class TimeIndex(IndexFile):
    """Timestamp -> offset, sparse and monotonic. Not thread-safe (the log serialises access)."""

    entry_size = 12

    def __init__(self, path: Path, base_offset: int, max_index_size: int) -> None:
        super().__init__(path, base_offset, max_index_size)
        data = self._read_all()
        self._ts: list[int] = []
        self._rel: list[int] = []
        for ts, rel in _ENTRY.iter_unpack(data):
            self._ts.append(ts)
            self._rel.append(rel)

    def sanity_check(self) -> None:
        ts, rel = self._ts, self._rel
        for i in range(len(ts)):
            if rel[i] < 0 or (i and (ts[i] <= ts[i - 1] or rel[i] < rel[i - 1])):
                raise CorruptIndexError(f"{self.path}: entry {i} ({ts[i]}, {rel[i]}) breaks monotonicity")

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Add ``(timestamp, offset)`` if the timestamp is above the last entry's."""
        rel = offset - self.base_offset
        if self._ts and (timestamp <= self._ts[-1] or rel < self._rel[-1]):
            return
        self._write_entry(_ENTRY.pack(timestamp, rel))
        self._ts.append(timestamp)
        self._rel.append(rel)

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """``(timestamp, offset)`` of the last entry with timestamp <= target, else (-1, base offset)."""
        i = bisect_right(self._ts, timestamp) - 1
        if i < 0:
            return NO_TIMESTAMP, self.base_offset
        return self._ts[i], self.base_offset + self._rel[i]

    def last_entry(self) -> tuple[int, int]:
        if not self._ts:
            return NO_TIMESTAMP, self.base_offset
        return self._ts[-1], self.base_offset + self._rel[-1]

    def truncate_to(self, offset: int) -> None:
        """Remove every entry at or above ``offset``."""
        rel = offset - self.base_offset
        n = len(self._rel)
        while n and self._rel[n - 1] >= rel:
            n -= 1
        del self._ts[n:], self._rel[n:]
        self._truncate_entries(n)

    def reset(self) -> None:
        super().reset()
        self._ts, self._rel = [], []
