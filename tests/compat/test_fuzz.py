"""Mutated request frames never crash the broker, never stall other clients, never touch stored data;
mutated record batches with valid CRCs are refused or stored whole, never half-readable."""

from __future__ import annotations

import socket
import struct
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.admin.topics import CreateTopicsRequest
from kafka.protocol.consumer.group import (
    HeartbeatRequest,
    JoinGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from kafka.protocol.consumer.offsets import ListOffsetsRequest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest
from kafka.record.memory_records import MemoryRecordsBuilder

from harness.ebb_broker import EbbBroker
from tests.compat.clients import CLIENTS
from tests.compat.conftest import SecureBroker
from tests.compat.wire import FETCH_VERSION, Wire, fetch_request
from tests.record_batches import raw_batch, record

KEEP = "fuzz-keep"
SCRATCH = "fuzz-scratch-topic"


def _batch(values: list[bytes]) -> bytes:
    b = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
    for v in values:
        b.append(0, None, v)
    b.close()
    return bytes(b.buffer())


def _seeds() -> list[bytes]:
    w = Wire.__new__(Wire)
    w.correlation = 0
    P = ProduceRequest[9]
    L = ListOffsetsRequest[7]
    J = JoinGroupRequest[5]
    C = OffsetCommitRequest[8]
    CT = CreateTopicsRequest[5]
    group_seeds = [
        w.frame(
            J(
                group_id="fuzz-g",
                session_timeout_ms=6000,
                rebalance_timeout_ms=1000,
                member_id="",
                group_instance_id=None,
                protocol_type="consumer",
                protocols=[J.JoinGroupRequestProtocol(name="range", metadata=b"\x00\x01\x00\x00\x00\x00")],
            ),
            5,
        ),
        w.frame(
            SyncGroupRequest[3](
                group_id="fuzz-g", generation_id=1, member_id="m", group_instance_id=None, assignments=[]
            ),
            3,
        ),
        w.frame(
            HeartbeatRequest[3](group_id="fuzz-g", generation_id=1, member_id="m", group_instance_id=None), 3
        ),
        w.frame(
            C(
                group_id="fuzz-g",
                generation_id_or_member_epoch=-1,
                member_id="",
                group_instance_id=None,
                topics=[
                    C.OffsetCommitRequestTopic(
                        name=SCRATCH,
                        partitions=[
                            C.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                                partition_index=0,
                                committed_offset=1,
                                committed_leader_epoch=-1,
                                committed_metadata="",
                            )
                        ],
                    )
                ],
            ),
            8,
        ),
        w.frame(OffsetFetchRequest[7](group_id="fuzz-g", topics=None, require_stable=False), 7),
        w.frame(
            CT(
                topics=[
                    CT.CreatableTopic(
                        name="fuzz-new", num_partitions=1, replication_factor=1, assignments=[], configs=[]
                    )
                ],
                timeout_ms=1000,
                validate_only=True,
            ),
            5,
        ),
    ]
    return [
        *group_seeds,
        w.frame(ApiVersionsRequest[3](client_software_name="fuzz", client_software_version="1"), 3),
        w.frame(
            MetadataRequest[12](
                topics=[MetadataRequest[12].MetadataRequestTopic(name=KEEP)], allow_auto_topic_creation=False
            ),
            12,
        ),
        w.frame(
            P(
                transactional_id=None,
                acks=1,
                timeout_ms=1000,
                topic_data=[
                    P.TopicProduceData(
                        name=SCRATCH,
                        partition_data=[
                            P.TopicProduceData.PartitionProduceData(index=0, records=_batch([b"x"] * 3))
                        ],
                    )
                ],
            ),
            9,
        ),
        w.frame(fetch_request(KEEP, [(0, 0)], max_wait_ms=10, min_bytes=1, max_bytes=1 << 20), FETCH_VERSION),
        w.frame(
            L(
                replica_id=-1,
                isolation_level=0,
                topics=[
                    L.ListOffsetsTopic(
                        name=KEEP,
                        partitions=[
                            L.ListOffsetsTopic.ListOffsetsPartition(
                                partition_index=0, timestamp=-2, current_leader_epoch=-1
                            )
                        ],
                    )
                ],
            ),
            7,
        ),
    ]


SEEDS = _seeds()


@st.composite
def mutated_frames(draw: st.DrawFn, seeds: list[bytes] | None = None) -> bytes:
    frame = bytearray(draw(st.sampled_from(seeds or SEEDS)))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "truncate", "insert", "size"]))
        if kind == "flip" and len(frame) > 4:
            i = draw(st.integers(4, len(frame) - 1))
            frame[i] = draw(st.integers(0, 255))
        elif kind == "truncate" and len(frame) > 5:
            cut = draw(st.integers(5, len(frame) - 1))
            frame = frame[:cut]
            frame[0:4] = struct.pack(">i", len(frame) - 4)
        elif kind == "insert":
            i = draw(st.integers(4, len(frame)))
            frame[i:i] = draw(st.binary(min_size=1, max_size=8))
            frame[0:4] = struct.pack(">i", len(frame) - 4)
        elif kind == "size":
            frame[0:4] = struct.pack(">i", draw(st.integers(-(2**31), 2**31 - 1)))
    return bytes(frame)


def test_mutated_frames_do_not_hurt_the_broker(broker: EbbBroker) -> None:
    c = CLIENTS["confluent-kafka"](broker.bootstrap)
    c.create_topic(KEEP)
    c.create_topic(SCRATCH)
    stored = [(None, f"keep-{i}".encode()) for i in range(20)]
    c.produce(KEEP, stored)
    observer = Wire(broker.bootstrap)

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(frame=mutated_frames())
    def send(frame: bytes) -> None:
        s = socket.create_connection(("127.0.0.1", broker.port), timeout=2)
        try:
            s.sendall(frame)
            s.shutdown(socket.SHUT_WR)
            s.settimeout(0.5)
            try:
                while s.recv(65536):
                    pass
            except (TimeoutError, ConnectionError):
                pass
        finally:
            s.close()
        assert broker.alive()

    try:
        send()
        # An unrelated long-lived connection is still served...
        observer.send_raw(observer.frame(MetadataRequest[1](topics=None), 1))
        assert MetadataResponse.decode(observer.recv_frame(), version=1, header=True).brokers
        # ...and the stored records are exactly what was acknowledged.
        got = c.consume(KEEP, 20)
        assert [(r.offset, r.value) for r in got] == [(i, v) for i, (_, v) in enumerate(stored)]
    finally:
        observer.close()
        c.close()
    assert broker.alive()


def _sasl_seeds() -> list[bytes]:
    w = Wire.__new__(Wire)
    w.correlation = 0
    A = SaslAuthenticateRequest
    return [
        w.frame(SaslHandshakeRequest[1](mechanism="SCRAM-SHA-512"), 1),
        w.frame(SaslHandshakeRequest[1](mechanism="PLAIN"), 1),
        w.frame(A[0](auth_bytes=b"n,,n=admin,r=fyko+d2lbbFgONRv9qkxdawL"), 0),
        w.frame(A[2](auth_bytes=b"n,,n=admin,r=fyko+d2lbbFgONRv9qkxdawL"), 2),
        w.frame(
            A[1](auth_bytes=b"c=biws,r=fyko+d2lbbFgONRv9qkxdawLabc,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgs"), 1
        ),
        w.frame(A[2](auth_bytes=b"\0admin\0admin-secret"), 2),
        w.frame(ApiVersionsRequest[3](client_software_name="fuzz", client_software_version="1"), 3),
    ]


SASL_SEEDS = _sasl_seeds()


def test_mutated_sasl_frames_do_not_hurt_the_broker(secure_broker: SecureBroker) -> None:
    """Each example opens a SASL_PLAINTEXT connection, starts a valid handshake (SCRAM-SHA-512 or PLAIN),
    then sends a mutated handshake or authenticate frame: none crashes the broker, and an authenticated
    client is served afterwards."""
    b = secure_broker.broker
    port = b.listener_ports["SASL_PLAINTEXT"]
    handshakes = SASL_SEEDS[:2]

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(first=st.sampled_from([b"", *handshakes]), frame=mutated_frames(SASL_SEEDS))
    def send(first: bytes, frame: bytes) -> None:
        s = socket.create_connection(("127.0.0.1", port), timeout=2)
        try:
            s.sendall(first + frame)
            s.shutdown(socket.SHUT_WR)
            s.settimeout(0.5)
            try:
                while s.recv(65536):
                    pass
            except (TimeoutError, ConnectionError):
                pass
        finally:
            s.close()
        assert b.alive()

    send()
    c = secure_broker.client("confluent-kafka", "SASL_PLAINTEXT", "admin")
    c.create_topic("fuzz-sasl-after")
    c.produce("fuzz-sasl-after", [(None, b"still served")])
    assert [r.value for r in c.consume("fuzz-sasl-after", 1)] == [b"still served"]


@st.composite
def batches_with_valid_crcs(draw: st.DrawFn) -> bytes:
    """A well-formed batch of 1-20 records whose header and records section are then mutated, with the
    length and CRC-32C recomputed: only the validator stands between these bytes and the log."""
    n = draw(st.integers(1, 20))
    keys = st.sampled_from([None, *[b"key"] * 15])
    section = bytearray(
        b"".join(record(i, key=draw(keys), value=b"v" * draw(st.integers(0, 40))) for i in range(n))
    )
    for _ in range(draw(st.integers(0, 4))):  # 0: the batch as built, which must be stored
        kind = draw(st.sampled_from(["flip", "truncate", "insert", "count"]))
        if kind == "flip" and section:
            section[draw(st.integers(0, len(section) - 1))] = draw(st.integers(0, 255))
        elif kind == "truncate" and len(section) > 1:
            del section[draw(st.integers(1, len(section) - 1)) :]
        elif kind == "insert":
            i = draw(st.integers(0, len(section)))
            section[i:i] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "count":
            n = draw(st.sampled_from([0, -1, n + 1, n - 1, 2**31 - 1]))
    return raw_batch(bytes(section), n, base_ts=int(time.time() * 1000))


def test_mutated_batches_with_valid_crcs_never_store_what_a_consumer_cannot_read(broker: EbbBroker) -> None:
    """Hostile batches (lying counts, truncated or garbage records, all with correct CRCs) to a delete and
    a compacted topic: each is refused or stored whole, and afterwards a real consumer reads every stored
    offset, in order, with no gap."""
    c = CLIENTS["confluent-kafka"](broker.bootstrap)
    topics = {"fuzz-batches": {}, "fuzz-batches-compacted": {"cleanup.policy": "compact"}}
    for name, config in topics.items():
        c.create_topic(name, configs=config)
    wire = Wire(broker.bootstrap)
    accepted = dict.fromkeys(topics, 0)
    refused = 0
    P = ProduceRequest[9]

    # derandomize: the same 200 batches every run, so "both paths taken" below never depends on luck
    @settings(
        max_examples=200,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
        derandomize=True,
    )
    @given(batch=batches_with_valid_crcs(), topic=st.sampled_from(sorted(topics)))
    def send(batch: bytes, topic: str) -> None:
        nonlocal refused
        request = P(
            transactional_id=None,
            acks=1,
            timeout_ms=1000,
            topic_data=[
                P.TopicProduceData(
                    name=topic,
                    partition_data=[P.TopicProduceData.PartitionProduceData(index=0, records=batch)],
                )
            ],
        )
        wire.send_raw(wire.frame(request, 9))
        response = ProduceResponse.decode(wire.recv_frame(), version=9, header=True)
        part = response.responses[0].partition_responses[0]
        if part.error_code == 0:
            assert part.base_offset == accepted[topic]
            accepted[topic] += int.from_bytes(batch[57:61], "big")
        else:
            refused += 1

    try:
        send()
        assert refused > 0 and all(accepted.values()), (refused, accepted)  # both paths were taken
        for topic, stored in accepted.items():
            got = c.consume(topic, stored, timeout=30) if stored else []
            assert [r.offset for r in got] == list(range(stored))
            assert c.latest(topic, 0) == stored
    finally:
        wire.close()
        c.close()
    assert broker.alive()
