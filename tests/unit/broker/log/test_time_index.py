"""TimeIndex: monotonic entries and lookups (Kafka's TimeIndexTest, restated)."""

from __future__ import annotations

from pathlib import Path

from ebb_broker.log.time_index import TimeIndex


def test_only_increasing_timestamps_are_indexed(tmp_path: Path) -> None:
    idx = TimeIndex(tmp_path / "0.timeindex", 0, 1200)
    idx.maybe_append(100, 1)
    idx.maybe_append(100, 2)  # same timestamp: skipped
    idx.maybe_append(90, 3)  # older: skipped
    idx.maybe_append(200, 4)
    assert idx.entries == 2
    assert idx.lookup(99) == (-1, 0)
    assert idx.lookup(150) == (100, 1)
    assert idx.lookup(10**12) == (200, 4)


def test_reopen_and_truncate(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000010.timeindex"
    idx = TimeIndex(path, 10, 1200)
    for i in range(5):
        idx.maybe_append(1000 + i, 10 + i * 3)
    idx.close()
    assert path.stat().st_size == 5 * 12
    again = TimeIndex(path, 10, 1200)
    again.sanity_check()
    again.truncate_to(16)
    assert again.last_entry() == (1001, 13)
