"""The adapter reads the timestamp of the record at an offset (how old a group's oldest unread record is),
on both brokers, from batches of many records and from a batch larger than its per-partition fetch limit."""

from __future__ import annotations

import time

from confluent_kafka import Producer

from ebb_operator.kafka import ClusterAdmin, ClusterConnection, TopicPartition
from ebb_operator.kafka.record_times import PARTITION_MAX_BYTES
from tests.e2e.operator.operator_kafka import create_topic, unique


def test_record_timestamps_are_the_records_own(kafka_bootstrap: str) -> None:
    topic = unique("times")
    create_topic(kafka_bootstrap, topic, 2)
    base = int(time.time() * 1000) - 3_600_000
    # Partition 0: 50 small records, many per batch; partition 1: one batch larger than the fetch limit.
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 200, "batch.size": 1 << 20})
    for i in range(50):
        producer.produce(topic, value=b"s", partition=0, timestamp=base + i * 1000)
    big = b"b" * 8192
    for i in range(2 * PARTITION_MAX_BYTES // len(big)):
        producer.produce(topic, value=big, partition=1, timestamp=base + 500_000 + i)
    assert producer.flush(30) == 0

    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    asked = {tp0: 17, tp1: 9}
    with ClusterAdmin(ClusterConnection.of(kafka_bootstrap)) as admin:
        assert admin.record_timestamps(asked) == {tp0: base + 17_000, tp1: base + 500_009}
        # No record at the high watermark: no timestamp, and nothing else wrong.
        assert admin.record_timestamps({tp0: 50, TopicPartition(topic, 7): 0}) == {}
