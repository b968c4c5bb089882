"""client-go's leader election rules (ebb_operator/election.py) on an injected clock.

The store here is a fake of the Lease object kept in memory, named as such: it keeps what the rules rely
on, a record with a version that a write must name (the API server's resourceVersion, 409 otherwise), and
can be made unreachable for one candidate. The real Lease is exercised by the k8s tier
(tests/k8s/operator/test_operator_leader_election.py)."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from ebb_operator.election import Elector, LeaseConflict, LeaseRecord, Timing

TIMING = Timing(lease=12.0, renew_deadline=8.0, retry=2.0)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class MemoryLease:
    """The Lease object, faked in memory: versioned writes, 409-like conflicts."""

    def __init__(self) -> None:
        self.record: LeaseRecord | None = None
        self.version = 0
        self.writes = 0

    def get(self) -> tuple[LeaseRecord, str] | None:
        return None if self.record is None else (self.record, str(self.version))

    def create(self, record: LeaseRecord) -> str:
        if self.record is not None:
            raise LeaseConflict("exists")
        return self._write(record)

    def update(self, record: LeaseRecord, version: str) -> str:
        if self.record is None or version != str(self.version):
            raise LeaseConflict(f"version {version} is not {self.version}")
        return self._write(record)

    def _write(self, record: LeaseRecord) -> str:
        self.record, self.version, self.writes = record, self.version + 1, self.writes + 1
        return str(self.version)


class Partitioned:
    """One candidate's view of the store: raises (no answer) while `cut` is set."""

    def __init__(self, store: MemoryLease) -> None:
        self.store = store
        self.cut = False
        self.before_write: Callable[[], None] = lambda: None

    def _check(self) -> None:
        if self.cut:
            raise TimeoutError("the API server does not answer")

    def get(self) -> tuple[LeaseRecord, str] | None:
        self._check()
        return self.store.get()

    def create(self, record: LeaseRecord) -> str:
        self._check()
        self.before_write()
        return self.store.create(record)

    def update(self, record: LeaseRecord, version: str) -> str:
        self._check()
        self.before_write()
        return self.store.update(record, version)


def candidate(store: MemoryLease | Partitioned, name: str, clock: Clock, timing: Timing = TIMING) -> Elector:
    return Elector(store, name, timing, clock=clock)


def test_the_first_candidate_creates_the_lease_and_the_second_waits() -> None:
    clock, store = Clock(), MemoryLease()
    a, b = candidate(store, "a", clock), candidate(store, "b", clock)
    assert a.try_acquire_or_renew() and a.leading
    assert store.record is not None and store.record.holder == "a" and store.record.lease_seconds == 12
    assert not b.try_acquire_or_renew() and not b.leading and b.holder == "a"


def test_a_candidate_takes_over_only_a_full_lease_after_the_last_change_it_saw() -> None:
    clock, store = Clock(), MemoryLease()
    a, b = candidate(store, "a", clock), candidate(store, "b", clock)
    a.try_acquire_or_renew()
    for _ in range(3):  # a renews every 2 s; b sees every renewal as a change
        clock.now += 2
        assert a.try_acquire_or_renew()
        assert not b.try_acquire_or_renew()
    last_seen = clock.now
    # a is gone (kill -9): the record stops changing. b measures on its own clock from when it saw it last.
    while clock.now < last_seen + 12 - 0.1:
        clock.now += 0.1
        assert not b.try_acquire_or_renew(), f"taken {clock.now - last_seen:.1f} s after the last renewal"
    clock.now = last_seen + 12
    assert b.try_acquire_or_renew() and b.leading
    assert store.record is not None
    assert (store.record.holder, store.record.transitions, b.previous_holder) == ("b", 1, "a")


def test_a_candidate_wakes_up_when_the_lease_it_waits_for_expires() -> None:
    clock, store = Clock(), MemoryLease()
    a, b = candidate(store, "a", clock), candidate(store, "b", clock)
    a.try_acquire_or_renew()
    b.try_acquire_or_renew()
    assert TIMING.retry <= b.wait() <= TIMING.retry * 1.2  # far from expiry: the jittered retry
    clock.now += 11.5
    assert b.wait() == pytest.approx(0.55)  # 0.5 s before expiry: it tries right after it
    assert a.wait() == TIMING.retry  # a leader renews every retry period


@pytest.mark.parametrize("phase", [0.0, 0.3, 0.9, 1.5, 1.99])
@pytest.mark.parametrize("cut_at", [0.05, 1.0, 1.95])
def test_a_leader_that_cannot_renew_stops_before_another_can_take_over(phase: float, cut_at: float) -> None:
    """a loses the API server (b still reaches it) at `cut_at` within a renewal period, b polls at `phase`
    within it: at every tick of 10 ms, a acts (leads, deadline not passed) only while b does not lead."""
    clock, store = Clock(), MemoryLease()
    a_view = Partitioned(store)
    a, b = candidate(a_view, "a", clock), candidate(store, "b", clock)
    start = clock.now
    a.try_acquire_or_renew()
    next_a, next_b = start + TIMING.retry, start + phase
    a_stopped = b_leads = None
    for tick in itertools.count():
        clock.now = start + tick * 0.01
        if clock.now >= start + 4 + cut_at:
            a_view.cut = True
        if clock.now >= next_a:
            a.try_acquire_or_renew()
            next_a = clock.now + TIMING.retry
        if clock.now >= next_b:
            b.try_acquire_or_renew()
            next_b = clock.now + b.wait()
        a_acts = a.leading and not a.expired()
        if not a_acts and a_stopped is None:
            a_stopped = clock.now
        if b.leading and b_leads is None:
            b_leads = clock.now
        assert not (a_acts and b.leading), f"both act at {clock.now - start:.2f} s"
        if b_leads is not None:
            break
    assert a_stopped is not None and b_leads is not None
    # a stops 8 s after its last successful renewal; b takes over 12 s after it saw that renewal.
    assert b_leads - a_stopped >= TIMING.lease - TIMING.renew_deadline - TIMING.retry * 1.2


def test_of_two_candidates_racing_for_an_expired_lease_one_wins() -> None:
    clock, store = Clock(), MemoryLease()
    gone = candidate(store, "gone", clock)
    gone.try_acquire_or_renew()
    b_view, c_view = Partitioned(store), Partitioned(store)
    b, c = candidate(b_view, "b", clock), candidate(c_view, "c", clock)
    b.try_acquire_or_renew()
    c.try_acquire_or_renew()
    clock.now += 12
    # Both read the expired record; c's write lands between b's read and b's write.

    def c_first() -> None:
        c.try_acquire_or_renew()

    b_view.before_write = c_first
    assert not b.try_acquire_or_renew()
    assert c.leading and not b.leading
    assert store.record is not None and store.record.holder == "c"
    assert not b.try_acquire_or_renew()  # b now sees c's fresh record: it waits a full lease again


def test_a_released_lease_is_taken_at_once() -> None:
    clock, store = Clock(), MemoryLease()
    a, b = candidate(store, "a", clock), candidate(store, "b", clock)
    a.try_acquire_or_renew()
    b.try_acquire_or_renew()
    assert a.release() and not a.leading
    assert store.record is not None and store.record.holder == ""
    clock.now += 0.1
    assert b.try_acquire_or_renew() and b.leading


def test_a_restarted_process_of_the_same_identity_renews_at_once() -> None:
    """In a pod the identity is the pod's name: a restarted container's process does not wait for the
    lease its dead predecessor held."""
    clock, store = Clock(), MemoryLease()
    candidate(store, "pod-a", clock).try_acquire_or_renew()
    clock.now += 1
    again = candidate(store, "pod-a", clock)
    assert again.try_acquire_or_renew() and again.leading
    assert store.record is not None and store.record.transitions == 0


def test_a_longer_lease_asked_for_by_the_holder_is_honoured() -> None:
    """During an upgrade that lengthens the lease, a candidate with the old setting waits the holder's."""
    clock, store = Clock(), MemoryLease()
    candidate(store, "new", clock, Timing(lease=30, renew_deadline=20, retry=2)).try_acquire_or_renew()
    old = candidate(store, "old", clock)
    old.try_acquire_or_renew()
    clock.now += 20
    assert not old.try_acquire_or_renew()
    clock.now += 10
    assert old.try_acquire_or_renew()


def test_a_leader_that_finds_another_holder_stops_at_once() -> None:
    clock, store = Clock(), MemoryLease()
    a = candidate(store, "a", clock)
    a.try_acquire_or_renew()
    assert store.record is not None
    store.update(LeaseRecord("b", 12), str(store.version))  # e.g. an admin edited the Lease
    assert not a.try_acquire_or_renew()
    assert not a.leading and a.holder == "b"


def test_a_leader_renews_with_one_write_and_no_read(monkeypatch: pytest.MonkeyPatch) -> None:
    clock, store = Clock(), MemoryLease()
    reads = 0
    get = store.get

    def counting() -> tuple[LeaseRecord, str] | None:
        nonlocal reads
        reads += 1
        return get()

    monkeypatch.setattr(store, "get", counting)
    a = candidate(store, "a", clock)
    a.try_acquire_or_renew()
    reads, writes = 0, store.writes
    for _ in range(5):
        clock.now += 2
        assert a.try_acquire_or_renew()
    assert (reads, store.writes - writes) == (0, 5)
