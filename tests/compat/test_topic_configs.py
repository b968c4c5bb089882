"""Topic configs of the data path, ebb-broker and Apache Kafka 4.3.1 side by side: compression.type with
every Kafka value (the broker recompresses a batch written with another codec; `producer` keeps the
producer's), and the flush and timestamp settings as DescribeConfigs reports them."""

from __future__ import annotations

import functools
import uuid

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from kafka.protocol.consumer.fetch import FetchResponse

from harness.bounded import close_within, until
from tests.compat.conftest import Side
from tests.compat.wire import Wire, fetch_request

# compression.type -> the codec id (batch attributes bits 0-2) of what a producer writing lz4 finds stored.
STORED_CODEC = {"producer": 3, "uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def _create(side: Side, configs: dict[str, dict[str, str]]) -> None:
    admin = AdminClient({"bootstrap.servers": side.bootstrap})  # kept alive until the topics exist
    futures = admin.create_topics([NewTopic(name, 1, 1, config=config) for name, config in configs.items()])
    for future in futures.values():
        future.result(30)
    consumer = Consumer({"bootstrap.servers": side.bootstrap, "group.id": f"tc-{uuid.uuid4().hex}"})
    try:
        for name in configs:  # Kafka answers NOT_LEADER for a moment after creating a topic
            until(
                f"{name}'s leader",
                functools.partial(consumer.get_watermark_offsets, TopicPartition(name, 0), timeout=10),
                30,
                0.1,
                ignore=(KafkaException,),
            )
    finally:
        close_within(consumer)


def _stored_codecs(side: Side, topic: str) -> set[int]:
    """The compression codec of every batch the partition holds, read with a raw Fetch."""
    request = fetch_request(topic, [(0, 0)])
    wire = Wire(side.bootstrap)
    try:
        wire.send_raw(wire.frame(request, 12))
        records = (
            FetchResponse.decode(wire.recv_frame(), version=12, header=True)
            .responses[0]
            .partitions[0]
            .records
        )
    finally:
        wire.close()
    codecs, pos = set(), 0
    while pos + 61 <= len(records):
        size = int.from_bytes(records[pos + 8 : pos + 12], "big") + 12
        codecs.add(int.from_bytes(records[pos + 21 : pos + 23], "big") & 0x07)
        pos += size
    return codecs


def test_compression_type_recompresses_like_kafka(side: Side) -> None:
    topics = {f"cz-{kind}-{uuid.uuid4().hex[:8]}": kind for kind in STORED_CODEC}
    _create(side, {name: {"compression.type": kind} for name, kind in topics.items()})
    producer = Producer({"bootstrap.servers": side.bootstrap, "compression.type": "lz4", "linger.ms": 20})
    sent = [(b"k%d" % i, b"value %d " % i * 30) for i in range(300)]
    for name in topics:
        for key, value in sent:
            producer.produce(name, key=key, value=value, partition=0)
    assert producer.flush(30) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": side.bootstrap,
            "group.id": f"tc-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
        }
    )
    got: dict[str | None, list[tuple[bytes | None, bytes | None]]] = {name: [] for name in topics}
    try:
        consumer.assign([TopicPartition(name, 0, 0) for name in topics])

        def consumed() -> bool:
            for m in consumer.consume(1000, 0.2):
                assert m.error() is None, m.error()
                got[m.topic()].append((m.key(), m.value()))
            return sum(map(len, got.values())) >= len(sent) * len(topics)

        until("every record consumed", consumed, 30, interval=0)
    finally:
        close_within(consumer)
    for name, kind in topics.items():
        assert _stored_codecs(side, name) == {STORED_CODEC[kind]}, kind
        assert got[name] == sent, kind


def test_flush_and_timestamp_configs_are_topic_configs(side: Side) -> None:
    name = f"fc-{uuid.uuid4().hex[:8]}"
    configs = {
        "flush.ms": "1000",
        "flush.messages": "100",
        "message.timestamp.after.max.ms": "60000",
        "message.timestamp.before.max.ms": "86400000",
        "compression.zstd.level": "7",
        "compression.gzip.level": "9",
        "compression.lz4.level": "3",
    }
    _create(side, {name: configs})
    admin = AdminClient({"bootstrap.servers": side.bootstrap})
    described = admin.describe_configs([ConfigResource("topic", name)])
    entries = next(iter(described.values())).result(30)
    assert {k: entries[k].value for k in configs} == configs
    assert entries["compression.type"].value == "producer"
