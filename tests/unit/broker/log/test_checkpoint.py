"""Offset checkpoint files: Kafka's text format, strict reading, atomic replacement."""

from __future__ import annotations

from pathlib import Path

import pytest

from ebb_broker.log.checkpoint import read_offsets, write_offsets
from ebb_broker.log.errors import CorruptCheckpointError


def test_format_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "log-start-offset-checkpoint"
    write_offsets(path, {("b", 1): 99, ("a", 0): 1234})
    assert path.read_text() == "0\n2\na 0 1234\nb 1 99\n"
    assert read_offsets(path) == {("a", 0): 1234, ("b", 1): 99}
    assert not (tmp_path / "log-start-offset-checkpoint.tmp").exists()


def test_missing_or_empty_reads_empty(tmp_path: Path) -> None:
    assert read_offsets(tmp_path / "nope") == {}
    (tmp_path / "empty").write_text("")
    assert read_offsets(tmp_path / "empty") == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [("1\n0\n", "version"), ("0\n2\na 0 1\n", "entries"), ("0\n1\na 0\n", "malformed"), ("x\n", "header")],
)
def test_malformed_files_are_refused(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "cp"
    path.write_text(text)
    with pytest.raises(CorruptCheckpointError, match=message):
        read_offsets(path)
