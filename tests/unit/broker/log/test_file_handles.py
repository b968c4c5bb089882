"""file_handles: segment files open on demand within a bound, never closed while in use."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ebb_broker.log import file_handles
from ebb_broker.log.file_handles import FileHandles, LazyFile
from ebb_broker.log.log import Log
from ebb_broker.log.log_config import LogConfig
from tests.unit.broker.log.log_helpers import T0, batch, read_all


def test_files_open_lazily_within_the_capacity(tmp_path: Path) -> None:
    handles = FileHandles(3)
    files = [LazyFile(tmp_path / f"f{i}", handles) for i in range(10)]
    for i, f in enumerate(files):
        with f as fd:
            os.pwrite(fd, bytes([i]), 0)
        assert handles.open_count <= 3
    # Each file kept its own bytes, however often it was closed and opened again.
    for i, f in enumerate(files):
        with f as fd:
            assert os.pread(fd, 1, 0) == bytes([i])
    assert handles.open_count == 3


def test_a_pinned_file_is_never_closed_by_another_user(tmp_path: Path) -> None:
    handles = FileHandles(1)
    a, b = LazyFile(tmp_path / "a", handles), LazyFile(tmp_path / "b", handles)
    with a as fd_a:
        with b:
            pass  # over capacity while `a` is pinned: `a` stays open, the cache runs one over
        assert os.fstat(fd_a).st_size == 0
        os.pwrite(fd_a, b"x", 0)
    assert (tmp_path / "a").read_bytes() == b"x"


def test_a_removed_file_is_not_silently_recreated(tmp_path: Path) -> None:
    handles = FileHandles(1)
    f = LazyFile(tmp_path / "gone", handles)
    with f:
        pass
    f.close()
    (tmp_path / "gone").unlink()
    with pytest.raises(FileNotFoundError), f:
        pass


def test_a_log_with_more_segments_than_descriptors_still_reads_and_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small = FileHandles(4)
    monkeypatch.setattr(file_handles, "_DEFAULT", small)
    config = LogConfig.parse({"segment.bytes": "200"})
    lg = Log.open(tmp_path / "t-0", "t", 0, config, clock=lambda: T0)
    for i in range(20):
        lg.append(batch(f"value-{i:03d}".encode() * 10))
    assert len(lg.local.segments) >= 10  # 30+ files, four descriptors
    assert small.open_count <= 4
    lg.close()
    lg = Log.open(tmp_path / "t-0", "t", 0, config, clock=lambda: T0)
    assert lg.log_end_offset == 20
    assert [v for _o, _k, v in read_all(lg)] == [f"value-{i:03d}".encode() * 10 for i in range(20)]
    lg.close()


def test_a_held_file_outlives_close_until_released(tmp_path: Path) -> None:
    """A fetch response holds its segment's descriptor: retention closing and deleting the segment
    meanwhile leaves it readable until the response is written (released)."""
    handles = FileHandles(4)
    f = LazyFile(tmp_path / "segment", handles)
    with f as fd:
        os.pwrite(fd, b"records", 0)
    held = f.hold()
    assert held is not None and f.hold() == held  # the same descriptor, however often held
    f.close()
    (tmp_path / "segment").unlink()
    assert os.pread(held, 7, 0) == b"records"
    f.release()
    assert os.pread(held, 7, 0) == b"records"  # one hold left
    f.release()
    assert handles.open_count == 0
    with pytest.raises(OSError):
        os.fstat(held)


def test_held_files_take_at_most_half_the_capacity(tmp_path: Path) -> None:
    handles = FileHandles(4)
    files = [LazyFile(tmp_path / f"s{i}", handles) for i in range(3)]
    for f in files:
        with f:
            pass
    assert files[0].hold() is not None and files[1].hold() is not None
    assert files[2].hold() is None  # the caller reads the bytes instead
    assert files[0].hold() is not None  # already held: no new descriptor
    assert handles.held_count == 2
    for f in (files[0], files[0], files[1]):
        f.release()
    assert handles.held_count == 0 and files[2].hold() is not None
