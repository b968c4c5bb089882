"""protocol.zero_copy: what a fetch response holds of the segment files, and when it lets go."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ebb_broker.log.file_handles import FileHandles, LazyFile
from ebb_broker.protocol.zero_copy import FileRecords


@dataclass(frozen=True)
class _Slice:
    path: Path
    position: int
    length: int
    file: LazyFile

    def read_bytes(self) -> bytes:
        return self.path.read_bytes()[self.position : self.position + self.length]


def _segment(tmp_path: Path, handles: FileHandles) -> LazyFile:
    f = LazyFile(tmp_path / "00000000000000000000.log", handles)
    with f as fd:
        os.pwrite(fd, bytes(range(200)), 0)
    return f


def test_records_hold_their_segment_until_closed(tmp_path: Path) -> None:
    handles = FileHandles(8)
    f = _segment(tmp_path, handles)
    records = [FileRecords([_Slice(f.path, 0, 100, f)]) for _ in range(3)]
    assert handles.held_count == 1  # three responses, one descriptor
    assert records[0].read() == bytes(range(100))
    for r in records:
        r.close()
    assert handles.held_count == 0


def test_short_records_are_read_at_once_and_hold_nothing(tmp_path: Path) -> None:
    """Encoded into the response itself, they are never written from the file: holding it would leak."""
    handles = FileHandles(8)
    f = _segment(tmp_path, handles)
    short = FileRecords([_Slice(f.path, 10, 20, f)])
    assert short.inline and short.placeholder() == bytes(range(10, 30))
    assert handles.held_count == 0


def test_past_half_the_cache_the_bytes_are_read_instead(tmp_path: Path) -> None:
    handles = FileHandles(2)
    files = [LazyFile(tmp_path / f"{i:020d}.log", handles) for i in range(2)]
    for i, f in enumerate(files):
        with f as fd:
            os.pwrite(fd, bytes([i]) * 100, 0)
    held = FileRecords([_Slice(files[0].path, 0, 100, files[0])])
    read = FileRecords([_Slice(files[1].path, 0, 100, files[1])])
    assert handles.held_count == 1
    assert held.read() == bytes([0]) * 100 and read.read() == bytes([1]) * 100
    held.close()
    read.close()
    assert handles.held_count == 0
