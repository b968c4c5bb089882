"""Group administration, offsets that survive restarts, multi-group OffsetFetch, and /metrics."""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, ConsumerGroupState, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.consumer.group import OffsetFetchRequest, OffsetFetchResponse

from harness.bounded import close_within, until
from harness.ebb_broker import EbbBroker
from tests.compat.clients import polled
from tests.compat.wire import Wire


def _admin(bootstrap: str, topic: str, partitions: int = 2) -> AdminClient:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    return admin


def _commit(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False)
    finally:
        close_within(c)


def _committed(admin: AdminClient, group: str, topic: str, partitions: int) -> dict[int, int]:
    req = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(partitions)])
    res = admin.list_consumer_group_offsets([req])[group].result(30)
    return {tp.partition: tp.offset for tp in res.topic_partitions}


def test_list_describe_and_delete_groups(broker: EbbBroker, topic: str) -> None:
    admin = _admin(broker.bootstrap, topic)
    group = f"g-{topic}"
    member = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "client.id": "member-1"})
    member.subscribe([topic])
    try:
        until("the member's assignment", lambda: polled(member).assignment(), 30, interval=0)
        listed = admin.list_consumer_groups().result(30)
        assert group in {g.group_id for g in listed.valid}
        desc = admin.describe_consumer_groups([group])[group].result(30)
        assert desc.state == ConsumerGroupState.STABLE
        assert [m.client_id for m in desc.members] == ["member-1"]
        assert {tp.partition for tp in desc.members[0].assignment.topic_partitions} == {0, 1}
        # A group with members cannot be deleted (NON_EMPTY_GROUP).
        with pytest.raises(Exception, match=r"NON_EMPTY_GROUP|not empty"):
            admin.delete_consumer_groups([group])[group].result(30)
        member.commit(offsets=[TopicPartition(topic, 0, 3)], asynchronous=False)
    finally:
        close_within(member)
    assert _committed(admin, group, topic, 1) == {0: 3}
    admin.delete_consumer_groups([group])[group].result(30)
    assert group not in {g.group_id for g in admin.list_consumer_groups().result(30).valid}
    assert _committed(admin, group, topic, 1) == {0: -1001}  # librdkafka's "no committed offset"


def test_offsets_and_deletions_survive_a_restart(broker_factory: Callable[..., EbbBroker]) -> None:
    b = broker_factory()
    admin = _admin(b.bootstrap, "orders")
    _commit(b.bootstrap, "keep", {("orders", 0): 5, ("orders", 1): 7})
    _commit(b.bootstrap, "drop", {("orders", 0): 2})
    admin.delete_consumer_groups(["drop"])["drop"].result(30)
    b.restart()
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    assert _committed(admin, "keep", "orders", 2) == {0: 5, 1: 7}
    assert _committed(admin, "drop", "orders", 1) == {0: -1001}
    # After a kill -9 too: commits are in __consumer_offsets before they are acknowledged.
    _commit(b.bootstrap, "keep", {("orders", 0): 9})
    b.restart(kill=True)
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    assert _committed(admin, "keep", "orders", 2) == {0: 9, 1: 7}


def test_deleting_a_topic_removes_its_committed_offsets(broker_factory: Callable[..., EbbBroker]) -> None:
    """A topic deleted and re-created with the same name shows no stale commit to OffsetFetch (Kafka's
    coordinator removes a deleted topic's offsets), for any group, also after a restart (tombstones in
    __consumer_offsets); the group's commits of other topics stay."""
    b = broker_factory()
    admin = _admin(b.bootstrap, "reborn")
    _admin(b.bootstrap, "other", 1)
    _commit(b.bootstrap, "app", {("reborn", 0): 5, ("reborn", 1): 7, ("other", 0): 3})
    _commit(b.bootstrap, "audit", {("reborn", 1): 2})
    assert _committed(admin, "app", "reborn", 2) == {0: 5, 1: 7}  # the commits landed
    admin.delete_topics(["reborn"])["reborn"].result(30)
    admin.create_topics([NewTopic("reborn", 2, 1)])["reborn"].result(30)
    assert _committed(admin, "app", "reborn", 2) == {0: -1001, 1: -1001}
    assert _committed(admin, "audit", "reborn", 2) == {0: -1001, 1: -1001}
    assert _committed(admin, "app", "other", 1) == {0: 3}
    b.restart(kill=True)
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    assert _committed(admin, "app", "reborn", 2) == {0: -1001, 1: -1001}
    assert _committed(admin, "audit", "reborn", 2) == {0: -1001, 1: -1001}
    assert _committed(admin, "app", "other", 1) == {0: 3}


def test_offset_fetch_v8_answers_several_groups_at_once(broker: EbbBroker, topic: str) -> None:
    _admin(broker.bootstrap, topic, partitions=1)
    _commit(broker.bootstrap, f"a-{topic}", {(topic, 0): 4})
    _commit(broker.bootstrap, f"b-{topic}", {(topic, 0): 6})
    R = OffsetFetchRequest[8]
    G = R.OffsetFetchRequestGroup
    req = R(
        groups=[
            G(group_id=f"{x}-{topic}", topics=[G.OffsetFetchRequestTopics(name=topic, partition_indexes=[0])])
            for x in ("a", "b", "c")
        ],
        require_stable=False,
    )
    w = Wire(broker.bootstrap)
    try:
        w.send_raw(w.frame(req, 8))
        resp = OffsetFetchResponse.decode(w.recv_frame(), version=8, header=True)
    finally:
        w.close()
    got = {g.group_id: g.topics[0].partitions[0].committed_offset for g in resp.groups}
    assert got == {f"a-{topic}": 4, f"b-{topic}": 6, f"c-{topic}": -1}


def test_metrics_endpoint_reports_requests_and_low_watermarks(
    broker_factory: Callable[..., EbbBroker],
) -> None:
    b = broker_factory()
    port = b.metrics_port
    admin = _admin(b.bootstrap, "m", partitions=1)
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": b.bootstrap})
    for i in range(10):
        p.produce("m", str(i).encode(), partition=0)
    p.flush(10)
    for deleted in admin.delete_records([TopicPartition("m", 0, 4)]).values():
        assert deleted.result(30).low_watermark == 4  # answered: the broker counted the deletion before
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    assert 'ebb_log_start_offset{partition="0",topic="m"} 4.0' in text
    assert 'ebb_high_watermark{partition="0",topic="m"} 10.0' in text
    assert 'ebb_requests_total{api="Produce"}' in text
    assert 'ebb_records_deleted_total{reason="delete_records"} 4.0' in text


_CRASHING_MEMBER = """
import sys, time
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "session.timeout.ms": 6000,
              "heartbeat.interval.ms": 500})
c.subscribe([sys.argv[3]])
while True:
    c.poll(0.2)
    if c.assignment():
        print("assigned", flush=True)
"""


def test_a_member_that_dies_is_expired_after_its_session_timeout(broker: EbbBroker, topic: str) -> None:
    import subprocess
    import sys
    import threading

    _admin(broker.bootstrap, topic, partitions=2)
    group = f"g-{topic}"
    survivor = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": group,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
        }
    )
    survivor.subscribe([topic])
    doomed = subprocess.Popen(
        [sys.executable, "-c", _CRASHING_MEMBER, broker.bootstrap, group, topic],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assigned = threading.Event()
    out = doomed.stdout
    assert out is not None
    reader = threading.Thread(target=lambda: out.readline() and assigned.set(), daemon=True)
    reader.start()
    try:
        # The survivor must keep polling: librdkafka completes its side of a rebalance in poll().
        until(
            "the two members sharing 2 partitions",
            lambda: len(polled(survivor).assignment()) == 1 and assigned.is_set(),
            40,
            interval=0,
        )
        doomed.kill()  # no LeaveGroup: only the session timeout can remove it
        doomed.wait(10)
        killed_at = time.monotonic()
        until("the survivor given both partitions", lambda: len(polled(survivor).assignment()) == 2, 30, 0)
        assert {tp.partition for tp in survivor.assignment()} == {0, 1}
        assert time.monotonic() - killed_at >= 5, "expired before its 6 s session timeout"
    finally:
        doomed.kill()
        doomed.wait(10)
        reader.join(10)  # the child is gone: its readline has its end of file
        out.close()
        close_within(survivor)
