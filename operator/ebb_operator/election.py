"""Leader election through a Lease record, with client-go's rules (k8s.io/client-go/tools/leaderelection).

Each replica is a candidate that reads the record every `retry` seconds. A candidate never trusts the
timestamps in the record (another machine's clock wrote them): it only notices that the record *changed*
and measures, on its own clock, how long it has seen it unchanged. Once that is `lease` seconds (or the
record names no holder, or names this candidate), it writes itself in as the holder, through a write the
store refuses if the record changed since it was read (the Lease's resourceVersion), so of two candidates
racing for an expired lease one wins.

The leader writes the record again every `retry` seconds. It counts its lease from the moment it *sent*
the last write that succeeded (earlier than the moment the store applied it, so earlier than any other
candidate can have seen it), and once `renew_deadline` has passed since then without another success it
is no longer the leader (`deadline`). Because `renew_deadline` < `lease`, it stops before anyone can take
over, as long as both clocks advance at the same rate (client-go's assumption too: arbitrary skew is fine,
a skewed *rate* is not). What "stopping" means is the caller's (ebb_operator/leader.py exits the process).

Like client-go, this is not fencing: a write the old leader sent before it stopped can still arrive after
the new leader started. The margin `lease - renew_deadline` is what makes that window not happen in
practice; the handlers' own idempotence (DeleteRecords, KIP-107) is what makes it harmless.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Protocol

log = logging.getLogger(__name__)
JITTER = 1.2  # client-go's JitterFactor: a candidate waits retry x [1, 1.2) between attempts


@dataclass(frozen=True)
class LeaseRecord:
    """What a Lease's spec holds. Times are informational (for people): the rules never compare them."""

    holder: str  # "" once released
    lease_seconds: int
    acquired: datetime | None = None
    renewed: datetime | None = None
    transitions: int = 0


class LeaseConflict(Exception):
    """The record changed since it was read, or was created by another candidate first."""


class LeaseStore(Protocol):
    """Where the record lives: a Lease object (ebb_operator.leader) or, in unit tests, memory."""

    def get(self) -> tuple[LeaseRecord, str] | None:
        """The record and its version, or None when there is none."""

    def create(self, record: LeaseRecord) -> str:
        """Create the record; its version. LeaseConflict if one exists."""

    def update(self, record: LeaseRecord, version: str) -> str:
        """Replace the record read at `version`; the new version. LeaseConflict if it changed since."""


@dataclass(frozen=True)
class Timing:
    lease: float
    renew_deadline: float
    retry: float


class Elector:
    """One candidate. Driven by one thread (`run`); `leading` and `deadline` may be read from any."""

    def __init__(
        self,
        store: LeaseStore,
        identity: str,
        timing: Timing,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        if not identity:
            raise ValueError("a candidate needs an identity")
        self.store = store
        self.identity = identity
        self.timing = timing
        self.clock = clock
        self.wall = wall
        self.leading = False
        # While leading: the clock time after which this candidate must no longer act.
        self.deadline = float("-inf")
        self.observed: LeaseRecord | None = None  # the record as last read or written
        self.observed_at = float("-inf")  # when it was first seen in that state (this candidate's clock)
        self.previous_holder = ""  # who held the lease before this candidate took it
        self._version: str | None = None  # of `observed`, while leading: renewals skip the read

    @property
    def holder(self) -> str:
        return self.observed.holder if self.observed else ""

    def expires_in(self) -> float:
        """Seconds until another holder's lease, as seen here, may be taken (<= 0: now)."""
        if self.observed is None or not self.observed.holder or self.observed.holder == self.identity:
            return 0.0
        lease = max(self.timing.lease, self.observed.lease_seconds)  # a longer lease its holder asked for
        return self.observed_at + lease - self.clock()

    def try_acquire_or_renew(self) -> bool:
        """One attempt (client-go's tryAcquireOrRenew); True when this candidate holds the lease after it.

        A leader that finds another holder has lost the lease there and then (`leading` False)."""
        sent = self.clock()
        now = self.wall()
        try:
            if self.leading and self._version is not None and self.observed is not None:
                renewed = replace(self.observed, renewed=now)
                try:
                    self._wrote(renewed, self.store.update(renewed, self._version), sent)
                    return True
                except LeaseConflict:  # changed since our last write: read it and decide below
                    self._version = None
            found = self.store.get()
            if found is None:
                record = LeaseRecord(self.identity, _whole(self.timing.lease), now, now, 0)
                self._wrote(record, self.store.create(record), sent)
                return True
            record, version = found
            if record != self.observed:
                self.observed, self.observed_at = record, self.clock()
            if record.holder and record.holder != self.identity:
                if self.leading:
                    self._lose(f"the lease is held by {record.holder}")
                if self.expires_in() > 0:
                    return False
            if record.holder == self.identity:
                mine = replace(record, renewed=now, lease_seconds=_whole(self.timing.lease))
            else:
                self.previous_holder = record.holder
                mine = LeaseRecord(self.identity, _whole(self.timing.lease), now, now, record.transitions + 1)
            self._wrote(mine, self.store.update(mine, version), sent)
            return True
        except LeaseConflict:
            return False  # another candidate wrote first: read again at the next attempt
        except Exception as exc:  # the store did not answer: a leader retries until its deadline
            log.warning("lease: %s", exc)
            return False

    def _wrote(self, record: LeaseRecord, version: str, sent: float) -> None:
        self.observed, self.observed_at, self._version = record, self.clock(), version
        self.deadline = sent + self.timing.renew_deadline
        self.leading = True

    def _lose(self, why: str) -> None:
        log.error("lease lost: %s", why)
        self.leading = False
        self.deadline = float("-inf")
        self._version = None

    def expired(self) -> bool:
        """Whether a leader's renew deadline has passed (it must stop acting)."""
        return self.leading and self.clock() >= self.deadline

    def release(self) -> bool:
        """Give the lease up (client-go's ReleaseOnCancel), so another candidate takes over at once.
        Only call this once nothing acts for this candidate any more."""
        if not self.leading or self.observed is None or self._version is None:
            return False
        now = self.wall()
        released = replace(self.observed, holder="", lease_seconds=1, renewed=now)
        try:
            self.store.update(released, self._version)
        except Exception as exc:
            log.warning("lease not released (it expires by itself): %s", exc)
            return False
        finally:
            self.leading = False
            self.deadline = float("-inf")
        return True

    def wait(self) -> float:
        """Seconds until the next attempt: a leader renews every `retry`; a candidate retries with
        jitter, and tries again right when the lease it waits for expires."""
        if self.leading:
            return self.timing.retry
        jittered = self.timing.retry * random.uniform(1.0, JITTER)
        expires = self.expires_in()
        return expires + 0.05 if 0 < expires < jittered else jittered

    def run(
        self,
        stop: threading.Event,
        changed: Callable[[bool], None],
        *,
        seen: Callable[[str], None] = lambda holder: None,
    ) -> None:
        """Attempt until `stop` is set; `changed(leading)` on every transition and `seen(holder)` after
        every attempt, in this thread."""
        leading = False
        while not stop.is_set():
            self.try_acquire_or_renew()
            seen(self.holder)
            if self.expired():
                self._lose(f"not renewed within {self.timing.renew_deadline:g} s")
            if self.leading != leading:
                leading = self.leading
                changed(leading)
            stop.wait(self.wait())


def _whole(seconds: float) -> int:
    return max(1, int(seconds + 0.999))
