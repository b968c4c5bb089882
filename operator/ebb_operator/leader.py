"""One replica acts, the others wait: leader election for `python -m ebb_operator` (docs/operator.md).

Every replica runs kopf, so every replica serves what is asked of all of them: the admission webhook,
the health probe, the metrics. What only the leader does is kopf's resource processing (watch streams,
handlers, timers, daemons), which stays paused until this replica holds the Lease. The pause is kopf's
own (the one its peering uses, which closes the watch streams and stops daemons and timers while the
webhook and the probes keep serving): kopf offers no public switch for it, so `_Gate` adds one toggle to
kopf's pause set where kopf starts its orchestrator (kopf is pinned to one version in pyproject.toml).
kopf's indices are filled by the watch streams, so on a waiting replica they are empty: what every
replica serves (admission handlers) must not depend on them.

Losing the Lease (not renewed within the renew deadline, or another holder found) ends the process at
once with exit status 75, as client-go controllers exit: nothing in flight, thread or handler, can act
after that moment, which comes before any other replica may take over (ebb_operator/election.py). The
container restarts and competes again. A DeleteRecords or a RetentionPolicy run cut off this way is
finished by the next leader from what its status recorded, as after any restart.

kopf's peering is not used for this: it is not a lease. Peers that see one another with the same
priority all pause (two replicas of one Deployment would both stop), a peer with a lower priority pauses
only once it has read the other's keep-alive, and a paused peer's handlers in flight run on: nothing
bounds when the last one acts relative to when another peer starts.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn

from kopf._cogs.aiokits import aiotoggles
from kopf._core.reactor import orchestration

from ebb_operator import kube, metrics
from ebb_operator.election import Elector, LeaseConflict, LeaseRecord, Timing
from ebb_operator.settings import OperatorSettings

log = logging.getLogger(__name__)
LOST_LEASE_EXIT = 75  # EX_TEMPFAIL: the container restarts and the replica competes again
COMPONENT = "ebb-operator"
_WATCHDOG_SECONDS = 0.1


def identity(settings: OperatorSettings) -> str:
    """The pod's name in a pod (a restarted container keeps it: the dead process held nothing), else the
    host name and process id (two local processes never share one)."""
    return settings.pod_name or f"{socket.gethostname()}/{os.getpid()}"


class _LeaseObject:
    """The election's record as the Lease `namespace/name` (ebb_operator.kube.leases)."""

    def __init__(self, namespace: str, name: str, timeout: float) -> None:
        self.namespace, self.name, self.timeout = namespace, name, timeout
        self.uid = ""

    def get(self) -> tuple[LeaseRecord, str] | None:
        found = kube.read_lease(self.namespace, self.name, self.timeout)
        if found is None:
            return None
        record, version, self.uid = found
        return record, version

    def create(self, record: LeaseRecord) -> str:
        try:
            version, self.uid = kube.create_lease(self.namespace, self.name, record, self.timeout)
        except kube.AlreadyExistsError as exc:
            raise LeaseConflict(str(exc)) from exc
        return version

    def update(self, record: LeaseRecord, version: str) -> str:
        try:
            return kube.replace_lease(self.namespace, self.name, record, version, self.timeout)
        except kube.KubeApiError as exc:
            if exc.status == 409:
                raise LeaseConflict(str(exc)) from exc
            raise


class _Gate:
    """kopf's resource processing, paused until `open` (a toggle in kopf's own pause set)."""

    _installed = False

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._toggle: aiotoggles.Toggle | None = None

    def install(self) -> None:
        """Wrap kopf's orchestrator, which kopf.operator() starts with the pause set as an argument."""
        if _Gate._installed:
            raise RuntimeError("kopf's orchestrator is gated once per process")
        original: Callable[..., Awaitable[None]] = orchestration.orchestrator

        async def gated(*, operator_paused: aiotoggles.ToggleSet, **kwargs: Any) -> None:
            await self._attach(operator_paused)
            await original(operator_paused=operator_paused, **kwargs)

        orchestration.orchestrator = gated
        _Gate._installed = True

    async def _attach(self, paused: aiotoggles.ToggleSet) -> None:
        toggle = await paused.make_toggle(True, name="not the leader")
        with self._lock:
            self._loop, self._toggle = asyncio.get_running_loop(), toggle
            opened = self._open
        if opened:
            await toggle.turn_to(False)
        else:
            log.info("resource processing paused until this replica holds the lease")

    def open(self) -> None:
        """Resume kopf's resource processing; from any thread, before or after kopf started."""
        with self._lock:
            self._open = True
            loop, toggle = self._loop, self._toggle
        if loop is not None and toggle is not None:
            asyncio.run_coroutine_threadsafe(toggle.turn_to(False), loop)


class Leadership:
    """The election of one operator process: started before kopf runs, stopped after it returns."""

    def __init__(self, settings: OperatorSettings) -> None:
        self.me = identity(settings)
        self.lease = _LeaseObject(settings.namespace, settings.lease_name, settings.retry_period_seconds)
        timing = Timing(
            settings.lease_seconds, settings.renew_deadline_seconds, settings.retry_period_seconds
        )
        self.elector = Elector(self.lease, self.me, timing)
        self._gate = _Gate()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._holder = ""

    @property
    def where(self) -> str:
        return f"Lease {self.lease.namespace}/{self.lease.name}"

    def start(self) -> None:
        metrics.LEADER.set(0)
        self._gate.install()
        log.info("%s: competing for %s", self.me, self.where)
        for target, name in ((self._elect, "leader-election"), (self._watch, "leader-watchdog")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def _elect(self) -> None:
        while not self._stop.is_set():
            try:
                self.elector.run(self._stop, self._changed, seen=self._seen)
            except Exception:  # never leave the election silently: a leader's watchdog still runs
                log.exception("leader election failed; retrying")
                self._stop.wait(self.elector.timing.retry)

    def _watch(self) -> None:
        """The deadline, checked on a thread of its own: a blocked event loop or API call cannot delay it."""
        while not self._stop.wait(_WATCHDOG_SECONDS):
            if self.elector.expired():
                self._stop_acting(f"not renewed within {self.elector.timing.renew_deadline:g} s")

    def _seen(self, holder: str) -> None:
        if holder != self._holder and not self.elector.leading:
            self._holder = holder
            log.info("%s is held by %s; this replica waits", self.where, holder or "nobody")

    def _changed(self, leading: bool) -> None:
        if not leading:
            self._stop_acting("another replica holds it" if self.elector.holder else "lost")
        metrics.LEADER.set(1)
        before = self.elector.previous_holder
        message = f"{self.me} became leader" + (f", taking over from {before}" if before else "")
        log.info("%s: %s", self.where, message)
        self._gate.open()
        # Beside the election, which never waits for it.
        threading.Thread(target=self._event, args=(message,), name="leader-event", daemon=True).start()

    def _stop_acting(self, why: str) -> NoReturn:
        """Exit now: no handler, timer or worker thread of this process acts any more."""
        log.critical("%s lost (%s): exiting so that nothing acts past the lease", self.where, why)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(LOST_LEASE_EXIT)

    def _event(self, message: str) -> None:
        """An Event on the Lease (`kubectl describe lease`), reason LeaderElection as client-go's."""
        ref = kube.ObjectRef(kube.LEASES, self.lease.namespace, self.lease.name)
        try:
            kube.post_event(
                ref, self.lease.uid, "LeaderElection", message, component=COMPONENT, instance=self.me
            )
        except kube.KubeApiError as exc:
            log.warning("Event on %s not posted: %s", self.where, exc)

    def stop(self) -> None:
        """After kopf returned (everything it ran has finished): give the lease up, so another replica
        takes over without waiting for it to expire."""
        self._stop.set()
        for thread in self._threads:
            thread.join(self.elector.timing.renew_deadline)
        if self.elector.leading and self.elector.release():
            metrics.LEADER.set(0)
            message = f"{self.me} stopped leading and released the lease"
            log.info("%s: %s", self.where, message)
            self._event(message)
