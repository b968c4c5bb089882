"""The demo's workload: topics, producers, and consumer groups left at different positions.

Everything goes through a real Kafka client (confluent-kafka, librdkafka) over the wire, exactly as a
user's applications would talk to ebb-broker or to any Kafka cluster.
"""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from harness.bounded import close_within

RECORD_BYTES = 512
# librdkafka: warnings and errors only (its info lines when a client closes are noise in the demo).
_QUIET = {"log_level": 4}


@dataclass(frozen=True)
class GroupPosition:
    """Consumer group `group` reads `topic` and commits `fraction` of each partition (by offset)."""

    group: str
    topic: str
    fraction: dict[int, float]


def create_topics(bootstrap: str, topics: dict[str, int], configs: dict[str, str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, **_QUIET})
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=n, replication_factor=1, config=configs) for name, n in topics.items()]
    )
    for future in futures.values():
        future.result(timeout=30)


def produce(bootstrap: str, topic: str, partitions: int, records_per_partition: int, keyed: bool) -> int:
    """Produce with acks=all; returns the number of records acknowledged."""
    # Batches must fit in a segment (Kafka refuses larger ones): 16 KiB, the Java producer's default.
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "batch.size": 16384})
    acked = 0

    def on_delivery(err: object, _msg: object) -> None:
        nonlocal acked
        if err is None:
            acked += 1
        else:
            raise RuntimeError(f"produce to {topic} failed: {err}")

    payload = b"x" * RECORD_BYTES
    for i in range(records_per_partition):
        for p in range(partitions):
            # Keyed topics get a few keys rewritten over and over: what compaction is for.
            key = f"customer-{i % 50}".encode() if keyed else None
            producer.produce(topic, value=payload, key=key, partition=p, on_delivery=on_delivery)
        producer.poll(0)
    producer.flush(30)
    return acked


def consume_and_commit(
    bootstrap: str, position: GroupPosition, end_offsets: dict[int, int]
) -> dict[int, int]:
    """Read each partition up to its target offset as group `position.group`, commit, return the commits."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": position.group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    targets = {p: int(end_offsets[p] * f) for p, f in position.fraction.items()}
    try:
        consumer.assign([TopicPartition(position.topic, p, 0) for p in targets])
        done = {p: t == 0 for p, t in targets.items()}
        next_offset = dict.fromkeys(targets, 0)
        while not all(done.values()):
            msg = consumer.poll(5.0)
            if msg is None:
                raise RuntimeError(f"group {position.group}: no records from {position.topic} within 5s")
            if msg.error():
                raise RuntimeError(f"group {position.group}: {msg.error()}")
            p, offset = msg.partition(), msg.offset()
            if p is None or offset is None:  # only error events lack them, and those were raised above
                continue
            if done[p]:
                continue
            next_offset[p] = offset + 1
            if next_offset[p] >= targets[p]:
                done[p] = True
                consumer.pause([TopicPartition(position.topic, p)])
        consumer.commit(
            offsets=[TopicPartition(position.topic, p, targets[p]) for p in targets], asynchronous=False
        )
    finally:
        close_within(consumer)
    return targets


def _watermarks(bootstrap: str, topic: str, partitions: int, which: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "ebb-demo-offsets"})
    try:
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[which]
            for p in range(partitions)
        }
    finally:
        close_within(consumer)


def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    return _watermarks(bootstrap, topic, partitions, 1)


def log_start_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    return _watermarks(bootstrap, topic, partitions, 0)


def topic_configs(bootstrap: str, topic: str, keys: tuple[str, ...]) -> dict[str, str]:
    from confluent_kafka.admin import ConfigResource

    admin = AdminClient({"bootstrap.servers": bootstrap, **_QUIET})
    (future,) = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)]).values()
    entries = future.result(timeout=30)
    return {k: entries[k].value for k in keys if k in entries}
