"""One admin client per cluster, reused across calls, closed when unused (the operator opened over
1,000 clients in an 8-minute test run before)."""

from __future__ import annotations

import threading

import pytest
from kafka.errors import NodeNotReadyError, UnknownTopicOrPartitionError

from ebb_operator.kafka import AdminPool, ClusterAdmin, ClusterConnection


class FakeAdmin(ClusterAdmin):
    """Stands in for ClusterAdmin, without its Kafka client (no connection, no admin call): the pool's
    bookkeeping is what is tested here (the real client is exercised against real brokers in the k8s and
    e2e tiers)."""

    def __init__(self, conn: ClusterConnection, timeout: float) -> None:
        self.connection, self.timeout, self.closed = conn, timeout, False

    def close(self) -> None:
        self.closed = True


def fake(admin: ClusterAdmin) -> FakeAdmin:
    """The pool's client for this call: the FakeAdmin its factory made."""
    assert isinstance(admin, FakeAdmin)
    return admin


def test_one_client_per_cluster_reused_across_calls() -> None:
    pool = AdminPool(factory=FakeAdmin)
    a, b = ClusterConnection.of("a:1"), ClusterConnection.of("b:1")
    seen = [pool.run(a, lambda admin: admin) for _ in range(50)] + [pool.run(b, lambda admin: admin)]
    assert pool.created == 2 and len({id(x) for x in seen}) == 2


class Clock:
    """The pool's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def test_clients_unused_for_the_idle_time_are_closed() -> None:
    clock = Clock()
    pool = AdminPool(idle_seconds=60, factory=FakeAdmin, clock=clock)
    a, b = ClusterConnection.of("a:1"), ClusterConnection.of("b:1")
    first = pool.run(a, fake)
    clock.now += 59
    pool.run(b, lambda admin: admin)
    assert not first.closed and pool.open_clients() == 2  # not idle long enough yet
    clock.now += 2
    pool.run(b, lambda admin: admin)  # a later call closes what idled
    assert first.closed and pool.open_clients() == 1
    assert pool.run(a, lambda admin: admin) is not first and pool.created == 3


def test_calls_on_one_cluster_are_serialised() -> None:
    pool = AdminPool(factory=FakeAdmin)
    conn, inside, overlap = ClusterConnection.of("a:1"), [0], []
    first_inside, go = threading.Event(), threading.Event()

    def call(_: object) -> None:
        inside[0] += 1
        overlap.append(inside[0])
        first_inside.set()
        go.wait(30)  # the first call stays inside while the others start
        inside[0] -= 1

    first = threading.Thread(target=pool.run, args=(conn, call))
    first.start()
    assert first_inside.wait(30)
    others = [threading.Thread(target=pool.run, args=(conn, call)) for _ in range(7)]
    for t in others:
        t.start()
    go.set()
    for t in [first, *others]:
        t.join(30)
    assert max(overlap) == 1 and len(overlap) == 8


def test_a_client_that_lost_its_brokers_is_replaced_and_one_refused_call_keeps_it() -> None:
    """After a broker restart kafka-python can stay stuck on the old addresses: the next call bootstraps a
    new client. An error the cluster answered says nothing about the connection, so the client stays."""
    pool = AdminPool(factory=FakeAdmin)
    conn = ClusterConnection.of("a:1")
    first = pool.run(conn, fake)

    def refused(_: object) -> None:
        raise UnknownTopicOrPartitionError("no such topic")

    def lost(_: object) -> None:
        raise NodeNotReadyError("No node_id provided")

    with pytest.raises(UnknownTopicOrPartitionError, match="no such topic"):
        pool.run(conn, refused)
    assert pool.run(conn, lambda admin: admin) is first and not first.closed
    with pytest.raises(NodeNotReadyError, match="No node_id provided"):
        pool.run(conn, lost)
    assert first.closed
    assert pool.run(conn, lambda admin: admin) is not first and pool.created == 2


def test_reset_closes_one_clusters_client_and_the_next_call_bootstraps_anew() -> None:
    """A leader the client has never met (its broker came back after the client bootstrapped): the
    DeleteRecords planner resets the cluster's client, and only that cluster's."""
    pool = AdminPool(factory=FakeAdmin)
    a, b = ClusterConnection.of("a:1"), ClusterConnection.of("b:1")
    first, other = pool.run(a, fake), pool.run(b, fake)
    pool.reset(a)
    pool.reset(ClusterConnection.of("never-used:1"))  # nothing to close
    assert first.closed and not other.closed
    assert pool.run(a, fake) is not first and pool.run(b, fake) is other and pool.created == 3


def test_a_request_to_an_unknown_leader_is_a_retriable_failure() -> None:
    """kafka-python raises UnknownBrokerIdError for a partition whose leader is -1 (none: an election, its
    only replica's broker down) or a broker its metadata lacks; both end when metadata catches up."""
    from kafka.errors import UnknownBrokerIdError

    from ebb_operator.kafka import UNKNOWN_BROKER
    from ebb_operator.kafka.admin import failure_of

    leaderless, unmet = failure_of(UnknownBrokerIdError(-1)), failure_of(UnknownBrokerIdError(3))
    assert (leaderless.code, leaderless.retriable) == ("LEADER_NOT_AVAILABLE", True)
    assert (unmet.code, unmet.retriable) == (UNKNOWN_BROKER, True) and "broker 3" in unmet.message
