"""Helpers the operator's e2e and k8s tests share: the Kafka targets and a little workload."""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from harness.bounded import close_within


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(bootstrap: str, name: str, partitions: int, configs: dict[str, str] | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, 1, config=configs or {})]).values():
        future.result(30)


def produce(bootstrap: str, topic: str, per_partition: dict[int, int], size: int = 100) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for partition, count in per_partition.items():
        for i in range(count):
            producer.produce(topic, key=str(i).encode(), value=b"v" * size, partition=partition)
    assert producer.flush(30) == 0


def commit(bootstrap: str, group: str, offsets: Iterable[tuple[str, int, int]]) -> None:
    """Commit offsets for `group` as a consumer would (OffsetCommit), then leave."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[CkTopicPartition(t, p, o) for t, p, o in offsets], asynchronous=False)
    finally:
        close_within(consumer)


def log_start(bootstrap: str, topic: str, partition: int) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("probe")})
    try:
        low, _ = consumer.get_watermark_offsets(CkTopicPartition(topic, partition), timeout=10)
        return int(low)
    finally:
        close_within(consumer)
