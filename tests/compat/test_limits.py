"""Limits no single request can break (issue 11, item 4): each refused request leaves the broker up,
serving a normal client, and able to restart on the same data directory."""

from __future__ import annotations

import json
import socket
import struct
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kafka.protocol.admin.configs import IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse
from kafka.protocol.admin.topics import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse

from harness.bounded import until
from harness.ebb_broker import EbbBroker
from harness.ports import free_port
from tests.compat.clients import CLIENTS
from tests.compat.conftest import FAST_BROKER
from tests.compat.wire import Wire

POLICY_VIOLATION = 44
INVALID_CONFIG = 40


def _start(tmp_path: Path, name: str, configs: dict[str, str], **kw: object) -> EbbBroker:
    return EbbBroker(
        tmp_path / name,
        configs={**FAST_BROKER, **configs},
        metrics_port=free_port(),
        log_dir=tmp_path / f"{name}-logs",
        **kw,  # type: ignore[arg-type]
    ).start()


def _serves(b: EbbBroker, topic: str, values: list[bytes]) -> None:
    c = CLIENTS["confluent-kafka"](b.bootstrap)
    c.create_topic(topic)
    c.produce(topic, [(None, v) for v in values])
    assert [r.value for r in c.consume(topic, len(values))] == values


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Limited]:
    """One broker for the limits that need no special connection settings; each test records what a normal
    client wrote after its refused requests, and the teardown restarts the broker and reads it all back."""
    b = _start(
        tmp_path_factory.mktemp("limited"),
        "data",
        {"socket.request.max.bytes": str(1024 * 1024), "max.partitions": "20", "num.partitions": "15"},
    )
    written: dict[str, list[bytes]] = {}
    try:
        yield b, written
        b.restart()
        c = CLIENTS["confluent-kafka"](b.bootstrap)
        for topic, values in written.items():
            assert [r.value for r in c.consume(topic, len(values))] == values, topic
    finally:
        b.stop()


def _limited_serves(limited: tuple[EbbBroker, dict[str, list[bytes]]], topic: str) -> None:
    b, written = limited
    assert b.alive()
    _serves(b, topic, [b"one", b"two"])
    written[topic] = [b"one", b"two"]


def _serves_and_restarts(b: EbbBroker, topic: str, values: list[bytes] | None = None) -> None:
    """A normal client produces and reads back; after a restart on the same data dir it reads them again."""
    values = values or [b"one", b"two"]
    c = CLIENTS["confluent-kafka"](b.bootstrap)
    c.create_topic(topic)
    c.produce(topic, [(None, v) for v in values])
    assert [r.value for r in c.consume(topic, len(values))] == values
    b.restart()
    assert b.alive()
    again = CLIENTS["confluent-kafka"](b.bootstrap)
    assert [r.value for r in again.consume(topic, len(values))] == values


def _create_topics(w: Wire, topics: list[tuple[str, int]], configs: dict[str, str] | None = None) -> list:
    R = CreateTopicsRequest[5]
    req = R(
        topics=[
            R.CreatableTopic(
                name=name,
                num_partitions=n,
                replication_factor=1,
                assignments=[],
                configs=[
                    R.CreatableTopic.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()
                ],
            )
            for name, n in topics
        ],
        timeout_ms=10000,
        validate_only=False,
    )
    w.send_raw(w.frame(req, 5))
    return list(CreateTopicsResponse.decode(w.recv_frame(), version=5, header=True).topics)


WireFactory = Callable[..., Wire]  # (broker, timeout=...) -> a connection closed at teardown
Limited = tuple[EbbBroker, dict[str, list[bytes]]]


@pytest.fixture
def wire_factory() -> Iterator[WireFactory]:
    opened: list[Wire] = []

    def make(b: EbbBroker, timeout: float = 10.0) -> Wire:
        w = Wire(b.bootstrap, timeout)
        opened.append(w)
        return w

    yield make
    for w in opened:
        w.close()


def _api_versions_answered(w: Wire, timeout: float) -> bool:
    w.sock.settimeout(timeout)
    w.send_raw(w.frame(ApiVersionsRequest[0](), 0))
    try:
        return bool(ApiVersionsResponse.decode(w.recv_frame(), version=0, header=True).api_keys)
    except TimeoutError:
        return False
    finally:
        w.sock.settimeout(10)


def test_frame_size_and_api_key_are_checked_before_the_body_is_read(
    limited: Limited, wire_factory: WireFactory
) -> None:
    b = limited[0]
    # Above socket.request.max.bytes: closed on the size prefix alone.
    big = wire_factory(b)
    big.send_raw(struct.pack(">i", 1024 * 1024 + 1))
    assert big.closed_by_peer()
    # Within the limit, but an API key the broker does not serve: closed on the header, although the
    # 512 KiB body it announces never comes (the broker does not wait for it).
    unknown = wire_factory(b)
    unknown.send_raw(struct.pack(">ihhi", 512 * 1024, 9999, 0, 1))
    assert unknown.closed_by_peer(timeout=5)
    # A served key at a version outside its range: the same.
    bad_version = wire_factory(b)
    bad_version.send_raw(struct.pack(">ihhi", 512 * 1024, 3, 99, 1))
    assert bad_version.closed_by_peer(timeout=5)
    assert b.metric("ebb_connections_closed_by_broker_total", reason="frame_size") >= 1
    assert b.metric("ebb_connections_closed_by_broker_total", reason="bad_request") >= 2
    _limited_serves(limited, "after-frames")


def test_queued_max_request_bytes_pauses_reads_instead_of_failing(
    tmp_path: Path, wire_factory: WireFactory
) -> None:
    b = _start(tmp_path, "pool", {"queued.max.request.bytes": "1000"})
    try:
        # A request larger than the pool is admitted alone (Kafka's non-strict pool) and holds it...
        slow = wire_factory(b)
        frame = slow.frame(
            MetadataRequest[1](topics=[MetadataRequest[1].MetadataRequestTopic(name="x" * 1500)]), 1
        )
        slow.send_raw(frame[:100])
        until(  # the broker has read the header and reserved the frame's bytes
            "the slow request's bytes reserved",
            lambda: b.metric("ebb_request_pool_available_bytes") < 0,  # 1000 - its ~1.5 KB
            10,
        )
        # ...so another connection's request waits (its channel is muted), it is not refused.
        waiting = wire_factory(b)
        assert not _api_versions_answered(waiting, timeout=1.0)
        # Once the first request completes, both are answered.
        slow.send_raw(frame[100:])
        assert MetadataResponse.decode(slow.recv_frame(), version=1, header=True).topics
        assert ApiVersionsResponse.decode(waiting.recv_frame(), version=0, header=True).api_keys
        _serves_and_restarts(b, "after-pool")
    finally:
        b.stop()


def test_idle_connections_are_closed(tmp_path: Path, wire_factory: WireFactory) -> None:
    b = _start(tmp_path, "idle", {"connections.max.idle.ms": "400"})
    try:
        idle = wire_factory(b)
        assert _api_versions_answered(idle, timeout=5)
        # A client that trickles a frame and never completes it is as idle as a silent one.
        trickle = wire_factory(b)
        trickle.send_raw(struct.pack(">ihh", 100, 18, 0))
        assert idle.closed_by_peer(timeout=5)
        assert trickle.closed_by_peer(timeout=5)
        assert b.metric("ebb_connections_closed_by_broker_total", reason="idle") >= 2
        _serves_and_restarts(b, "after-idle")
    finally:
        b.stop()


def test_max_connections_waits_and_per_ip_closes(tmp_path: Path, wire_factory: WireFactory) -> None:
    b = _start(
        tmp_path,
        "conns",
        {
            "max.connections": "8",
            "max.connections.per.ip": "10",
            "max.connections.per.ip.overrides": "127.0.0.2:1",
        },
    )

    def from_2() -> Wire:
        w = Wire.__new__(Wire)
        w.sock = socket.create_connection(("127.0.0.1", b.port), timeout=10, source_address=("127.0.0.2", 0))
        w.correlation = 0
        return w

    try:
        # 127.0.0.2's quota is 1 (an override): its second connection is accepted, then closed at once.
        other, over = from_2(), from_2()
        try:
            assert _api_versions_answered(other, timeout=5)
            assert over.closed_by_peer(timeout=5)
        finally:
            over.close()
        assert b.metric("ebb_connections_closed_by_broker_total", reason="max_connections_per_ip") == 1
        # max.connections (8): seven more are served; the ninth waits in the backlog until a slot frees.
        served = [wire_factory(b) for _ in range(7)]
        assert all(_api_versions_answered(w, timeout=5) for w in served)
        waiting = wire_factory(b)
        assert not _api_versions_answered(waiting, timeout=1.0)
        other.close()
        assert ApiVersionsResponse.decode(waiting.recv_frame(), version=0, header=True).api_keys
        for w in [*served, waiting]:
            w.close()
        _serves_and_restarts(b, "after-conns")
    finally:
        other.close()
        b.stop()


def test_partition_counts_are_checked_before_anything_is_written(
    limited: Limited, wire_factory: WireFactory
) -> None:
    b = limited[0]  # max.partitions=20, num.partitions=15; __consumer_offsets has 4
    w = wire_factory(b)
    topics_file = b.data_dir / "ebb-topics.json"
    before = json.loads(topics_file.read_text())
    dirs_before = sorted(p.name for p in b.data_dir.iterdir())
    (res,) = _create_topics(w, [("too-many", 17)])
    assert res.error_code == POLICY_VIOLATION and "max.partitions" in res.error_message
    assert json.loads(topics_file.read_text()) == before
    assert sorted(p.name for p in b.data_dir.iterdir()) == dirs_before
    # CreatePartitions past the total: the same, the topic keeps its count.
    (ok,) = _create_topics(w, [("grows", 1)])
    assert ok.error_code == 0
    R = CreatePartitionsRequest[1]
    w.send_raw(
        w.frame(
            R(
                topics=[R.CreatePartitionsTopic(name="grows", count=20, assignments=None)],
                timeout_ms=5000,
                validate_only=False,
            ),
            1,
        )
    )
    grown = CreatePartitionsResponse.decode(w.recv_frame(), version=1, header=True).results[0]
    assert grown.error_code == POLICY_VIOLATION
    assert json.loads(topics_file.read_text())["topics"]["grows"]["partitions"] == 1
    # Auto-creation (num.partitions=15 would make at least 6+15): refused, nothing written.
    w.send_raw(
        w.frame(
            MetadataRequest[4](
                topics=[MetadataRequest[4].MetadataRequestTopic(name="auto")], allow_auto_topic_creation=True
            ),
            4,
        )
    )
    (auto,) = MetadataResponse.decode(w.recv_frame(), version=4, header=True).topics
    assert auto.error_code == POLICY_VIOLATION
    assert "auto" not in json.loads(topics_file.read_text())["topics"]
    _limited_serves(limited, "after-parts")


def test_descriptor_limit_bounds_creation_and_never_a_restart(
    tmp_path: Path, wire_factory: WireFactory
) -> None:
    """Under ulimit -n 400 (a quarter, at least 256, kept for sockets) 48 partitions fit; a request for more
    is refused. 40 partitions with three segments each (360 files) still restart under ulimit -n 200:
    segment files are opened on demand."""
    b = _start(tmp_path, "fds", {"log.segment.bytes": "200"}, nofile=400)
    try:
        w = wire_factory(b)
        (res,) = _create_topics(w, [("wide", 100)])
        assert res.error_code == POLICY_VIOLATION and "descriptor limit" in res.error_message
        (ok,) = _create_topics(w, [("wide", 40)])
        assert ok.error_code == 0
        from confluent_kafka import Producer

        values = [b"a" * 80, b"b" * 80, b"c" * 80]
        producer = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0, "acks": "all"})
        for v in values:  # one batch per flush: a segment of 200 bytes holds one of them
            for p in range(40):
                producer.produce("wide", value=v, partition=p)
            assert producer.flush(30) == 0
        assert len(list((b.data_dir / "wide-0").glob("*.log"))) == 3
        b.stop()
        b.nofile = 200
        b.start()
        c = CLIENTS["confluent-kafka"](b.bootstrap)
        for p in (0, 17, 39):
            assert [r.value for r in c.fetch_at("wide", p, 0)] == [values[0]]
            assert [r.value for r in c.fetch_at("wide", p, 2)] == [values[2]]
        # Served as usual (new partitions are refused under this limit, existing ones take records).
        assert c.produce("wide", [(None, b"later")], partition=5) == [3]
        b.restart()
        assert [r.value for r in CLIENTS["confluent-kafka"](b.bootstrap).fetch_at("wide", 5, 3)] == [b"later"]
    finally:
        b.stop()


def test_longest_topic_name_deletes_and_comes_back(limited: Limited, wire_factory: WireFactory) -> None:
    """Kafka cuts the topic in `<topic>-<p>.<uuid>-delete` so the directory name fits 255 bytes."""
    b = limited[0]
    name = "n" * 249
    c = CLIENTS["confluent-kafka"](b.bootstrap)
    c.create_topic(name)
    c.produce(name, [(None, b"x")])
    w = wire_factory(b)
    R = DeleteTopicsRequest[4]
    w.send_raw(w.frame(R(topic_names=[name], timeout_ms=5000), 4))
    (res,) = DeleteTopicsResponse.decode(w.recv_frame(), version=4, header=True).responses
    assert res.error_code == 0
    assert not (b.data_dir / f"{name}-0").exists()
    c.create_topic(name)
    c.produce(name, [(None, b"again")])
    assert [r.value for r in c.consume(name, 1)] == [b"again"]
    limited[1][name] = [b"again"]
    _limited_serves(limited, "after-names")


def test_out_of_range_long_configs_are_invalid_config(limited: Limited, wire_factory: WireFactory) -> None:
    b = limited[0]
    w = wire_factory(b)
    (res,) = _create_topics(w, [("huge", 1)], {"retention.ms": "99999999999999999999999"})
    assert res.error_code == INVALID_CONFIG and "Not a number of type LONG" in res.error_message
    (ok,) = _create_topics(w, [("fine", 1)])
    assert ok.error_code == 0
    R = IncrementalAlterConfigsRequest[1]
    w.send_raw(
        w.frame(
            R(
                resources=[
                    R.AlterConfigsResource(
                        resource_type=2,
                        resource_name="fine",
                        configs=[
                            R.AlterConfigsResource.AlterableConfig(
                                name="segment.bytes", config_operation=0, value="4294967296"
                            )
                        ],
                    )
                ],
                validate_only=False,
            ),
            1,
        )
    )
    (alt,) = IncrementalAlterConfigsResponse.decode(w.recv_frame(), version=1, header=True).responses
    assert alt.error_code == INVALID_CONFIG and "Not a number of type INT" in alt.error_message
    assert CLIENTS["confluent-kafka"](b.bootstrap).describe_configs("fine")["segment.bytes"] == str(1024**3)
    _limited_serves(limited, "after-longs")
