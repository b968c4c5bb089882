"""Wire-level guarantees of the server: version negotiation, framing limits, ordering, acks=0."""

from __future__ import annotations

import struct
from collections.abc import Callable

from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from kafka.record.memory_records import MemoryRecordsBuilder

from harness.ebb_broker import EbbBroker
from tests.compat.clients import CLIENTS
from tests.compat.wire import Wire

UNSUPPORTED_VERSION = 35

# The "Advertised ranges" table of reference/kafka-protocol-notes.md.
ADVERTISED = {
    18: (0, 4),
    3: (0, 12),
    0: (0, 12),
    1: (4, 12),
    2: (1, 7),
    8: (2, 9),
    9: (1, 9),
    10: (0, 4),
    11: (0, 9),
    14: (0, 5),
    12: (0, 4),
    13: (0, 5),
    15: (0, 5),
    16: (0, 5),
    22: (0, 4),
    19: (2, 7),
    20: (1, 6),
    21: (0, 2),
    32: (1, 4),
    33: (0, 2),
    44: (0, 1),
    35: (1, 4),
    # client quotas (KIP-546), as Kafka 4.x
    48: (0, 1),
    49: (0, 1),
    # transactions (KIP-98, KIP-447, KIP-664): the client versions of transaction version 1
    24: (0, 3),
    25: (0, 3),
    26: (0, 3),
    28: (0, 3),
    61: (0, 0),
    65: (0, 0),
    66: (0, 1),
    # WriteTxnMarkers for kafka-transactions.sh abort (KIP-664); v2 needs transaction version 2
    27: (1, 1),
}


def _api_versions(broker: EbbBroker, version: int) -> object:
    w = Wire(broker.bootstrap)
    try:
        w.send_raw(w.frame(ApiVersionsRequest[min(version, 4)](), min(version, 4)))
        return ApiVersionsResponse.decode(w.recv_frame(), version=version, header=True)
    finally:
        w.close()


def test_api_versions_advertises_the_reference_ranges(broker: EbbBroker) -> None:
    resp = _api_versions(broker, 3)
    ranges = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}  # type: ignore[attr-defined]
    for key, want in ADVERTISED.items():
        assert ranges.get(key) == want, f"API key {key}"
    for absent in (68, 69, 76):  # KIP-848, share groups
        assert absent not in ranges


def test_unknown_api_versions_version_gets_v0_body_with_key_list(broker: EbbBroker) -> None:
    w = Wire(broker.bootstrap)
    try:
        # An ApiVersions v9 request: header v2 is enough for the broker to read the correlation id.
        body = struct.pack(">hhi", 18, 9, 77) + struct.pack(">h", 4) + b"test" + b"\x00" + b"\x01\x01\x00"
        w.send_raw(struct.pack(">i", len(body)) + body)
        data = w.recv_frame()
        assert struct.unpack_from(">i", data)[0] == 77
        resp = ApiVersionsResponse[0].decode(data[4:], version=0)
        assert resp.error_code == UNSUPPORTED_VERSION
        assert any(k.api_key == 0 for k in resp.api_keys)
    finally:
        w.close()


def test_pipelined_requests_are_answered_in_order(broker: EbbBroker) -> None:
    w = Wire(broker.bootstrap)
    try:
        frames = b"".join(
            w.frame(MetadataRequest[v](topics=[], allow_auto_topic_creation=False), v, correlation_id=100 + i)
            for i, v in enumerate([1, 5, 9, 12, 4])
        )
        w.send_raw(frames)
        ids = [struct.unpack_from(">i", w.recv_frame())[0] for _ in range(5)]
        assert ids == [100, 101, 102, 103, 104]
    finally:
        w.close()


def test_oversized_and_malformed_frames_close_only_that_connection(broker: EbbBroker) -> None:
    with Wire(broker.bootstrap) as healthy:
        with Wire(broker.bootstrap) as bad:
            bad.send_raw(struct.pack(">i", 200 * 1024 * 1024))
            assert bad.closed_by_peer()
        with Wire(broker.bootstrap) as garbage:
            body = struct.pack(">hhi", 3, 9, 5) + b"\xff" * 13
            garbage.send_raw(struct.pack(">i", len(body)) + body)
            assert garbage.closed_by_peer()
        healthy.send_raw(healthy.frame(MetadataRequest[1](topics=None), 1))
        resp = MetadataResponse.decode(healthy.recv_frame(), version=1, header=True)
        assert resp.brokers[0].port == broker.port


def _batch(values: list[bytes]) -> bytes:
    b = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
    for v in values:
        b.append(0, None, v)
    b.close()
    return bytes(b.buffer())


def test_acks_zero_gets_no_reply_and_is_stored(broker: EbbBroker, topic: str) -> None:
    admin = CLIENTS["kafka-python"](broker.bootstrap)
    try:
        admin.create_topic(topic)
    finally:
        admin.close()
    w = Wire(broker.bootstrap)
    try:
        R = ProduceRequest[9]
        data = [
            R.TopicProduceData(
                name=topic,
                partition_data=[
                    R.TopicProduceData.PartitionProduceData(index=0, records=_batch([b"a", b"b"]))
                ],
            )
        ]
        w.send_raw(w.frame(R(transactional_id=None, acks=0, timeout_ms=1000, topic_data=data), 9))
        # The next response on the connection answers the next request: nothing came for acks=0.
        w.send_raw(
            w.frame(R(transactional_id=None, acks=1, timeout_ms=1000, topic_data=data), 9, correlation_id=555)
        )
        raw = w.recv_frame()
        assert struct.unpack_from(">i", raw)[0] == 555
        resp = ProduceResponse.decode(raw, version=9, header=True)
        part = resp.responses[0].partition_responses[0]
        assert part.error_code == 0
        assert part.base_offset == 2  # the acks=0 batch took offsets 0-1
    finally:
        w.close()


def test_produce_v2_is_refused_per_partition(broker: EbbBroker, topic: str) -> None:
    w = Wire(broker.bootstrap)
    try:
        R = ProduceRequest[2]
        data = [
            R.TopicProduceData(
                name=topic, partition_data=[R.TopicProduceData.PartitionProduceData(index=0, records=b"")]
            )
        ]
        w.send_raw(w.frame(R(acks=1, timeout_ms=1000, topic_data=data), 2))
        resp = ProduceResponse.decode(w.recv_frame(), version=2, header=True)
        assert resp.responses[0].partition_responses[0].error_code == UNSUPPORTED_VERSION
    finally:
        w.close()


def test_sigterm_shuts_down_cleanly_with_the_marker(broker_factory: Callable[..., EbbBroker]) -> None:
    b = broker_factory()
    admin = CLIENTS["confluent-kafka"](b.bootstrap)
    admin.create_topic("shutdown")
    admin.produce("shutdown", [(None, b"kept")])
    assert b.stop() == 0
    assert (b.data_dir / ".kafka_cleanshutdown").exists()
    assert "recovery-point-offset-checkpoint" in {p.name for p in b.data_dir.iterdir()}
    b.start()
    assert [r.value for r in admin.__class__(b.bootstrap).consume("shutdown", 1)] == [b"kept"]
