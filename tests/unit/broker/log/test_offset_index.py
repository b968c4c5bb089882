"""OffsetIndex: sparse lookups, truncation and sanity checks (Kafka's OffsetIndexTest, restated)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ebb_broker.log.errors import CorruptIndexError
from ebb_broker.log.offset_index import OffsetIndex


def test_lookup_returns_largest_entry_at_or_below(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "00000000000000000100.index", 100, 1024)
    for off, pos in [(105, 4096), (110, 8200), (130, 16400)]:
        idx.append(off, pos)
    assert idx.lookup(99) == (100, 0)
    assert idx.lookup(104) == (100, 0)
    assert idx.lookup(105) == (105, 4096)
    assert idx.lookup(129) == (110, 8200)
    assert idx.lookup(10**9) == (130, 16400)


def test_file_format_and_reopen(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000100.index"
    idx = OffsetIndex(path, 100, 1024)
    idx.append(105, 4096)
    idx.close()
    assert path.read_bytes() == (5).to_bytes(4, "big") + (4096).to_bytes(4, "big")
    again = OffsetIndex(path, 100, 1024)
    assert again.lookup(200) == (105, 4096)


def test_appends_must_increase_and_full(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "0.index", 0, 16)  # room for two entries
    idx.append(1, 10)
    with pytest.raises(ValueError, match="not above"):
        idx.append(1, 20)
    idx.append(2, 20)
    assert idx.is_full()


def test_truncate_to_removes_entries_at_or_above(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "0.index", 0, 1024)
    for i in range(1, 6):
        idx.append(i * 10, i * 100)
    idx.truncate_to(30)
    assert idx.entries == 2 and idx.lookup(100) == (20, 200)
    assert (tmp_path / "0.index").stat().st_size == 16


def test_torn_or_garbage_index_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "0.index"
    path.write_bytes(b"\x00" * 8 + b"\xff" * 3)
    with pytest.raises(CorruptIndexError, match="multiple"):
        OffsetIndex(path, 0, 1024)
    path.write_bytes(
        (9).to_bytes(4, "big") + (50).to_bytes(4, "big") + (3).to_bytes(4, "big") + (60).to_bytes(4, "big")
    )
    with pytest.raises(CorruptIndexError, match="does not increase"):
        OffsetIndex(path, 0, 1024).sanity_check(1000)
