"""Segment: append, sparse indexing, reads, timestamps and recovery (Kafka's LogSegmentTest, restated)."""

from __future__ import annotations

import os
from pathlib import Path

from ebb_broker.log.records import with_offset
from ebb_broker.log.segment import BatchInfo, Segment
from ebb_formats.record_batch import read_header
from tests.unit.broker.log.log_helpers import T0, batch


def _segment(tmp_path: Path, base: int = 40, interval: int = 1) -> Segment:
    return Segment(tmp_path, base, index_interval_bytes=interval, max_index_size=1 << 20, created_ms=T0)


def _append(seg: Segment, offset: int, *values: bytes, ts: int = T0) -> int:
    raw = with_offset(batch(*values, key=b"k", ts=ts), offset)
    h = read_header(raw)
    seg.append([raw], [BatchInfo(len(raw), h.last_offset, h.max_timestamp)])
    return h.next_offset


def test_read_after_last_returns_none(tmp_path: Path) -> None:
    seg = _segment(tmp_path)
    nxt = _append(seg, 40, b"a", b"b")
    assert seg.read(nxt, 1000) is None


def test_read_from_gap_starts_at_next_batch(tmp_path: Path) -> None:
    seg = _segment(tmp_path)
    _append(seg, 40, b"a")
    first_end = seg.size
    _append(seg, 50, b"b")  # offsets 41..49 were compacted away
    pos, length = seg.read(45, 10_000)  # type: ignore[misc]
    assert pos == first_end and length == seg.size - first_end


def test_read_returns_at_least_one_batch_even_when_max_size_small(tmp_path: Path) -> None:
    seg = _segment(tmp_path)
    _append(seg, 40, b"x" * 500)
    pos, length = seg.read(40, 10)  # type: ignore[misc]
    assert (pos, length) == (0, seg.size)


def test_sparse_index_every_interval_bytes(tmp_path: Path) -> None:
    seg = _segment(tmp_path, interval=1000)
    offset = 40
    for _ in range(30):
        offset = _append(seg, offset, b"v" * 200)  # ~270 bytes per batch
    assert 5 <= seg.offset_index.entries <= 10
    for target in range(40, offset):
        pos, h = seg.translate_offset(target)  # type: ignore[misc]
        assert h.base_offset <= target <= h.last_offset
        assert read_header(os.pread(os.open(seg.log_path, os.O_RDONLY), 61, pos)).base_offset == h.base_offset


def test_find_offset_by_timestamp(tmp_path: Path) -> None:
    seg = _segment(tmp_path)
    offset = 40
    for i in range(10):
        offset = _append(seg, offset, b"a", b"b", ts=T0 + i * 100)
    assert seg.find_offset_by_timestamp(T0 + 350, 0) == (48, T0 + 400)
    assert seg.find_offset_by_timestamp(T0 - 5, 0) == (40, T0)
    assert seg.find_offset_by_timestamp(T0 + 10_000, 0) is None


def test_recovery_truncates_corrupt_message_and_fixes_index(tmp_path: Path) -> None:
    seg = _segment(tmp_path)
    offset = 40
    for _ in range(10):
        offset = _append(seg, offset, b"payload")
    good_size = seg.size
    pos, _h = seg.translate_offset(45)  # type: ignore[misc]
    seg.close()
    with open(seg.log_path, "r+b") as f:  # flip a byte inside batch 45's records
        f.seek(pos + 70)
        b = f.read(1)
        f.seek(pos + 70)
        f.write(bytes([b[0] ^ 0xFF]))
    with open(seg.offset_index.path, "ab") as f:
        f.write(b"\x7f" * 13)  # garbage in the index too
    again = _segment(tmp_path)
    truncated = again.load(recover=True)
    assert truncated == good_size - pos
    assert again.next_offset == 45 and again.size == pos
    assert again.translate_offset(44)[1].base_offset == 44  # type: ignore[index]
    assert all(o < 45 for o in [again.offset_index.last_entry()[0]])
