"""File and directory names of a log directory: the only module that knows suffixes and 20-digit names.

Layout, byte for byte Kafka's (LogFileUtils, LogManager)::

    <data dir>/
      recovery-point-offset-checkpoint   replication-offset-checkpoint
      log-start-offset-checkpoint        cleaner-offset-checkpoint
      .kafka_cleanshutdown               ebb-topics.json (Ebb: topic list, see log_manager)
      <topic>-<partition>/
        00000000000000000000.log  .index  .timeindex      one segment, named by its base offset
        <base>.log.cleaned / .swap / .deleted            cleaner output, swap in progress, to be removed
"""

from __future__ import annotations

import re
from pathlib import Path

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"
SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)

DELETED = ".deleted"
CLEANED = ".cleaned"
SWAP = ".swap"
TEMP_SUFFIXES = (DELETED, CLEANED, SWAP)
DELETE_DIR_SUFFIX = "-delete"

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"
TOPICS_FILE = "ebb-topics.json"

# Matched against the whole name (fullmatch: `$` would also match before a final newline).
_SEGMENT_RE = re.compile(
    r"([0-9]{20})(\.log|\.index|\.timeindex|\.txnindex)((?:\.cleaned|\.swap|\.deleted)?)"
)


def prefix(offset: int) -> str:
    """Kafka's filenamePrefixFromOffset: the offset zero-padded to 20 digits."""
    return f"{offset:020d}"


def segment_file(directory: Path, base_offset: int, suffix: str, temp: str = "") -> Path:
    return directory / f"{prefix(base_offset)}{suffix}{temp}"


def parse_segment_file(path: Path) -> tuple[int, str, str] | None:
    """``(base offset, suffix, temp suffix)`` of a segment file name, or None for any other file."""
    m = _SEGMENT_RE.fullmatch(path.name)
    if m is None:
        return None
    return int(m.group(1)), m.group(2), m.group(3)


def partition_dir(data_dir: Path, topic: str, partition: int) -> Path:
    return data_dir / f"{topic}-{partition}"


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """``(topic, partition)`` of a ``<topic>-<partition>`` directory name, or None."""
    topic, sep, part = name.rpartition("-")
    if not sep or not topic or not (part.isascii() and part.isdigit()):  # "x-²" is no partition
        return None
    return topic, int(part)


# The longest file name Linux file systems take (NAME_MAX, bytes; topic names are ASCII).
MAX_FILE_NAME = 255


def delete_dir_name(topic: str, partition: int, unique: str) -> str:
    """Kafka's LocalLog.logDeleteDirName: ``<topic>-<p>.<unique>-delete`` with the topic cut so the name
    fits in 255 bytes (a 249-character topic name would otherwise fail with ENAMETOOLONG)."""
    suffix = f"-{partition}.{unique}{DELETE_DIR_SUFFIX}"
    return f"{topic[: max(MAX_FILE_NAME - len(suffix), 0)]}{suffix}"
