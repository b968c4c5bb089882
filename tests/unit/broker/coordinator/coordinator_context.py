"""A group coordinator driven without sockets, for the unit tests (Kafka's GroupMetadataManagerTestContext).

The coordinator is the broker's own, over a real log engine and a real `__consumer_offsets` in a temporary
directory; only time is manual: `MockTimer` (Kafka's MockTime + MockCoordinatorTimer) fires the keyed
deadlines as the test advances the clock, so sessions, rebalance timeouts and the initial rebalance delay
are exercised in microseconds. JoinGroup and SyncGroup return asyncio futures; they are created on an
event loop that is never run, so a test reads `done()` and `result()` right after the call that completes
them.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import struct
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ebb_broker.coordinator.group import Group, JoinResult, SyncResult
from ebb_broker.coordinator.group_coordinator import GroupCoordinator, GroupCoordinatorConfig
from ebb_broker.coordinator.offsets import CommittedOffset
from ebb_broker.coordinator.offsets_store import OffsetsStore
from ebb_broker.log import LogManager
from ebb_broker.log.log_config import LogManagerConfig

GROUP = "group-id"
PROTOCOL_TYPE = "consumer"
PROTOCOLS = [("range", b"")]
PROTOCOL_SUPERSET = [("range", b""), ("roundrobin", b"")]
# Kafka's GroupCoordinatorTest settings.
SESSION_TIMEOUT = 500
REBALANCE_TIMEOUT = 500
INITIAL_DELAY = 50
TEST_CONFIG = GroupCoordinatorConfig(
    min_session_timeout_ms=10,
    max_session_timeout_ms=10 * 60 * 1000,
    max_size=4,
    initial_rebalance_delay_ms=INITIAL_DELAY,
)


def subscription(*topics: str) -> bytes:
    """A ConsumerProtocolSubscription v0 (what consumers put in their JoinGroup metadata)."""
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1)  # null user data


class MockTimer:
    """Keyed deadlines on a manual clock; `advance` fires what falls due, in deadline order."""

    def __init__(self, now_ms: int = 1_700_000_000_000):
        self.time = now_ms
        self._seq = itertools.count()
        self._deadlines: dict[Hashable, tuple[int, int]] = {}
        self._callbacks: dict[Hashable, Callable[[], None]] = {}
        self._heap: list[tuple[int, int, Hashable]] = []

    def now_ms(self) -> int:
        return self.time

    def schedule(self, key: Hashable, delay_ms: int, callback: Callable[[], None]) -> None:
        entry = (self.time + max(delay_ms, 0), next(self._seq))
        self._deadlines[key] = entry
        self._callbacks[key] = callback
        heapq.heappush(self._heap, (*entry, key))

    def cancel(self, key: Hashable) -> None:
        self._deadlines.pop(key, None)
        self._callbacks.pop(key, None)

    def is_scheduled(self, key: Hashable) -> bool:
        return key in self._deadlines

    def advance(self, ms: int) -> None:
        target = self.time + ms
        while self._heap and self._heap[0][0] <= target:
            deadline, seq, key = heapq.heappop(self._heap)
            if self._deadlines.get(key) != (deadline, seq):
                continue  # cancelled or rescheduled
            self.time = max(self.time, deadline)
            del self._deadlines[key]
            self._callbacks.pop(key)()
        self.time = target


@dataclass
class Rebalanced:
    """Two members through JoinGroup and SyncGroup (Kafka's RebalanceResult)."""

    generation: int
    leader_id: str
    follower_id: str


class CoordinatorContext:
    def __init__(
        self, data_dir: Path, config: GroupCoordinatorConfig = TEST_CONFIG, *, offsets_partitions: int = 1
    ):
        self.data_dir = data_dir
        self.config = config
        self.offsets_partitions = offsets_partitions
        self.loop = asyncio.new_event_loop()  # futures only; never run
        self.timer = MockTimer()
        self._open()

    def _open(self) -> None:
        self.logs = LogManager.open(self.data_dir, LogManagerConfig())
        self.store = OffsetsStore(self.logs, self.offsets_partitions)
        self.coordinator = GroupCoordinator(self.store, self.timer, self.config, loop=self.loop)
        self.coordinator.load()
        self.coordinator.start()

    def restart(self) -> None:
        """A broker restart (a coordinator failover on one node): state rebuilt from __consumer_offsets."""
        self.logs.close()
        self.timer = MockTimer(self.timer.time)
        self._open()

    def close(self) -> None:
        self.logs.close()
        self.loop.close()

    @property
    def group(self) -> Group:
        return self.coordinator.groups[GROUP]

    def advance(self, ms: int) -> None:
        self.timer.advance(ms)

    def initial_rebalance(self) -> None:
        """Past the initial delay, extended once because more than one member joined during it."""
        self.advance(2 * self.config.initial_rebalance_delay_ms + 2)

    # ---- requests -------------------------------------------------------------------------

    def join(
        self,
        member_id: str = "",
        *,
        instance: str | None = None,
        protocols: list[tuple[str, bytes]] | None = None,
        protocol_type: str = PROTOCOL_TYPE,
        session: int = SESSION_TIMEOUT,
        rebalance: int = REBALANCE_TIMEOUT,
        require_known: bool = False,
        skip_assignment: bool = False,
        group: str = GROUP,
        client_id: str = "consumer-test",
    ) -> asyncio.Future[JoinResult]:
        return self.coordinator.membership.join(
            group_id=group,
            member_id=member_id,
            group_instance_id=instance,
            client_id=client_id,
            client_host="/127.0.0.1",
            session_timeout_ms=session,
            rebalance_timeout_ms=rebalance,
            protocol_type=protocol_type,
            protocols=PROTOCOLS if protocols is None else protocols,
            require_known_member_id=require_known,
            supports_skip_assignment=skip_assignment,
        )

    def sync(
        self,
        member_id: str,
        generation: int,
        assignments: dict[str, bytes] | None = None,
        *,
        instance: str | None = None,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
        group: str = GROUP,
    ) -> asyncio.Future[SyncResult]:
        return self.coordinator.membership.sync(
            group_id=group,
            generation=generation,
            member_id=member_id,
            group_instance_id=instance,
            assignments=assignments or {},
            protocol_type=protocol_type,
            protocol_name=protocol_name,
        )

    def heartbeat(self, member_id: str, generation: int, *, instance: str | None = None) -> int:
        return self.coordinator.membership.heartbeat(GROUP, generation, member_id, instance)

    def leave(self, *members: tuple[str, str | None], group: str = GROUP) -> tuple[int, list[int]]:
        return self.coordinator.membership.leave(group, list(members))

    def commit(
        self,
        member_id: str,
        generation: int,
        offsets: dict[tuple[str, int], int],
        *,
        instance: str | None = None,
        api_version: int = 8,
        group: str = GROUP,
    ) -> int:
        """OffsetCommit as the handler does it: validate, then write; the error code."""
        error = self.coordinator.offsets.validate_commit(group, generation, member_id, instance, api_version)
        if not error:
            now = self.timer.now_ms()
            self.coordinator.offsets.commit(
                group, {tp: CommittedOffset(o, -1, "", now) for tp, o in offsets.items()}
            )
        return error

    def committed(self, group: str = GROUP) -> dict[tuple[str, int], int]:
        return {tp: c.offset for tp, c in self.coordinator.offsets.fetch(group).items()}

    # ---- scenarios ------------------------------------------------------------------------

    def join_first_member(self, **kwargs: object) -> JoinResult:
        """A new member joins an empty group and gets through the initial delay."""
        future = self.join(**kwargs)  # type: ignore[arg-type]
        self.advance(self.config.initial_rebalance_delay_ms + 1)
        return done(future)

    def two_members(
        self,
        *,
        static: bool = False,
        session: int = SESSION_TIMEOUT,
        protocols: list[tuple[str, bytes]] | None = None,
    ) -> Rebalanced:
        """Two members join together and the leader assigns (Kafka's staticMembersJoinAndRebalance)."""
        leader_f = self.join(instance="leader" if static else None, session=session, protocols=protocols)
        follower_f = self.join(instance="follower" if static else None, session=session, protocols=protocols)
        self.initial_rebalance()
        leader, follower = done(leader_f), done(follower_f)
        assert leader.error == 0 and follower.error == 0
        assert leader.leader == leader.member_id
        leader_sync = self.sync(
            leader.member_id,
            leader.generation,
            {leader.member_id: b"leader-assignment", follower.member_id: b"follower-assignment"},
            instance="leader" if static else None,
        )
        follower_sync = self.sync(
            follower.member_id, follower.generation, instance="follower" if static else None
        )
        assert done(leader_sync).error == 0 and done(follower_sync).error == 0
        return Rebalanced(leader.generation, leader.member_id, follower.member_id)


T = TypeVar("T")


def done(future: asyncio.Future[T]) -> T:
    """The answer of a request that must have completed by now."""
    assert future.done(), "the request is still parked"
    return future.result()
