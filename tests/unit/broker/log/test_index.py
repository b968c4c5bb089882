"""IndexFile, what the offset and time indexes share (Kafka's AbstractIndex): fixed-size entries in a file
that always holds exactly the valid entries."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from ebb_broker.log.errors import CorruptIndexError
from ebb_broker.log.index import IndexFile

_ENTRY = struct.Struct(">ii")


class PairIndex(IndexFile):
    """The smallest concrete index: 8-byte (relative offset, position) entries, like OffsetIndex."""

    entry_size = _ENTRY.size

    def add(self, relative: int, position: int) -> None:
        self._write_entry(_ENTRY.pack(relative, position))

    def load(self) -> list[tuple[int, int]]:
        data = self._read_all()
        return [_ENTRY.unpack_from(data, i) for i in range(0, len(data), self.entry_size)]


def test_entries_reach_the_file_and_are_read_back_after_reopening(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000100.index"
    idx = PairIndex(path, 100, max_index_size=1024)
    for i in range(5):
        idx.add(i, i * 100)
    idx.flush()
    idx.close()
    assert path.stat().st_size == 5 * 8, "no preallocation: the file holds exactly the entries"
    again = PairIndex(path, 100, max_index_size=1024)
    assert again.load() == [(i, i * 100) for i in range(5)] and again.entries == 5
    again.close()


def test_full_at_segment_index_bytes(tmp_path: Path) -> None:
    idx = PairIndex(tmp_path / "i.index", 0, max_index_size=8 * 3 + 7)  # room for 3 whole entries
    assert idx.max_entries == 3
    for i in range(3):
        assert not idx.is_full()
        idx.add(i, i)
    assert idx.is_full() and idx.size_in_bytes() == 24
    idx.close()


def test_a_size_that_is_not_a_multiple_of_the_entry_is_corrupt(tmp_path: Path) -> None:
    """Indexes carry no checksum: the sanity check makes recovery rebuild them from the .log."""
    path = tmp_path / "i.index"
    path.write_bytes(b"\x00" * 13)
    idx = PairIndex(path, 0, max_index_size=1024)
    with pytest.raises(CorruptIndexError, match="not a multiple of 8"):
        idx.load()
    idx.close()


def test_reset_rename_and_delete(tmp_path: Path) -> None:
    idx = PairIndex(tmp_path / "a.index", 0, max_index_size=1024)
    idx.add(1, 1)
    idx.reset()
    assert idx.entries == 0 and (tmp_path / "a.index").stat().st_size == 0
    idx.add(2, 2)
    idx.rename_to(tmp_path / "a.index.deleted")
    assert not (tmp_path / "a.index").exists() and (tmp_path / "a.index.deleted").stat().st_size == 8
    idx.delete()
    assert not (tmp_path / "a.index.deleted").exists()
    idx.close()  # closing twice is harmless
