"""Unread loss counted at deletion time against ground truth: a real log engine and the coordinator's
offsets, deletions made from worker threads as the broker makes them, counts taken on an event loop."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path

from ebb_broker.coordinator.group_coordinator import GroupCoordinator
from ebb_broker.coordinator.offsets import CommittedOffset
from ebb_broker.coordinator.offsets_store import OffsetsStore
from ebb_broker.coordinator.unread_loss import UnreadLossCounter, unread
from ebb_broker.log import LogManager, LogManagerConfig
from ebb_broker.log.records import NewRecord, build_batch
from tests.unit.broker.coordinator.coordinator_context import TEST_CONFIG, MockTimer
from tests.unit.broker.log.log_helpers import Clock

T = "orders"


def _commit(b: Broker, group: str, partition: int, offset: int) -> None:
    b.offsets.commit(group, {(T, partition): CommittedOffset(offset, -1, "", b.clock.now)})


class Broker:
    """The pieces the unread count joins, wired as app.py wires them."""

    def __init__(self, data_dir: Path, clock: Clock) -> None:
        config = LogManagerConfig({"segment.bytes": 400, "retention.ms": 10_000})
        self.clock = clock
        self.logs = LogManager.open(data_dir, config, clock=clock)
        self.loop = asyncio.new_event_loop()
        groups = GroupCoordinator(OffsetsStore(self.logs, 1), MockTimer(), TEST_CONFIG, loop=self.loop)
        groups.load()  # the commits of __consumer_offsets replayed, as the broker starts
        self.offsets = groups.offsets
        self.counts: Counter[tuple[str, str]] = Counter()

        def count(topic: str, group: str, n: int) -> None:
            self.counts[(topic, group)] += n

        self.logs.on_log_start_move = UnreadLossCounter(self.offsets, self.loop, count).log_start_moved

    def in_thread(self, work: object) -> None:
        """Run blocking engine work in a worker thread, then let the loop run what it queued."""

        async def go() -> None:
            await asyncio.to_thread(work)  # type: ignore[arg-type]
            await asyncio.sleep(0)

        self.loop.run_until_complete(go())

    def close(self) -> None:
        self.logs.close()
        self.loop.close()


def _produce(b: Broker, n: int, ts: int) -> None:
    lg = b.logs.get_log(T, 0)
    for _ in range(n):
        lg.append(build_batch([NewRecord(b"k", b"v" * 40, timestamp=ts)]))


def test_delete_records_and_retention_count_what_each_group_had_not_read(tmp_path: Path) -> None:
    # Near the wall clock: the coordinator stamps its __consumer_offsets records with the real time, and the
    # log refuses timestamps an hour ahead of its clock (message.timestamp.after.max.ms).
    clock = Clock(time.time_ns() // 1_000_000)
    b = Broker(tmp_path, clock)
    try:
        b.logs.create_topic(T, 2)
        _produce(b, 30, ts=clock.now)
        _commit(b, "dead", 0, 3)
        _commit(b, "slow", 0, 7)
        _commit(b, "fast", 0, 12)
        _commit(b, "elsewhere", 1, 0)  # commits on another partition only

        b.in_thread(lambda: b.logs.delete_records({(T, 0): 10}))
        assert b.counts == {(T, "dead"): 7, (T, "slow"): 3}  # fast committed past 10; [0,3) never counted

        _commit(b, "slow", 0, 11)  # read on after the deletion: what was counted stays
        clock.advance(20_000)  # the first 30 records are past retention.ms now, the next 10 are not
        _produce(b, 10, ts=clock.now)
        b.in_thread(b.logs.run_retention)
        start = b.logs.get_log(T, 0).log_start_offset
        assert 12 < start <= 30, "retention should have moved the log start past every commit"
        assert b.counts == {
            (T, "dead"): 7 + (start - 10),  # [10, start), once
            (T, "slow"): 3 + (start - 11),
            (T, "fast"): start - 12,
        }
    finally:
        b.close()

    # A new process counts from 0 and only what leaves the log from now on (the log start is persisted),
    # against the commits it replayed from __consumer_offsets.
    again = Broker(tmp_path, clock)
    try:
        again.in_thread(lambda: again.logs.delete_records({(T, 0): start + 2}))
        assert again.counts == {(T, "dead"): 2, (T, "slow"): 2, (T, "fast"): 2}
    finally:
        again.close()


def test_unread_walks_either_way_to_the_same_counts() -> None:
    by_group = {
        "a": {(T, p): CommittedOffset(5, -1, "", 0) for p in range(50)},
        "b": {(T, 0): CommittedOffset(50, -1, "", 0)},
        "c": {},
    }
    few = {(T, 0): (0, 20)}  # fewer moves than commits per group: walks groups x moves
    many = {(T, p): (10, 20) for p in range(60)}  # more: walks every commit
    assert unread(by_group, few) == {((T, 0), "a"): 15}
    assert unread(by_group, many) == {((T, p), "a"): 10 for p in range(50)}
