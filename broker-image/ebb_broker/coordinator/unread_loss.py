"""Unread loss: records that left a log before a group with commits on the partition had read them.

KIP-490 proposed this figure and was never adopted; no Kafka tool reports it. ebb-broker counts it at
deletion time, for every group with a commit on the partition, as
``ebb_records_deleted_unread_total{topic,group}``.

The count, exactly: when a partition's log start offset moves from ``old`` to ``new`` (DeleteRecords,
time or size retention, consumed retention; the cleaner never moves it, so compaction counts nothing),
the offsets ``[old, new)`` leave the log. A group whose committed offset ``c`` on the partition is below
``new`` had not read ``[max(c, old), new)``: that many are counted for it. Each offset leaves the log once
(the log start offset never moves back), so each is counted at most once per group, and a group's later
commit changes nothing already counted. Offsets are counted, as consumer lag is: a transaction marker or a
gap compaction left in the range counts as one. Transactional commits not yet committed by their marker
count as no commit, as for consumed retention.

When: the log tells ``log_start_moved`` of a move under the log's lock, before any reader can see it,
from the thread that made it (a retention pass or DeleteRecords in a worker thread). The count runs on the
event loop, which owns the committed offsets, in the callback that call queues. Any request a client
sends after seeing the deletion (a fetch answered OFFSET_OUT_OF_RANGE, then a commit at the new start) is
read after that callback ran, so it cannot hide the loss; a commit read before it was sent before the
client could know, so it records reading done before the deletion and counts as read.

Restarts: the counter is a Prometheus counter and starts at 0 in each process; the log start offset is
persisted, so what a previous process counted is never counted again, and a deletion acknowledged before a
crash was counted by the process that made it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Mapping, Sequence

from ebb_broker.coordinator.offsets import CommittedOffset, OffsetManager, TopicPartition
from ebb_broker.log import LogStartMove

log = logging.getLogger(__name__)

Count = Callable[[str, str, int], None]
"""(topic, group, records): where the counts go (the metrics counter)."""


def unread(
    by_group: Mapping[str, Mapping[TopicPartition, CommittedOffset]],
    moves: Mapping[TopicPartition, tuple[int, int]],
) -> dict[tuple[TopicPartition, str], int]:
    """Per (partition, group): the offsets of ``[old, new)`` at or above the group's commit, for every
    partition's move ``(old, new)``. Walks whichever is smaller: the groups times the moved partitions,
    or every commit."""
    out: dict[tuple[TopicPartition, str], int] = {}
    per_group = len(moves) <= sum(len(c) for c in by_group.values()) // max(len(by_group), 1)
    for group, commits in by_group.items():
        pairs = (
            ((tp, commits.get(tp)) for tp in moves)
            if per_group
            else ((tp, c) for tp, c in commits.items() if tp in moves)
        )
        for tp, committed in pairs:
            if committed is None:
                continue
            old, new = moves[tp]
            if committed.offset < new:
                out[(tp, group)] = new - max(committed.offset, old)
    return out


class UnreadLossCounter:
    """Takes log start moves from any thread and counts them on the event loop (see the module docstring)."""

    def __init__(self, offsets: OffsetManager, loop: asyncio.AbstractEventLoop, count: Count) -> None:
        self._offsets = offsets
        self._loop = loop
        self._count = count
        self._lock = threading.Lock()
        self._pending: list[LogStartMove] = []

    def log_start_moved(self, move: LogStartMove) -> None:
        """Any thread, under the moved log's lock: queue the move and, for the first of a batch, the count."""
        with self._lock:
            self._pending.append(move)
            first = len(self._pending) == 1
        if first:
            try:
                self._loop.call_soon_threadsafe(self._drain)
            except RuntimeError:  # the loop is closed: the process is ending, and its counter with it
                log.debug(
                    "unread loss of %s-%d not counted: the event loop is closed", move.topic, move.partition
                )

    def _drain(self) -> None:
        with self._lock:
            moves, self._pending = self._pending, []
        for (tp, group), records in unread(self._offsets.by_group, _merged(moves)).items():
            self._count(tp[0], group, records)


def _merged(moves: Sequence[LogStartMove]) -> dict[TopicPartition, tuple[int, int]]:
    """One range per partition: its moves follow each other (the log start offset only grows)."""
    out: dict[TopicPartition, tuple[int, int]] = {}
    for m in moves:
        tp = (m.topic, m.partition)
        old, new = out.get(tp, (m.old, m.new))
        out[tp] = (min(old, m.old), max(new, m.new))
    return out
