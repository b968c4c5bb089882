"""Offset checkpoint files in Kafka's text format, written atomically.

Format (server-common CheckpointFile / OffsetCheckpointFile)::

    0                 version
    2                 number of entries
    topicA 0 1234     topic partition offset, one per line

An empty or missing file reads as an empty map; a wrong version, a malformed line or a count that does
not match raises CorruptCheckpointError. Writes go to ``<file>.tmp``, are fsynced, renamed over the file
and the directory is fsynced, so a crash leaves either the old or the new checkpoint, never a torn one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ebb_broker.log.errors import CorruptCheckpointError

VERSION = 0

TopicPartition = tuple[str, int]


def fsync_dir(directory: Path) -> None:
    """Make renames and creations inside ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """tmp + fsync + rename + directory fsync (Kafka's Utils.atomicMoveWithFallback)."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)
    fsync_dir(path.parent)


def write_offsets(path: Path, offsets: Mapping[TopicPartition, int]) -> None:
    lines = [str(VERSION), str(len(offsets))]
    lines += [f"{topic} {partition} {offset}" for (topic, partition), offset in sorted(offsets.items())]
    atomic_write(path, ("\n".join(lines) + "\n").encode())


def read_offsets(path: Path) -> dict[TopicPartition, int]:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    lines = text.splitlines()
    if not lines:
        return {}
    try:
        version = int(lines[0])
        count = int(lines[1])
    except (ValueError, IndexError):
        raise CorruptCheckpointError(f"{path}: malformed header") from None
    if version != VERSION:
        raise CorruptCheckpointError(f"{path}: unknown checkpoint version {version}")
    entries = lines[2:]
    if len(entries) != count:
        raise CorruptCheckpointError(f"{path}: header says {count} entries, found {len(entries)}")
    out: dict[TopicPartition, int] = {}
    for line in entries:
        fields = line.split()
        if len(fields) != 3:
            raise CorruptCheckpointError(f"{path}: malformed line {line!r}")
        try:
            out[(fields[0], int(fields[1]))] = int(fields[2])
        except ValueError:
            raise CorruptCheckpointError(f"{path}: malformed line {line!r}") from None
    return out
