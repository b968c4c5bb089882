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
    [
        ("1\n0\n", "version"),
        ("0\n2\na 0 1\n", "entries"),
        ("0\n1\na 0\n", "entries"),
        ("0\n1\na x 1\n", "malformed"),
        ("x\n", "header"),
    ],
)
def test_malformed_files_are_refused(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "cp"
    path.write_text(text)
    with pytest.raises(CorruptCheckpointError, match=message):
        read_offsets(path)


@pytest.mark.parametrize("topic", ["evil\n", "with space", "tab\there", ""])
def test_a_name_that_cannot_be_read_back_is_never_written(tmp_path: Path, topic: str) -> None:
    path = tmp_path / "cp"
    write_offsets(path, {("ok", 0): 1})
    with pytest.raises(ValueError, match="could not be read back"):
        write_offsets(path, {("ok", 0): 2, (topic, 0): 3})
    assert read_offsets(path) == {("ok", 0): 1}  # the previous checkpoint stays


def test_an_entry_an_earlier_version_split_over_two_lines_still_reads(tmp_path: Path) -> None:
    """Before topic names were checked on the whole string, ``"evil\n"`` got in and its entry was
    written over two lines; the fields still make whole entries, and the topic no longer loads."""
    path = tmp_path / "log-start-offset-checkpoint"
    path.write_text("0\n2\nevil\n 0 1\nok 0 7\n")
    assert read_offsets(path) == {("evil", 0): 1, ("ok", 0): 7}
