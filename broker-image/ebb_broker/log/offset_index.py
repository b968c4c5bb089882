"""The sparse offset index (Kafka's OffsetIndex): 8-byte entries ``int32 offset - base, int32 position``.

An entry is added every ``index.interval.bytes`` of log (per batch); a lookup answers the largest entry at
or below the target, or ``(base offset, 0)``, and the reader scans batches forward from there.
"""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_right
from pathlib import Path

from ebb_broker.log.errors import CorruptIndexError
from ebb_broker.log.index import IndexFile

_ENTRY = struct.Struct(">ii")


class OffsetIndex(IndexFile):
    """Offset -> file position of a batch, sparse. Not thread-safe (the log serialises access)."""

    entry_size = 8

    def __init__(self, path: Path, base_offset: int, max_index_size: int) -> None:
        super().__init__(path, base_offset, max_index_size)
        data = self._read_all()
        pairs = array("i", data)
        if pairs.itemsize != 4:
            raise RuntimeError("array('i') must be 32-bit")
        if struct.pack("=i", 1) != struct.pack(">i", 1):
            pairs.byteswap()
        self._rel = array("i", pairs[0::2])
        self._pos = array("i", pairs[1::2])

    def sanity_check(self, log_size: int) -> None:
        """Kafka's sanityCheck plus monotonicity: entries must rise and point inside the .log."""
        rel, pos = self._rel, self._pos
        for i in range(len(rel)):
            if rel[i] < 0 or pos[i] < 0 or pos[i] >= max(log_size, 1):
                raise CorruptIndexError(f"{self.path}: entry {i} ({rel[i]}, {pos[i]}) is out of range")
            if i and (rel[i] <= rel[i - 1] or pos[i] <= pos[i - 1]):
                raise CorruptIndexError(f"{self.path}: entry {i} does not increase")

    def append(self, offset: int, position: int) -> None:
        rel = offset - self.base_offset
        if self._rel and rel <= self._rel[-1]:
            raise ValueError(f"offset index entry {offset} is not above the last one")
        self._write_entry(_ENTRY.pack(rel, position))
        self._rel.append(rel)
        self._pos.append(position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """The largest entry with offset <= ``offset``, else ``(base offset, 0)``."""
        i = bisect_right(self._rel, offset - self.base_offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + self._rel[i], self._pos[i]

    def last_entry(self) -> tuple[int, int]:
        if not self._rel:
            return self.base_offset, 0
        return self.base_offset + self._rel[-1], self._pos[-1]

    def truncate_to(self, offset: int) -> None:
        """Remove every entry at or above ``offset``."""
        n = bisect_right(self._rel, offset - self.base_offset - 1)
        del self._rel[n:], self._pos[n:]
        self._truncate_entries(n)

    def reset(self) -> None:
        super().reset()
        self._rel, self._pos = array("i"), array("i")
