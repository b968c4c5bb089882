"""Transactions (KIP-98, KIP-447) with librdkafka's transactional producer, read_committed consumers and
`kafka-transactions.sh`, asserted alike against ebb-broker and Apache Kafka 4.3.1 (the tier's shared
brokers)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
import uuid
from dataclasses import dataclass

import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from harness.bounded import close_within, until
from harness.kafka import java_command, kafka_tool
from tests.compat.clients import polled


@dataclass(frozen=True)
class Target:
    name: str
    bootstrap: str


@pytest.fixture(params=["ebb-broker", "apache-kafka"])
def target(request: pytest.FixtureRequest) -> Target:
    if request.param == "ebb-broker":
        return Target("ebb-broker", request.getfixturevalue("broker").bootstrap)
    return Target("apache-kafka", request.getfixturevalue("apache_kafka_broker").bootstrap_servers)


def _topic(target: Target, partitions: int = 1) -> str:
    name = f"txn-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": target.bootstrap})  # kept alive until the result is in
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)
    return name


def _producer(target: Target, transactional_id: str) -> Producer:
    p = Producer(
        {"bootstrap.servers": target.bootstrap, "transactional.id": transactional_id, "linger.ms": 0}
    )
    p.init_transactions(60)
    return p


def _read(target: Target, topic: str, isolation: str, settle: float = 0.0) -> list[bytes]:
    """Every value a consumer with this isolation level reads from partition 0, to the end it sees."""
    c = Consumer(
        {
            "bootstrap.servers": target.bootstrap,
            "group.id": f"reader-{uuid.uuid4().hex[:8]}",
            "isolation.level": isolation,
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    values: list[bytes] = []
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        at_end_since: float | None = None

        def read_to_end() -> bool:
            nonlocal at_end_since
            msg = c.poll(0.2)
            error = msg.error() if msg is not None else None
            if msg is not None and error is None:
                values.append(msg.value() or b"")
                at_end_since = None
            elif error is not None and error.code() == -191:  # _PARTITION_EOF
                at_end_since = at_end_since or time.monotonic()
            return at_end_since is not None and time.monotonic() - at_end_since >= settle

        until(f"the {isolation} consumer at the end of {topic}", read_to_end, 30, interval=0)
        return values
    finally:
        close_within(c, what="reader")


def _high_watermark(target: Target, topic: str, isolation: str) -> int:
    """ListOffsets LATEST with the isolation level (the last stable offset for read_committed)."""
    c = Consumer(
        {
            "bootstrap.servers": target.bootstrap,
            "group.id": f"wm-{uuid.uuid4().hex[:8]}",
            "isolation.level": isolation,
        }
    )
    try:
        return int(c.get_watermark_offsets(TopicPartition(topic, 0), timeout=30, cached=False)[1])
    finally:
        close_within(c, what="watermark reader")


def _close(p: Producer) -> None:
    p.flush(10)


def test_read_committed_consumers_read_committed_transactions_only(target: Target) -> None:
    """Committed, aborted, committed: read_committed skips the aborted records (Fetch's aborted
    transactions), read_uncommitted sees them; each transaction ends with a marker offset."""
    topic = _topic(target)
    p = _producer(target, f"tx-{topic}")
    for prefix, commit, n in ((b"c", True, 5), (b"a", False, 3), (b"d", True, 2)):
        p.begin_transaction()
        for i in range(n):
            p.produce(topic, value=prefix + str(i).encode(), partition=0)
        p.flush(10)
        (p.commit_transaction if commit else p.abort_transaction)(30)
    committed = [b"c0", b"c1", b"c2", b"c3", b"c4", b"d0", b"d1"]
    assert _read(target, topic, "read_committed") == committed
    assert _read(target, topic, "read_uncommitted") == [*committed[:5], b"a0", b"a1", b"a2", *committed[5:]]
    assert _high_watermark(target, topic, "read_uncommitted") == 13  # 10 records and 3 markers


def test_an_open_transaction_holds_read_committed_consumers_at_the_last_stable_offset(target: Target) -> None:
    """Records after the first offset of an open transaction, even non-transactional ones, stay invisible
    to read_committed until it ends; ListOffsets answers the LSO; kafka-transactions.sh describes it."""
    topic = _topic(target)
    transactional_id = f"tx-{topic}"
    p = _producer(target, transactional_id)
    plain = Producer({"bootstrap.servers": target.bootstrap, "linger.ms": 0})
    try:
        plain.produce(topic, value=b"before", partition=0)
        plain.flush(10)
        p.begin_transaction()
        p.produce(topic, value=b"in-txn", partition=0)
        p.flush(10)
        plain.produce(topic, value=b"after", partition=0)
        plain.flush(10)
        assert _high_watermark(target, topic, "read_uncommitted") == 3
        assert _high_watermark(target, topic, "read_committed") == 1
        assert _read(target, topic, "read_committed", settle=1.0) == [b"before"]
        described = kafka_tool(
            "kafka-transactions", "--bootstrap-server", target.bootstrap,
            "describe", "--transactional-id", transactional_id,
        ).stdout  # fmt: skip
        header, row = (line.split() for line in described.strip().splitlines()[:2])
        fields = dict(zip(header, row, strict=False))
        assert (fields["TransactionState"], fields["TopicPartitions"]) == ("Ongoing", f"{topic}-0")
        producers = kafka_tool(
            "kafka-transactions", "--bootstrap-server", target.bootstrap,
            "describe-producers", "--topic", topic, "--partition", "0",
        ).stdout  # fmt: skip
        rows = [line.split() for line in producers.strip().splitlines()]
        by_column = [dict(zip(rows[0], row, strict=False)) for row in rows[1:]]
        # the transactional producer's open transaction starts at offset 1 (what find-hanging reads)
        assert [
            r["CurrentTransactionStartOffset"] for r in by_column if r["ProducerId"] == fields["ProducerId"]
        ] == ["1"]
        p.commit_transaction(30)
        assert _read(target, topic, "read_committed") == [b"before", b"in-txn", b"after"]
        assert _high_watermark(target, topic, "read_committed") == 4
    finally:
        _close(plain)


def _committed(target: Target, group: str, topic: str) -> int:
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])
    return int(admin.list_consumer_group_offsets([request])[group].result(30).topic_partitions[0].offset)


def test_offsets_sent_with_a_transaction_count_only_when_it_commits(target: Target) -> None:
    """Consume-transform-produce (KIP-447): the group's offset moves with the commit of the transaction
    that carries it, never with an abort."""
    source, sink = _topic(target), _topic(target)
    group = f"ctp-{source}"
    consumer = Consumer(
        {
            "bootstrap.servers": target.bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    p = _producer(target, f"tx-{source}")
    try:
        consumer.subscribe([source])
        until("the consumer's assignment", lambda: polled(consumer).assignment(), 30, 0)
        for offset, commit in ((5, False), (7, True)):
            p.begin_transaction()
            p.produce(sink, value=b"out-%d" % offset, partition=0)
            p.send_offsets_to_transaction(
                [TopicPartition(source, 0, offset)], consumer.consumer_group_metadata(), 30
            )
            (p.commit_transaction if commit else p.abort_transaction)(30)
            assert _committed(target, group, source) == (7 if commit else -1001)
        assert _read(target, sink, "read_committed") == [b"out-7"]
    finally:
        close_within(consumer, what="consumer")


def test_a_new_producer_instance_fences_the_old_one(target: Target) -> None:
    """InitProducerId with the same transactional id bumps the epoch and aborts the old instance's open
    transaction; the old instance's commit fails as fenced and its records never become visible."""
    topic = _topic(target)
    transactional_id = f"tx-{topic}"
    old = _producer(target, transactional_id)
    old.begin_transaction()
    old.produce(topic, value=b"zombie", partition=0)
    old.flush(10)
    new = _producer(target, transactional_id)
    with pytest.raises(KafkaException) as raised:
        old.commit_transaction(30)
    error = raised.value.args[0]
    assert error.fatal() or "fenced" in error.str().lower(), error
    new.begin_transaction()
    new.produce(topic, value=b"fresh", partition=0)
    new.commit_transaction(30)
    assert _read(target, topic, "read_committed") == [b"fresh"]


def test_javas_transactional_copier_and_read_committed_console_consumer_see_every_record_once(
    target: Target,
) -> None:
    """Apache Kafka's Java clients through the assembled jars: the tools' TransactionalMessageCopier
    (a transactional producer and a read_committed consumer that send their offsets with each transaction,
    KIP-447's group metadata, random aborts on) copies a partition; the Java console consumer with
    `--isolation-level read_committed` then reads every input record exactly once, in order, whatever was
    aborted on the way, and the group's committed offset is the input's end."""
    source, sink = _topic(target), _topic(target)
    group = f"copier-{source}"
    values = [b"v%03d" % i for i in range(300)]
    plain = Producer({"bootstrap.servers": target.bootstrap, "linger.ms": 5})
    for v in values:
        plain.produce(source, value=v, partition=0)
    _close(plain)
    copier = subprocess.run(
        java_command(
            "org.apache.kafka.tools.TransactionalMessageCopier",
            "--broker-list", target.bootstrap, "--input-topic", source, "--input-partition", "0",
            "--output-topic", sink, "--consumer-group", group, "--transactional-id", f"copier-{source}",
            "--transaction-size", "50", "--enable-random-aborts", "--use-group-metadata",
        ),
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert copier.returncode == 0, copier.stdout[-2000:] + copier.stderr[-2000:]
    progress = [json.loads(line) for line in copier.stdout.splitlines() if line.startswith("{")]
    assert progress and progress[-1].get("remaining") == 0, progress[-3:]
    read = kafka_tool(
        "kafka-console-consumer", "--bootstrap-server", target.bootstrap, "--topic", sink,
        "--from-beginning", "--isolation-level", "read_committed", "--max-messages", "300",
        "--timeout-ms", "30000",
    ).stdout  # fmt: skip
    assert read.split() == [v.decode() for v in values]
    assert _committed(target, group, source) == 300


def test_kafka_transactions_abort_ends_a_hanging_transaction(target: Target) -> None:
    """`kafka-transactions.sh abort` (WriteTxnMarkers, KIP-664) ends a transaction its producer left open:
    read_committed consumers, held at its first offset, then read past it, and its records stay unseen."""
    topic = _topic(target)
    p = _producer(target, f"tx-{topic}")
    plain = Producer({"bootstrap.servers": target.bootstrap, "linger.ms": 0})
    try:
        plain.produce(topic, value=b"before", partition=0)
        plain.flush(10)
        p.begin_transaction()
        p.produce(topic, value=b"hanging", partition=0)
        p.flush(10)
        plain.produce(topic, value=b"after", partition=0)
        plain.flush(10)
        assert _high_watermark(target, topic, "read_committed") == 1  # held by the open transaction
        kafka_tool(
            "kafka-transactions", "--bootstrap-server", target.bootstrap,
            "abort", "--topic", topic, "--partition", "0", "--start-offset", "1",
        )  # fmt: skip
        assert _read(target, topic, "read_committed") == [b"before", b"after"]
        assert _high_watermark(target, topic, "read_committed") == 4  # 3 records and the ABORT marker
    finally:
        _close(plain)
        with contextlib.suppress(KafkaException):  # the producer still thinks its transaction is open
            p.abort_transaction(30)
