"""files: the one module that knows Kafka's file names (LogFileUtils): 20-digit names, suffixes, topics."""

from __future__ import annotations

from pathlib import Path

import pytest

from ebb_broker.log import files


def test_segment_names_are_kafkas_20_digit_base_offsets() -> None:
    assert files.prefix(0) == "00000000000000000000"
    assert files.prefix(1234) == "00000000000000001234"
    path = files.segment_file(Path("/d"), 42, files.LOG_SUFFIX, files.CLEANED)
    assert path == Path("/d/00000000000000000042.log.cleaned")


@pytest.mark.parametrize("suffix", files.SEGMENT_SUFFIXES)
@pytest.mark.parametrize("temp", ["", *files.TEMP_SUFFIXES])
def test_every_segment_file_name_parses_back(suffix: str, temp: str) -> None:
    path = files.segment_file(Path("/d"), 987654321, suffix, temp)
    assert files.parse_segment_file(path) == (987654321, suffix, temp)


@pytest.mark.parametrize(
    "name",
    ["0000000000000000042.log", "00000000000000000042.logx", "00000000000000000042.log.tmp",
     "leader-epoch-checkpoint", "00000000000000000042.snapshot", "x00000000000000000042.log"],
)  # fmt: skip
def test_other_files_are_not_segments(name: str) -> None:
    assert files.parse_segment_file(Path(name)) is None


def test_partition_directories_keep_dashes_in_topic_names() -> None:
    d = files.partition_dir(Path("/data"), "orders-eu-1", 12)
    assert d == Path("/data/orders-eu-1-12")
    assert files.parse_partition_dir(d.name) == ("orders-eu-1", 12)
    for name in ("orders", "orders-", "-3", "orders-x", files.CLEAN_SHUTDOWN):
        assert files.parse_partition_dir(name) is None, name


def test_names_with_a_final_newline_are_neither_segments_nor_partitions() -> None:
    assert files.parse_segment_file(Path("00000000000000000042.log\n")) is None
    assert files.parse_partition_dir("orders-\u00b2") is None  # a digit to str.isdigit, not to int()


def test_delete_dir_name_fits_255_bytes_as_kafka_cuts_it() -> None:
    unique = "0123456789abcdef" * 2
    assert files.delete_dir_name("orders", 3, unique) == f"orders-3.{unique}-delete"
    longest = files.delete_dir_name("n" * 249, 10_000, unique)
    assert len(longest) == 255
    assert longest.endswith(f"-10000.{unique}-delete")
    assert longest.startswith("n" * (255 - len(f"-10000.{unique}-delete")))
