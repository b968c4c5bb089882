"""Offset checkpoint files in Kafka's text format, written atomically.

Format (server-common CheckpointFile / OffsetCheckpointFile)::

    0                 version
    2                 number of entries
    topicA 0 1234     topic partition offset, one per line

An empty or missing file reads as an empty map; a wrong version, malformed entries or a count that does
not match raises CorruptCheckpointError. Writes go to ``<file>.tmp``, are fsynced, renamed over the file
and the directory is fsynced, so a crash leaves either the old or the new checkpoint, never a torn one.

A topic name is a whitespace-separated field, so the writer refuses a name that is empty or holds
whitespace (raising ValueError, writing nothing): no checkpoint is ever written that cannot be read
back. Topic names are checked where they enter (``topic_names``), so this never fires unless that check
is broken. The reader takes the entries as a sequence of whitespace-separated fields (``topic partition
offset``, three per entry), not line by line: a checkpoint written by an earlier version for a name
ending in a newline (``"evil\n 0 1"``) still reads, as an entry of a topic that no longer loads.
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
    for topic, _partition in offsets:
        if not topic or any(c.isspace() for c in topic):
            raise ValueError(f"{path.name}: refusing to write topic {topic!r}: it could not be read back")
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
    fields = " ".join(lines[2:]).split()
    if len(fields) != 3 * count:
        raise CorruptCheckpointError(
            f"{path}: header says {count} entries, found {len(fields)} fields (3 per entry)"
        )
    out: dict[TopicPartition, int] = {}
    for i in range(0, len(fields), 3):
        topic, partition, offset = fields[i : i + 3]
        try:
            out[(topic, int(partition))] = int(offset)
        except ValueError:
            raise CorruptCheckpointError(f"{path}: malformed entry {topic} {partition} {offset}") from None
    return out
