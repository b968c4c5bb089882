"""Topic administration, offsets by time, idempotent produce, and auto-creation through real clients."""

from __future__ import annotations

import re
import time

import pytest
from confluent_kafka import KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic, OffsetSpec
from kafka.protocol.admin.topics import CreatePartitionsRequest, CreatePartitionsResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse
from kafka.record.memory_records import MemoryRecordsBuilder

from harness.ebb_broker import EbbBroker
from tests.compat.wire import Wire


def _offset(admin: AdminClient, topic: str, spec: OffsetSpec) -> tuple[int, int]:
    res = next(iter(admin.list_offsets({TopicPartition(topic, 0): spec}).values())).result(30)
    return res.offset, res.timestamp


def test_list_offsets_by_timestamp_and_max_timestamp(broker: EbbBroker, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    base = int(time.time() * 1000) - 60_000
    for i, ts in enumerate([base, base + 1000, base + 5000, base + 2000]):
        p.produce(topic, f"r{i}".encode(), partition=0, timestamp=ts)
        p.flush(10)
    assert _offset(admin, topic, OffsetSpec.for_timestamp(base + 500))[0] == 1
    assert _offset(admin, topic, OffsetSpec.for_timestamp(base + 5000))[0] == 2
    assert _offset(admin, topic, OffsetSpec.for_timestamp(base + 9999))[0] == -1
    assert _offset(admin, topic, OffsetSpec.max_timestamp()) == (2, base + 5000)
    assert _offset(admin, topic, OffsetSpec.earliest())[0] == 0
    assert _offset(admin, topic, OffsetSpec.latest())[0] == 4


def test_create_partitions_delete_topics_and_describe_cluster(broker: EbbBroker, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    admin.create_partitions([NewPartitions(topic, 3)])[topic].result(30)
    assert len(admin.list_topics(topic, timeout=10).topics[topic].partitions) == 3
    with pytest.raises(KafkaException, match=r"INVALID_PARTITIONS.*has 3 partitions; asked for 2"):
        admin.create_partitions([NewPartitions(topic, 2)])[topic].result(30)  # shrinking is refused
    # Two billion partitions are refused, not attempted. librdkafka refuses more than 100,000 itself, so
    # the request goes on the wire by hand to reach the broker.
    with pytest.raises(ValueError, match=r"new_total_cnt out of expected range"):
        admin.create_partitions([NewPartitions(topic, 2**31 - 1)])
    request = CreatePartitionsRequest(
        topics=[CreatePartitionsRequest.CreatePartitionsTopic(name=topic, count=2**31 - 1, assignments=None)],
        timeout_ms=30_000,
        validate_only=False,
    )
    w = Wire(broker.bootstrap)
    try:
        w.send_raw(w.frame(request, 1))
        (result,) = CreatePartitionsResponse.decode(w.recv_frame(), version=1, header=True).results
    finally:
        w.close()
    assert (result.error_code, result.error_message) == (37, "at most 10000 partitions per topic")
    assert len(admin.list_topics(topic, timeout=10).topics[topic].partitions) == 3
    cluster = admin.describe_cluster().result(30)
    assert [n.port for n in cluster.nodes] == [broker.port]
    assert cluster.controller.id == cluster.nodes[0].id
    admin.delete_topics([topic])[topic].result(30)
    assert topic not in admin.list_topics(timeout=10).topics
    with pytest.raises(KafkaException, match="INVALID_REPLICATION_FACTOR"):  # 3 replicas on one node
        admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(30)


def test_describe_log_dirs_reports_partition_sizes(broker: EbbBroker, topic: str) -> None:
    from kafka import KafkaAdminClient

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for _ in range(50):
        p.produce(topic, b"z" * 1000, partition=0)
    p.flush(10)
    kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        result = kp.describe_log_dirs({topic: [0]})
    finally:
        kp.close()
    text = repr(result)
    assert str(broker.data_dir.resolve()) in text
    sizes = [int(s) for s in re.findall(r"partition_size['\"]?[:=]\s*(\d+)", text)]
    assert sizes and sizes[0] > 50 * 1000, text


def test_topics_are_auto_created_on_metadata_request(broker: EbbBroker, topic: str) -> None:
    p = Producer({"bootstrap.servers": broker.bootstrap})
    p.produce(topic, b"first")
    assert p.flush(30) == 0
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert len(admin.list_topics(topic, timeout=10).topics[topic].partitions) == 1


def _idempotent_batch(pid: int, epoch: int, seq: int, values: list[bytes]) -> bytes:
    b = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
    b.set_producer_state(pid, epoch, seq, False)
    for v in values:
        b.append(int(time.time() * 1000), None, v)
    b.close()
    return bytes(b.buffer())


def test_a_retried_idempotent_batch_is_acknowledged_once(broker: EbbBroker, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    w = Wire(broker.bootstrap)
    try:
        w.send_raw(
            w.frame(
                InitProducerIdRequest[4](
                    transactional_id=None, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1
                ),
                4,
            )
        )
        init = InitProducerIdResponse.decode(w.recv_frame(), version=4, header=True)
        assert init.error_code == 0 and init.producer_id >= 0
        R = ProduceRequest[9]

        def produce(seq: int, values: list[bytes]) -> tuple[int, int]:
            batch = _idempotent_batch(init.producer_id, init.producer_epoch, seq, values)
            data = [
                R.TopicProduceData(
                    name=topic,
                    partition_data=[R.TopicProduceData.PartitionProduceData(index=0, records=batch)],
                )
            ]
            w.send_raw(w.frame(R(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=data), 9))
            part = (
                ProduceResponse.decode(w.recv_frame(), version=9, header=True)
                .responses[0]
                .partition_responses[0]
            )
            return part.error_code, part.base_offset

        assert produce(0, [b"a", b"b"]) == (0, 0)
        assert produce(0, [b"a", b"b"]) == (0, 0)  # the retry: same offsets, not appended again
        assert produce(2, [b"c"]) == (0, 2)
        code, _ = produce(7, [b"gap"])
        assert code == 45  # OUT_OF_ORDER_SEQUENCE_NUMBER
    finally:
        w.close()
    assert _offset(admin, topic, OffsetSpec.latest())[0] == 3
