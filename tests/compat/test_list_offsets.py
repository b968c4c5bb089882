"""ListOffsets MAX_TIMESTAMP (KIP-734) as confluent-kafka's AdminClient asks for it, ebb-broker and Apache
Kafka 4.3.1 side by side: the offset of the first record carrying the largest timestamp, not the last
offset of its batch; on ebb-broker also after a restart."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from confluent_kafka import IsolationLevel, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from harness.ebb_broker import EbbBroker
from tests.compat.conftest import Side


def _max_timestamp(bootstrap: str, topic: str) -> tuple[int, int]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    tp = TopicPartition(topic, 0)
    result = admin.list_offsets(
        {tp: OffsetSpec.max_timestamp()}, isolation_level=IsolationLevel.READ_UNCOMMITTED
    )
    info = result[tp].result(30)
    return info.offset, info.timestamp


def _produce_one_batch(bootstrap: str, topic: str, stamps: list[int]) -> None:
    """Records with these timestamps, in one batch (librdkafka lingers until the flush)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2000, "acks": "all"})
    errors: list[object] = []
    for i, ts in enumerate(stamps):
        producer.produce(
            topic, value=b"r%d" % i, partition=0, timestamp=ts, on_delivery=lambda e, _m: errors.append(e)
        )
    assert producer.flush(30) == 0
    assert errors == [None] * len(stamps)


def _create(bootstrap: str) -> str:
    name = f"lo-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the topic exists
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)
    return name


BASE = int(time.time() * 1000) - 60_000
STAMPS = [BASE, BASE + 5000, BASE + 2000, BASE + 5000, BASE + 4000]


def test_max_timestamp_is_the_record_carrying_it(side: Side) -> None:
    topic = _create(side.bootstrap)
    _produce_one_batch(side.bootstrap, topic, [BASE + 1000])
    _produce_one_batch(side.bootstrap, topic, STAMPS)  # offsets 1-5; the maximum first at offset 2
    _produce_one_batch(side.bootstrap, topic, [BASE + 3000])
    assert _max_timestamp(side.bootstrap, topic) == (2, BASE + 5000)


def test_max_timestamp_survives_a_restart(broker_factory: Callable[..., EbbBroker]) -> None:
    b = broker_factory()
    topic = _create(b.bootstrap)
    _produce_one_batch(b.bootstrap, topic, STAMPS)
    assert _max_timestamp(b.bootstrap, topic) == (1, BASE + 5000)
    b.restart(kill=True)  # no clean shutdown: recovery rebuilds the segment's maximum from the log
    assert _max_timestamp(b.bootstrap, topic) == (1, BASE + 5000)
