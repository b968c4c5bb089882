"""Fetch size limits (KIP-74), ebb-broker and Apache Kafka 4.3.1 side by side.

A fetch response holds at most the request's `max_bytes` across partitions and at most
`partition_max_bytes` per partition, except that the first partition with records always gets its first
whole batch; a later partition whose first batch does not fit gets no records. Both brokers are sent the
same batches and must answer with exactly the same number of record bytes per partition.
"""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.consumer.fetch import FetchResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse

from harness.bounded import close_within, until
from tests.compat.conftest import Side
from tests.compat.wire import Wire, fetch_request
from tests.record_batches import raw_batch, record

BATCHES = 12
RECORDS_PER_BATCH = 10
P = ProduceRequest[9]


def _topic(side: Side, partitions: int) -> str:
    name = f"fl-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": side.bootstrap})  # kept alive until the topic exists
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)
    consumer = Consumer({"bootstrap.servers": side.bootstrap, "group.id": f"fl-{uuid.uuid4().hex}"})
    try:  # Kafka answers NOT_LEADER for a moment after creating a topic
        until(
            f"{name}'s leaders",
            lambda: [
                consumer.get_watermark_offsets(TopicPartition(name, p), timeout=10) for p in range(partitions)
            ],
            30,
            0.1,
            ignore=(KafkaException,),
        )
        return name
    finally:
        close_within(consumer)


def _batch(now: int) -> bytes:
    """A 10-record batch of about 1 KiB, the same bytes for both brokers."""
    return raw_batch(b"".join(record(i, value=b"v" * 90) for i in range(RECORDS_PER_BATCH)), 10, base_ts=now)


def _fill(wire: Wire, topic: str, partitions: int) -> int:
    """BATCHES batches in every partition; returns the size of one batch."""
    batch = _batch(int(time.time() * 1000))
    for _ in range(BATCHES):
        request = P(
            transactional_id=None,
            acks=-1,
            timeout_ms=10_000,
            topic_data=[
                P.TopicProduceData(
                    name=topic,
                    partition_data=[
                        P.TopicProduceData.PartitionProduceData(index=p, records=batch)
                        for p in range(partitions)
                    ],
                )
            ],
        )
        wire.send_raw(wire.frame(request, 9))
        response = ProduceResponse.decode(wire.recv_frame(), version=9, header=True)
        assert [p.error_code for p in response.responses[0].partition_responses] == [0] * partitions
    return len(batch)


def _fetch(wire: Wire, topic: str, offsets: list[int], max_bytes: int, partition_max_bytes: int) -> list[int]:
    """Record bytes per partition of one Fetch v12."""
    request = fetch_request(
        topic, list(enumerate(offsets)), max_bytes=max_bytes, partition_max_bytes=partition_max_bytes
    )
    wire.send_raw(wire.frame(request, 12))
    response = FetchResponse.decode(wire.recv_frame(), version=12, header=True)
    parts = sorted(response.responses[0].partitions, key=lambda p: p.partition_index)
    assert [p.error_code for p in parts] == [0] * len(offsets)
    return [len(p.records or b"") for p in parts]


def test_fetch_limits_are_kafkas(side: Side) -> None:
    topic = _topic(side, 2)
    wire = Wire(side.bootstrap)
    try:
        size = _fill(wire, topic, 2)
        total = size * BATCHES
        end = BATCHES * RECORDS_PER_BATCH
        # Partition limit first, then what is left of the request's: the last batch may be cut short.
        assert _fetch(wire, topic, [0, 0], max_bytes=5 * size, partition_max_bytes=3 * size + 7) == [
            3 * size + 7,
            2 * size - 7,
        ]
        # The request's limit is shared: nothing is left for the second partition.
        assert _fetch(wire, topic, [0, 0], max_bytes=2 * size, partition_max_bytes=10**7) == [2 * size, 0]
        # Limits below one batch: the first partition with records still gets its first whole batch...
        assert _fetch(wire, topic, [0, 0], max_bytes=10, partition_max_bytes=10) == [size, 0]
        assert _fetch(wire, topic, [end, 0], max_bytes=10, partition_max_bytes=10) == [0, size]
        # ...and a later partition whose first batch does not fit gets none of it.
        assert _fetch(wire, topic, [0, 0], max_bytes=10**7, partition_max_bytes=size - 1) == [size, 0]
        # Large limits: everything.
        assert _fetch(wire, topic, [0, 0], max_bytes=10**7, partition_max_bytes=10**7) == [total, total]
    finally:
        wire.close()


def test_a_consumer_with_fetch_max_bytes_below_the_partition_limit_reads_everything(side: Side) -> None:
    """The issue's consumer: fetch.max.bytes=1000000 with a 10 MiB max.partition.fetch.bytes, and (as
    librdkafka requires) responses larger than fetch.max.bytes + 512 refused as invalid. Before KIP-74's
    request limit was kept, ebb-broker answered with every partition's 10 MiB and the consumer retried
    until it gave up."""
    topic = _topic(side, 2)
    producer = Producer({"bootstrap.servers": side.bootstrap, "linger.ms": 20, "batch.size": 200_000})
    value = b"x" * 1000
    per_partition = 2500  # 2.5 MB each, 5 MB in all
    for i in range(per_partition * 2):
        while True:
            try:
                producer.produce(topic, value=value, partition=i % 2)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": side.bootstrap,
            "group.id": f"fl-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "fetch.max.bytes": 1_000_000,
            "receive.message.max.bytes": 1_000_512,
            "max.partition.fetch.bytes": 10 * 1024 * 1024,
        }
    )
    got = {0: 0, 1: 0}
    try:
        consumer.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])

        def consumed() -> bool:
            for msg in consumer.consume(1000, 0.5):
                assert msg.error() is None, msg.error()
                got[msg.partition() or 0] += 1  # consumed records always have their partition
            return sum(got.values()) >= 2 * per_partition

        until("every record of both partitions", consumed, 60, interval=0)
    finally:
        close_within(consumer)
    assert got == {0: per_partition, 1: per_partition}
