"""LocalLog: the segments of one partition on disk: roll, append, flush, delete, swap (Kafka's
LocalLogTest, restated). Offsets, high watermark and producers are Log's and are tested there."""

from __future__ import annotations

from pathlib import Path

import pytest

from ebb_broker.log import files
from ebb_broker.log.local_log import LocalLog
from ebb_broker.log.log_config import LogConfig
from ebb_broker.log.records import with_offset
from ebb_broker.log.segment import BatchInfo, Segment
from ebb_broker.log.segments import Segments
from ebb_formats.record_batch import read_header
from tests.unit.broker.log.log_helpers import Clock, batch


class DeleteLater:
    """A scheduler that records what LocalLog hands over for deletion (file.delete.delay.ms)."""

    def __init__(self) -> None:
        self.scheduled: list[tuple[list[Path], int]] = []

    def __call__(self, paths: list[Path], delay_ms: int) -> None:
        self.scheduled.append((paths, delay_ms))


@pytest.fixture
def scheduler() -> DeleteLater:
    return DeleteLater()


@pytest.fixture
def local(tmp_path: Path, scheduler: DeleteLater) -> LocalLog:
    config = LogConfig.model_validate({"file.delete.delay.ms": 60_000})
    clock = Clock()
    segs = Segments()
    lg = LocalLog(
        tmp_path, config, segs, next_offset=0, recovery_point=0, clock=clock, schedule_delete=scheduler
    )
    segs.add(lg.new_segment(0))
    return lg


def _append(lg: LocalLog, *values: bytes) -> None:
    raw = with_offset(batch(*values, key=b"k"), lg.next_offset)
    h = read_header(raw)
    lg.append([raw], [BatchInfo(len(raw), h.last_offset, h.max_timestamp)])


def test_append_moves_the_next_offset(local: LocalLog) -> None:
    _append(local, b"a", b"b", b"c")
    assert local.next_offset == 3 and local.active.size > 0


def test_roll_starts_a_segment_at_the_log_end_and_is_a_no_op_when_empty(local: LocalLog) -> None:
    """testRollEmptyActiveSegment / testRollSegmentThatAlreadyExists."""
    assert local.roll() is local.active and len(local.segments) == 1
    _append(local, b"a", b"b")
    rolled = local.roll()
    assert rolled.base_offset == 2 and [s.base_offset for s in local.segments] == [0, 2]
    assert files.segment_file(local.directory, 2, files.LOG_SUFFIX).exists()
    assert local.roll() is rolled, "a second roll at the same end adds nothing"


def test_flush_moves_the_recovery_point_to_the_log_end(local: LocalLog) -> None:
    _append(local, b"a")
    local.roll()
    _append(local, b"b", b"c")
    assert local.recovery_point == 0
    local.flush()
    assert local.recovery_point == 3


def test_deleted_segments_are_renamed_then_handed_to_the_scheduler(
    local: LocalLog, scheduler: DeleteLater
) -> None:
    """Kafka renames to .deleted at once (readers holding the file keep it) and removes it after
    file.delete.delay.ms."""
    _append(local, b"a")
    old = local.active
    local.roll()
    renamed = local.remove_and_delete([old])
    assert [s.base_offset for s in local.segments] == [1]
    assert renamed and all(p.name.endswith(files.DELETED) and p.exists() for p in renamed)
    assert not files.segment_file(local.directory, 0, files.LOG_SUFFIX).exists()
    assert scheduler.scheduled == [(renamed, 60_000)]


def test_replace_segments_swaps_the_cleaned_segment_in(local: LocalLog, scheduler: DeleteLater) -> None:
    """The final state of Kafka's replaceSegments: one segment under the first old base, the old
    files scheduled for deletion, no .cleaned or .swap left (crashes between steps: test_log_loader)."""
    _append(local, b"a")
    local.roll()
    _append(local, b"b")
    first, second = local.segments.snapshot()[:2]
    local.roll()
    cleaned = Segment(local.directory, 0, index_interval_bytes=4096, max_index_size=1 << 20,
                      created_ms=0, temp=files.CLEANED)  # fmt: skip
    raw = with_offset(batch(b"b", key=b"k"), 1)
    h = read_header(raw)
    cleaned.append([raw], [BatchInfo(len(raw), h.last_offset, h.max_timestamp)])
    local.replace_segments(cleaned, [first, second])
    assert [s.base_offset for s in local.segments] == [0, 2] and local.segments.first is cleaned
    names = sorted(p.name for p in local.directory.iterdir())
    assert not any(n.endswith((files.CLEANED, files.SWAP)) for n in names)
    ((deleted, delay),) = scheduler.scheduled
    assert delay == 60_000 and {p.name for p in deleted} >= {
        "00000000000000000000.log.deleted",
        "00000000000000000001.log.deleted",
    }
