"""Kafka's formats against Apache Kafka itself: the test vectors are what its classes write, and what its
group coordinator writes to `__consumer_offsets` is read alike by the operator's analysis and by
ebb-broker's coordinator, both through `ebb_formats` (the other direction, Kafka's tools reading what
ebb-broker writes, is test_kafka_tools.py's kafka-dump-log --offsets-decoder)."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition
from kafka import KafkaAdminClient, KafkaConsumer
from kafka import TopicPartition as KafkaPartition
from kafka.admin import NewTopic

from ebb_broker.coordinator.group import GroupState
from ebb_broker.coordinator.group_coordinator import GroupCoordinator
from ebb_broker.coordinator.offsets_store import OffsetsStore
from ebb_broker.coordinator.timer import LoopTimer
from ebb_broker.log import LogManager
from ebb_broker.log.log_config import LogManagerConfig
from ebb_formats.consumer_offsets import OFFSETS_TOPIC
from ebb_operator.analysis.offsets_records import decode_row
from harness.bounded import close_within, until
from harness.kafka import KafkaBroker, consumer_offsets_vectors

VECTORS = Path(__file__).parents[1] / "unit" / "formats" / "consumer_offsets_vectors.json"

Raw = tuple[int, int, bytes, bytes | None]  # partition, offset, key, value


def test_the_unit_tests_vectors_are_what_apache_kafka_writes() -> None:
    """tests/unit/formats decodes a copy; Kafka's own classes must still write exactly that copy."""
    assert consumer_offsets_vectors() == json.loads(VECTORS.read_text()), (
        "Kafka writes other records than tests/unit/formats/consumer_offsets_vectors.json: "
        "`make consumer-offsets-vectors`, then check the format tests"
    )


def _raw_offsets_topic(bootstrap: str) -> list[Raw]:
    """Every record of `__consumer_offsets` as Kafka's coordinator wrote it (committed ones)."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, isolation_level="read_committed"
    )
    try:
        partitions = [
            KafkaPartition(OFFSETS_TOPIC, p) for p in consumer.partitions_for_topic(OFFSETS_TOPIC) or ()
        ]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        end = consumer.end_offsets(partitions)
        records: list[Raw] = []

        def read_to_end() -> bool:
            for batch in consumer.poll(timeout_ms=200).values():
                records.extend((r.partition, r.offset, r.key, r.value) for r in batch)
            return all(consumer.position(tp) >= end[tp] for tp in partitions)

        until(f"{OFFSETS_TOPIC} read to its end", read_to_end, timeout=60)
        return records
    finally:
        consumer.close()


def test_what_apache_kafkas_coordinator_writes_both_sides_read(
    apache_kafka_broker: KafkaBroker, tmp_path: Path
) -> None:
    bootstrap = apache_kafka_broker.bootstrap_servers
    topic, live, standalone = (f"{kind}-{uuid.uuid4().hex[:8]}" for kind in ("formats", "live", "alone"))
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, 2, 1)])
    except BaseException:
        admin.close()
        raise
    member = Consumer({"bootstrap.servers": bootstrap, "group.id": live, "enable.auto.commit": False})
    try:
        member.subscribe([topic])
        until("the member's assignment", lambda: member.poll(0.2) or member.assignment(), timeout=60)
        member.commit(offsets=[TopicPartition(topic, 0, 5, metadata="checkpoint ✓")], asynchronous=False)
        alone = Consumer({"bootstrap.servers": bootstrap, "group.id": standalone})
        alone.commit(offsets=[TopicPartition(topic, 1, 9)], asynchronous=False)
        close_within(alone)
        raw = _raw_offsets_topic(bootstrap)
    finally:
        close_within(member)
    try:  # the truth: what Kafka's coordinator serves (librdkafka sends the metadata with its C string's NUL)
        metadata = admin.list_group_offsets(live)[live][KafkaPartition(topic, 0)].metadata
    finally:
        admin.close()
    assert metadata.startswith("checkpoint ✓")

    # The operator's analysis: one row per record.
    rows = [row for p, o, k, v in raw if (row := decode_row(p, o, k, v)) is not None]
    commits = {(r[4], r[5], r[6]): r[7] for r in rows if r[0] == "offset" and r[4] in (live, standalone)}
    assert commits == {(live, topic, 0): 5, (standalone, topic, 1): 9}
    (*_, group_row) = [r for r in rows if r[0] == "group" and r[4] == live]
    assert (group_row[10], group_row[12], group_row[14]) == ("consumer", 1, [topic])  # the live member

    # ebb-broker's coordinator, loading those records as its own `__consumer_offsets`.
    logs = LogManager.open(tmp_path / "ebb", LogManagerConfig())
    try:
        store = OffsetsStore(logs, int(apache_kafka_broker.settings["offsets.topic.num.partitions"]))
        store.ensure_topic()
        for p, _offset, key, value in raw:
            store.append_to(p, [(key, value)])
        loop = asyncio.new_event_loop()
        try:
            coordinator = GroupCoordinator(store, LoopTimer(loop), loop=loop)
            coordinator.load()
        finally:
            loop.close()
        assert {tp: c.offset for tp, c in coordinator.offsets.fetch(live).items()} == {(topic, 0): 5}
        assert coordinator.offsets.fetch(live)[(topic, 0)].metadata == metadata
        assert {tp: c.offset for tp, c in coordinator.offsets.fetch(standalone).items()} == {(topic, 1): 9}
        group = coordinator.groups[live]
        assert group.state is GroupState.STABLE and group.protocol_type == "consumer"
        assert len(group.members) == 1 and group.subscribed_topics == {topic}
    finally:
        logs.close()
