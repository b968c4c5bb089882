"""Segments: the sorted base-offset map of one partition (Kafka's LogSegmentsTest, restated)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ebb_broker.log.segment import Segment
from ebb_broker.log.segments import Segments
from tests.unit.broker.log.log_helpers import T0


def _seg(tmp_path: Path, base: int) -> Segment:
    return Segment(tmp_path, base, index_interval_bytes=4096, max_index_size=1 << 20, created_ms=T0)


@pytest.fixture
def segs(tmp_path: Path) -> Segments:
    s = Segments()
    for base in (20, 0, 10):  # added out of order
        s.add(_seg(tmp_path, base))
    return s


def test_kept_in_offset_order_whatever_the_insertion_order(segs: Segments) -> None:
    assert [s.base_offset for s in segs] == [0, 10, 20]
    assert (segs.first.base_offset, segs.last.base_offset, len(segs)) == (0, 20, 3)


def test_floor_finds_the_segment_holding_an_offset(segs: Segments) -> None:
    """testSegmentAccess / floorSegment: the last segment whose base is <= the offset."""
    assert segs.floor(0).base_offset == 0  # type: ignore[union-attr]
    assert segs.floor(15).base_offset == 10  # type: ignore[union-attr]
    assert segs.floor(1_000).base_offset == 20  # type: ignore[union-attr]
    assert segs.floor(-1) is None


def test_higher_and_get_and_from_offset(segs: Segments) -> None:
    assert segs.higher(0).base_offset == 10  # type: ignore[union-attr]
    assert segs.higher(20) is None
    assert segs.get(10) is not None and segs.get(10).base_offset == 10  # type: ignore[union-attr]
    assert segs.get(11) is None, "get() wants an exact base offset, not an offset inside a segment"
    assert [s.base_offset for s in segs.from_offset(15)] == [10, 20]
    assert [s.base_offset for s in segs.from_offset(-5)] == [0, 10, 20]


def test_add_with_an_existing_base_replaces_it(tmp_path: Path, segs: Segments) -> None:
    (tmp_path / "cleaned").mkdir()
    replacement = _seg(tmp_path / "cleaned", 10)
    segs.add(replacement)
    assert len(segs) == 3 and segs.get(10) is replacement


def test_remove_drops_only_an_exact_base(segs: Segments) -> None:
    segs.remove(15)  # no segment starts there: nothing happens
    assert len(segs) == 3
    segs.remove(10)
    assert [s.base_offset for s in segs] == [0, 20]


def test_a_snapshot_is_not_changed_by_later_adds_and_removes(tmp_path: Path, segs: Segments) -> None:
    """Readers in other threads iterate over a snapshot while the log mutates the map under its lock."""
    before = segs.snapshot()
    segs.add(_seg(tmp_path, 30))
    segs.remove(0)
    assert [s.base_offset for s in before] == [0, 10, 20]
    assert [s.base_offset for s in segs.snapshot()] == [10, 20, 30]


def test_size_is_the_sum_of_the_segments(tmp_path: Path) -> None:
    from ebb_broker.log.records import with_offset
    from ebb_broker.log.segment import BatchInfo
    from ebb_formats.record_batch import read_header
    from tests.unit.broker.log.log_helpers import batch

    segs = Segments()
    for base in (0, 5):
        seg = _seg(tmp_path, base)
        raw = with_offset(batch(b"v" * 100, key=b"k"), base)
        h = read_header(raw)
        seg.append([raw], [BatchInfo(len(raw), h.last_offset, h.max_timestamp)])
        segs.add(seg)
    assert segs.size_in_bytes() == sum(s.size for s in segs) > 0
