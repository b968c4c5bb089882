"""Fetches parked until records arrive, keyed by partition (Kafka's delayed-fetch purgatory).

A fetch that found fewer than `min_bytes` waits here for at most its `max_wait_ms`, watching the
partitions it reads; an append to a partition wakes only the fetches watching that partition (Kafka's
DelayedOperationPurgatory[DelayedFetch], watched by TopicPartitionOperationKey and completed by
ReplicaManager's checkAndComplete after each append). A parked fetch costs nothing until one of its
partitions is written: a produce never pays for the fetches parked on other partitions.

Every call happens on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Collection, Iterable

TopicPartition = tuple[str, int]


class FetchPurgatory:
    """Parked fetches, each watched by every partition it reads."""

    def __init__(self) -> None:
        self._watchers: dict[TopicPartition, set[asyncio.Future[None]]] = {}
        self._parked = 0
        self.wakeups = 0  # parked fetches woken by an append (each then reads its partitions again)

    @property
    def size(self) -> int:
        """How many fetches are parked (Kafka's NumDelayedOperations of the Fetch purgatory)."""
        return self._parked

    async def wait(self, partitions: Collection[TopicPartition], seconds: float) -> None:
        """Return after an append to one of `partitions` or after `seconds`, whichever comes first."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        for key in partitions:
            self._watchers.setdefault(key, set()).add(waiter)
        self._parked += 1
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(waiter, seconds)
        finally:
            self._parked -= 1
            for key in partitions:
                watching = self._watchers.get(key)
                if watching is not None:
                    watching.discard(waiter)
                    if not watching:
                        del self._watchers[key]

    def complete(self, partitions: Iterable[TopicPartition]) -> None:
        """Records were appended to `partitions`: wake the fetches watching them (checkAndComplete)."""
        for key in partitions:
            for waiter in self._watchers.pop(key, ()):
                if not waiter.done():
                    waiter.set_result(None)
                    self.wakeups += 1
