"""The segments of one partition, sorted by base offset (Kafka's LogSegments).

Mutated only under the owning log's lock; readers iterate over a snapshot list, so a reader in another
thread sees either the old or the new set of segments, never a half-updated one.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator

from ebb_broker.log.segment import Segment


class Segments:
    """Base offset -> segment, in offset order."""

    def __init__(self) -> None:
        self._bases: list[int] = []
        self._segs: list[Segment] = []

    def add(self, segment: Segment) -> None:
        """Add or replace the segment with this base offset."""
        i = bisect_right(self._bases, segment.base_offset)
        if i and self._bases[i - 1] == segment.base_offset:
            self._segs = [*self._segs[: i - 1], segment, *self._segs[i:]]
            return
        self._bases = [*self._bases[:i], segment.base_offset, *self._bases[i:]]
        self._segs = [*self._segs[:i], segment, *self._segs[i:]]

    def remove(self, base_offset: int) -> None:
        i = bisect_right(self._bases, base_offset) - 1
        if i >= 0 and self._bases[i] == base_offset:
            self._bases = self._bases[:i] + self._bases[i + 1 :]
            self._segs = self._segs[:i] + self._segs[i + 1 :]

    def floor(self, offset: int) -> Segment | None:
        """The segment holding ``offset``: the last one with base offset <= offset."""
        i = bisect_right(self._bases, offset) - 1
        return self._segs[i] if i >= 0 else None

    def higher(self, base_offset: int) -> Segment | None:
        """The segment after the one with ``base_offset``."""
        i = bisect_right(self._bases, base_offset)
        return self._segs[i] if i < len(self._segs) else None

    def from_offset(self, offset: int) -> list[Segment]:
        """The segment holding ``offset`` and every later one."""
        i = max(bisect_right(self._bases, offset) - 1, 0)
        return self._segs[i:]

    def get(self, base_offset: int) -> Segment | None:
        seg = self.floor(base_offset)
        return seg if seg is not None and seg.base_offset == base_offset else None

    @property
    def first(self) -> Segment:
        return self._segs[0]

    @property
    def last(self) -> Segment:
        return self._segs[-1]

    def snapshot(self) -> list[Segment]:
        return self._segs

    def __len__(self) -> int:
        return len(self._segs)

    def __iter__(self) -> Iterator[Segment]:
        return iter(self._segs)

    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._segs)
