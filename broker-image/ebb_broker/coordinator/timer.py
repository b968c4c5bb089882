"""The coordinator's clock and keyed timers (Kafka's CoordinatorTimer and Time).

Every deadline of the group coordinator (a member's session, a rebalance, the initial rebalance delay, a
pending SyncGroup, the offsets retention check) is one keyed timer: scheduling a key again replaces its
previous deadline, as Kafka's `CoordinatorTimer.schedule` does, so a heartbeat simply pushes the member's
session deadline forward. Callbacks run on the event loop that owns the coordinator's state.

`LoopTimer` is the broker's timer (the asyncio loop's clock for deadlines, wall-clock milliseconds for
the timestamps Kafka persists). The unit tests drive the same coordinator with a manual clock, as Kafka's
GroupMetadataManagerTest does with MockTime and MockCoordinatorTimer.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Hashable
from typing import Protocol

log = logging.getLogger(__name__)


class CoordinatorTimer(Protocol):
    def now_ms(self) -> int:
        """Wall-clock milliseconds (commit timestamps, the group's state timestamp)."""
        ...

    def schedule(self, key: Hashable, delay_ms: int, callback: Callable[[], None]) -> None:
        """Run `callback` after `delay_ms`, replacing any deadline already scheduled under `key`."""
        ...

    def cancel(self, key: Hashable) -> None:
        """Forget the deadline under `key`, if any."""
        ...

    def is_scheduled(self, key: Hashable) -> bool: ...


class LoopTimer:
    """Keyed timers on an asyncio event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self._loop = loop
        self._handles: dict[Hashable, asyncio.TimerHandle] = {}

    def now_ms(self) -> int:
        return int(time.time() * 1000)

    def schedule(self, key: Hashable, delay_ms: int, callback: Callable[[], None]) -> None:
        self.cancel(key)
        self._handles[key] = self._loop.call_later(max(delay_ms, 0) / 1000, self._fire, key, callback)

    def _fire(self, key: Hashable, callback: Callable[[], None]) -> None:
        self._handles.pop(key, None)
        try:
            callback()
        except Exception:  # one failed deadline must not stop the loop's other work
            log.exception("coordinator timer %s failed", key)

    def cancel(self, key: Hashable) -> None:
        handle = self._handles.pop(key, None)
        if handle is not None:
            handle.cancel()

    def is_scheduled(self, key: Hashable) -> bool:
        return key in self._handles

    def cancel_all(self) -> None:
        for handle in self._handles.values():
            handle.cancel()
        self._handles.clear()
