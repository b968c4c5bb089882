"""Both offsets sources against real group coordinators: the `__consumer_offsets` data source and the
Admin API source (OffsetFetch for many groups per request, KIP-709).

Apache Kafka's own coordinator and ebb-broker's write the topic; real groups commit through real clients;
the truth each assertion compares with is what the coordinator itself serves (OffsetFetch through the
admin API) or what the clients did. Transactional offset commits exist only on Apache Kafka (ebb-broker
does not implement transactions), so that case runs against it alone.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import SparkSession

from ebb_operator.analysis.catalog import Catalog, unlisted_partition
from ebb_operator.analysis.commits_admin import read_committed_offsets
from ebb_operator.analysis.offsets_source import latest_commits, latest_group_metadata, read_offsets_topic
from ebb_operator.analysis.snapshot import PartitionState, TopicState
from ebb_operator.kafka import ClusterAdmin, ClusterConnection
from harness.bounded import close_within, wait_until
from harness.ebb_broker import EbbBroker


@pytest.fixture(scope="module")
def ebb_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EbbBroker]:
    broker = EbbBroker(
        tmp_path_factory.mktemp("ebb-offsets") / "data",
        # As the Apache Kafka harness: no initial rebalance delay for the group this module joins.
        configs={"offsets.topic.num.partitions": "4", "group.initial.rebalance.delay.ms": "0"},
    )
    broker.start()
    yield broker
    assert broker.stop() == 0


@pytest.fixture(scope="module", params=["apache-kafka", "ebb-broker"])
def bootstrap(request: pytest.FixtureRequest) -> str:
    if request.param == "apache-kafka":
        return str(request.getfixturevalue("apache_kafka_broker").bootstrap_servers)
    return str(request.getfixturevalue("ebb_broker").bootstrap)


def _topic_with_records(bootstrap: str) -> tuple[ClusterConnection, str]:
    """A topic of 2 partitions with 20 records each; its name is unique."""
    conn = ClusterConnection.of(bootstrap)
    topic = f"src-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": conn.bootstrap_servers})
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": conn.bootstrap_servers, "linger.ms": 0})
    for p in range(2):
        for i in range(20):
            producer.produce(topic, value=b"v%d" % i, partition=p)
    assert producer.flush(30) == 0
    return conn, topic


@pytest.fixture(scope="module")
def cluster(bootstrap: str) -> tuple[ClusterConnection, str]:
    return _topic_with_records(bootstrap)


def commit(conn: ClusterConnection, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit as a group with no live member (generation -1), as admin tools and simple consumers do."""
    c = Consumer(
        {"bootstrap.servers": conn.bootstrap_servers, "group.id": group, "enable.auto.commit": False}
    )
    try:
        c.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False)
    finally:
        close_within(c)


def coordinator_view(
    conn: ClusterConnection, groups: list[str], topic: str
) -> set[tuple[str, str, int, int]]:
    with ClusterAdmin(conn) as admin:
        return {
            (g, tp.topic, tp.partition, off)
            for g in groups
            for tp, off in admin.committed_offsets(g).items()
            if tp.topic == topic
        }


def test_latest_commit_per_key_matches_what_the_coordinator_serves(
    spark: SparkSession, cluster: tuple[ClusterConnection, str]
) -> None:
    conn, topic = cluster
    tag = uuid.uuid4().hex[:6]
    g1, g2, gone = f"g1-{tag}", f"g2-{tag}", f"gone-{tag}"
    before = int(time.time() * 1000)
    commit(conn, g1, {(topic, 0): 5})
    commit(conn, g1, {(topic, 0): 7, (topic, 1): 3})  # the later commit of (g1, topic, 0) wins
    commit(conn, g2, {(topic, 0): 2, (topic, 1): 20})
    commit(conn, gone, {(topic, 0): 9})
    # Deleting a group makes the coordinator write tombstones for its offsets and its metadata.
    admin = AdminClient(
        {"bootstrap.servers": conn.bootstrap_servers}
    )  # kept referenced: a dropped client never completes futures
    admin.delete_consumer_groups([gone], request_timeout=30)[gone].result(40)

    raw = read_offsets_topic(spark, conn, maxRecordsPerSplit="3")  # small ranges: many parallel splits
    assert raw.rdd.getNumPartitions() > 1
    rows = latest_commits(raw).filter(f"topic = '{topic}'").collect()
    got = {(r.group, r.topic, r.partition, r.committed_offset) for r in rows}
    assert got == {(g1, topic, 0, 7), (g1, topic, 1, 3), (g2, topic, 0, 2), (g2, topic, 1, 20)}
    assert got == coordinator_view(conn, [g1, g2, gone], topic)
    after = int(time.time() * 1000)
    assert all(before - 1000 <= r.commit_timestamp <= after + 1000 for r in rows)

    # Splitting the topic differently (one range per partition) gives the same answer.
    whole = latest_commits(read_offsets_topic(spark, conn)).filter(f"topic = '{topic}'").collect()
    assert {(r.group, r.topic, r.partition, r.committed_offset) for r in whole} == got


def test_group_metadata_shows_members_and_subscriptions(
    spark: SparkSession, cluster: tuple[ClusterConnection, str]
) -> None:
    conn, topic = cluster
    group = f"live-{uuid.uuid4().hex[:6]}"
    consumer = Consumer(
        {
            "bootstrap.servers": conn.bootstrap_servers,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([topic])

        def joined() -> list[Any]:
            consumer.poll(0.5)
            return list(consumer.assignment())

        wait_until("the consumer joined its group", joined, 60, interval=0)
        live = latest_group_metadata(read_offsets_topic(spark, conn)).filter(f"group = '{group}'").collect()
        assert [(r.protocol_type, r.members, r.subscribed_topics) for r in live] == [("consumer", 1, [topic])]
    finally:
        close_within(consumer)
    # After the member leaves, the coordinator stores the group with no members.
    rows = wait_until(
        "the group stored without members",
        lambda: latest_group_metadata(read_offsets_topic(spark, conn)).filter(f"group = '{group}'").collect(),
        30,
        until=lambda rows: bool(rows) and rows[0].members == 0,
        interval=0.5,
    )
    assert [(r.members, r.subscribed_topics) for r in rows] == [(0, [])]


def test_aborted_transactional_commit_is_not_a_commit(spark: SparkSession, bootstrap: str) -> None:
    """On both brokers the reader (read_committed) and the coordinator ignore an aborted TxnOffsetCommit."""
    conn, topic = _topic_with_records(bootstrap)
    group = f"tx-{uuid.uuid4().hex[:6]}"
    commit(conn, group, {(topic, 0): 4})
    producer = Producer({"bootstrap.servers": conn.bootstrap_servers, "transactional.id": f"tx-{group}"})
    producer.init_transactions(30)
    probe = Consumer(
        {"bootstrap.servers": conn.bootstrap_servers, "group.id": group, "enable.auto.commit": False}
    )
    try:
        producer.begin_transaction()
        producer.send_offsets_to_transaction(
            [TopicPartition(topic, 0, 15)], probe.consumer_group_metadata(), 30
        )
        producer.abort_transaction(30)
    finally:
        close_within(probe)
    rows = latest_commits(read_offsets_topic(spark, conn)).filter(f"group = '{group}'").collect()
    assert [(r.partition, r.committed_offset) for r in rows] == [(0, 4)]
    assert coordinator_view(conn, [group], topic) == {(group, topic, 0, 4)}


def test_admin_api_source_reads_what_the_coordinator_serves(
    spark: SparkSession, cluster: tuple[ClusterConnection, str]
) -> None:
    """Many groups, spread over several Spark tasks, each read in one batched OffsetFetch."""
    conn, topic = cluster
    groups = sorted(f"adm-{uuid.uuid4().hex[:6]}-{i}" for i in range(7))
    for i, g in enumerate(groups):
        commit(conn, g, {(topic, 0): i + 1, (topic, 1): 10 + i})
    partitions = [PartitionState(topic, p, 0, 20, None, 0, None) for p in (0, 1)]
    catalog = Catalog.of(groups, len(groups), [TopicState(topic, "delete", None)], partitions)
    rows = read_committed_offsets(spark, conn, catalog, groups_per_split=3).collect()
    assert {
        (
            catalog.groups[r.gid],
            catalog.topics[r.tid].topic,
            catalog.partitions[r.tp].partition,
            r.committed_offset,
        )
        for r in rows
    } == coordinator_view(conn, groups, topic)
    # One row per group and topic says the group reads it (how the plan counts a topic's readers).
    assert len(rows) == 14 and sorted(r.gid for r in rows if r.first_of_topic) == list(range(7))

    # A partition the snapshot does not list (the topic grew since): one row per group, marked as such.
    grown = Catalog.of(groups, len(groups), [TopicState(topic, "delete", None)], partitions[:1])
    rows = read_committed_offsets(spark, conn, grown).collect()
    assert sorted((r.gid, r.tp) for r in rows) == sorted(
        (g, tp) for g in range(7) for tp in (0, unlisted_partition(0))
    )
