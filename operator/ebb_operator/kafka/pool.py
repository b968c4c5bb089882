"""One admin client per cluster, reused across reconciles (a client per reconcile opened over 1,000
connections in an 8-minute test run). Calls on one client are serialised; clients unused for
`idle_seconds` are closed on a later call, so a cluster no object names any more holds no connection; a
client whose brokers are unreachable is closed at once, so the next call starts from the bootstrap."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from kafka.errors import KafkaConnectionError, KafkaTimeoutError, NodeNotReadyError

from ebb_operator.kafka.admin import ClusterAdmin
from ebb_operator.kafka.connection import ClusterConnection

T = TypeVar("T")
# A client that lost its brokers: kafka-python keeps their addresses from its last metadata and, after a
# broker pod restarted with a new address, can go on failing with these (EHOSTUNREACH, "No node_id
# provided") long after the broker is back. Such a client is closed and the next call bootstraps anew.
_LOST = (KafkaConnectionError, KafkaTimeoutError, NodeNotReadyError)


@dataclass
class _Entry:
    last_used: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    admin: ClusterAdmin | None = None


class AdminPool:
    """ClusterAdmin instances keyed by connection (servers and properties)."""

    def __init__(
        self,
        *,
        idle_seconds: float = 300.0,
        request_timeout: float = 15.0,
        factory: Callable[[ClusterConnection, float], ClusterAdmin] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.idle_seconds = idle_seconds
        self._clock = clock
        self.request_timeout = request_timeout
        self._factory = factory or (lambda conn, timeout: ClusterAdmin(conn, request_timeout=timeout))
        self._entries: dict[tuple[str, tuple[tuple[str, str], ...]], _Entry] = {}
        self._lock = threading.Lock()
        self.created = 0  # clients opened so far (tests and metrics: it must stay flat)

    def run(self, connection: ClusterConnection, fn: Callable[[ClusterAdmin], T]) -> T:
        """`fn(admin)` on this cluster's client, created on first use; blocking (call from a thread)."""
        while True:
            with self._lock:
                entry = self._entries.setdefault(connection.key, _Entry(self._clock()))
            with entry.lock:
                with self._lock:
                    if self._entries.get(connection.key) is not entry:
                        continue  # closed as idle while we waited: take the fresh entry
                if entry.admin is None:
                    entry.admin = self._factory(connection, self.request_timeout)
                    self.created += 1
                try:
                    return fn(entry.admin)
                except _LOST:
                    entry.admin.close()
                    entry.admin = None
                    raise
                finally:
                    entry.last_used = self._clock()
                    self.close_idle()

    async def call(self, connection: ClusterConnection, fn: Callable[[ClusterAdmin], T]) -> T:
        """`run` in a worker thread, so the event loop keeps serving other objects."""
        return await asyncio.to_thread(self.run, connection, fn)

    def reset(self, connection: ClusterConnection) -> None:
        """Close this cluster's client (once no call uses it): the next call bootstraps anew, with every
        broker the cluster has now."""
        with self._lock:
            entry = self._entries.get(connection.key)
        if entry is not None:
            with entry.lock:
                if entry.admin is not None:
                    entry.admin.close()
                    entry.admin = None

    def close_idle(self) -> int:
        """Close clients unused for idle_seconds (skipping any in use); returns how many were closed."""
        now, closed = self._clock(), 0
        with self._lock:
            idle = [
                (key, e) for key, e in self._entries.items()
                if e.admin is not None and now - e.last_used > self.idle_seconds
            ]  # fmt: skip
        for key, entry in idle:
            if entry.lock.acquire(blocking=False):
                try:
                    if entry.admin is not None and now - entry.last_used > self.idle_seconds:
                        entry.admin.close()
                        entry.admin = None
                        closed += 1
                        with self._lock:
                            self._entries.pop(key, None)
                finally:
                    entry.lock.release()
        return closed

    def open_clients(self) -> int:
        with self._lock:
            return sum(1 for e in self._entries.values() if e.admin is not None)

    def close(self) -> None:
        with self._lock:
            entries = list(self._entries.values())
            self._entries.clear()
        for entry in entries:
            with entry.lock:
                if entry.admin is not None:
                    entry.admin.close()
                    entry.admin = None
