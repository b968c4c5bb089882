"""One client cannot slow, starve or exhaust the broker for the others (issue 25, items 4, 5 and 9):
parked fetches wake only for their partitions, a partition named many times is read once, fetch
responses hold no descriptor of their own, connections.max.idle.ms ends parked fetches and unread
responses, and a large produce is validated while other clients are served."""

from __future__ import annotations

import os
import select
import socket
import time
import uuid
from collections.abc import Callable, Iterator

import pytest
from kafka.protocol.consumer.fetch import FetchResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse

from harness.bounded import wait_until
from harness.ebb_broker import EbbBroker
from harness.ports import free_port
from tests.compat.clients import CLIENTS
from tests.compat.conftest import FAST_BROKER, Side
from tests.compat.wire import FETCH_VERSION, Wire, fetch_request
from tests.record_batches import raw_batch, record

P = ProduceRequest[9]
INT_MAX = 2**31 - 1
MB = 1024 * 1024


def _fetch(wire: Wire, topic: str, partitions: list[tuple[int, int]], **limits: int) -> None:
    """Send a Fetch for (partition, offset) pairs, in that order, duplicates and all."""
    wire.send_raw(wire.frame(fetch_request(topic, partitions, **limits), FETCH_VERSION))


def _response(wire: Wire) -> list[tuple[int, int, int]]:
    """(partition, error, record bytes) of each partition of a one-topic Fetch response."""
    response = FetchResponse.decode(wire.recv_frame(), version=FETCH_VERSION, header=True)
    return [
        (p.partition_index, p.error_code, len(p.records or b""))
        for t in response.responses
        for p in t.partitions
    ]


def _produce(wire: Wire, topic: str, partition: int, batch: bytes) -> Wire:
    request = P(
        transactional_id=None,
        acks=-1,
        timeout_ms=30_000,
        topic_data=[
            P.TopicProduceData(
                name=topic,
                partition_data=[P.TopicProduceData.PartitionProduceData(index=partition, records=batch)],
            )
        ],
    )
    wire.send_raw(wire.frame(request, 9))
    return wire


def _produced(wire: Wire) -> int:
    (partition,) = (
        ProduceResponse.decode(wire.recv_frame(), version=9, header=True).responses[0].partition_responses
    )
    assert partition.error_code == 0, partition
    return int(partition.base_offset)


def _unread(b: EbbBroker) -> Wire:
    """A connection that reads nothing, with a small receive buffer (above loopback's MSS, so reading it
    later is quick): an 8 MB response stays mostly unsent."""
    w = Wire(b.bootstrap)
    w.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 128 * 1024)
    return w


def _ends(w: Wire, timeout: float = 15) -> bool:
    """Whether the connection ends (EOF or reset) once what the broker did send is read."""
    w.sock.settimeout(timeout)
    try:
        while w.sock.recv(1 << 20):
            pass
    except ConnectionResetError:
        pass
    except TimeoutError:
        return False
    return True


def _open_files(b: EbbBroker) -> int:
    assert b.proc is not None
    return len(os.listdir(f"/proc/{b.proc.pid}/fd"))


def _megabyte_batches(wire: Wire, topic: str, partition: int, count: int) -> None:
    """`count` batches of one record of 1,000,000 bytes (within message.max.bytes)."""
    batch = raw_batch(record(0, value=b"m" * 1_000_000), 1, base_ts=int(time.time() * 1000))
    for _ in range(count):
        _produced(_produce(wire, topic, partition, batch))


@pytest.fixture(scope="module")
def isolated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EbbBroker]:
    """A broker under ulimit -n 512 (256 descriptors for segment files) that takes 21 MB batches and
    answers at most 7 MB per fetch."""
    root = tmp_path_factory.mktemp("isolation")
    configs = {**FAST_BROKER, "message.max.bytes": str(21 * MB), "fetch.max.bytes": str(7 * MB)}
    b = EbbBroker(root / "data", configs=configs, metrics_port=free_port(), nofile=512).start()
    yield b
    assert b.stop() == 0


def test_a_partition_named_many_times_is_read_once(side: Side) -> None:
    """Kafka's FetchRequest.fetchData is a map: one entry per partition, at its first place, with the last
    entry's offset (here 1: the second record only)."""
    topic = f"dup-{uuid.uuid4().hex[:10]}"
    c = CLIENTS["confluent-kafka"](side.bootstrap)
    c.create_topic(topic, partitions=2)
    c.produce(topic, [(None, b"first")], partition=0)
    c.produce(topic, [(None, b"second")], partition=0)
    c.produce(topic, [(None, b"other")], partition=1)
    w = Wire(side.bootstrap)
    try:
        _fetch(w, topic, [(0, 1)])
        ((_p, _err, second_only),) = _response(w)
        _fetch(w, topic, [(0, 0)] * 2_000 + [(1, 0), (0, 1)])
        answered = _response(w)
    finally:
        w.close()
    assert [(p, err) for p, err, _size in answered] == [(0, 0), (1, 0)]
    assert answered[0][2] == second_only > 0


def test_parked_fetches_wake_only_for_their_partitions(isolated: EbbBroker) -> None:
    """Four fetches parked on one partition (named 20,000 times, max_wait_ms as large as Kafka takes it):
    produces to another topic wake none of them; a record on their partition answers all four, once."""
    b = isolated
    parked_topic, busy_topic = f"parked-{uuid.uuid4().hex[:8]}", f"busy-{uuid.uuid4().hex[:8]}"
    c = CLIENTS["confluent-kafka"](b.bootstrap)
    c.create_topic(parked_topic)
    c.create_topic(busy_topic)
    woken = b.metric("ebb_fetch_purgatory_wakeups_total")
    wires = [Wire(b.bootstrap) for _ in range(4)]
    try:
        for w in wires:
            _fetch(w, parked_topic, [(0, 0)] * 20_000, max_wait_ms=INT_MAX, min_bytes=1)
        wait_until("four fetches parked", lambda: b.metric("ebb_fetch_purgatory_size") == 4, 30)
        c.produce(busy_topic, [(None, f"busy-{i}".encode()) for i in range(100)])
        assert b.metric("ebb_fetch_purgatory_wakeups_total") == woken
        assert b.metric("ebb_fetch_purgatory_size") == 4
        c.produce(parked_topic, [(None, b"wake")], partition=0)
        for w in wires:
            ((partition, error, size),) = _response(w)
            assert (partition, error) == (0, 0) and size > 0
    finally:
        for w in wires:
            w.close()
    assert b.metric("ebb_fetch_purgatory_wakeups_total") == woken + 4
    assert b.metric("ebb_fetch_purgatory_size") == 0


def test_fetch_responses_hold_no_descriptor_of_their_own(isolated: EbbBroker) -> None:
    """A fetch naming one partition 1,700 times (the 47 KB request that took the broker to its descriptor
    limit) and ten 7 MB responses nobody reads (10 MB asked, fetch.max.bytes=7 MB): the broker's open
    files grow by their sockets only, a new client is served as usual, and the responses are whole."""
    b = isolated
    topic = f"fds-{uuid.uuid4().hex[:8]}"
    c = CLIENTS["confluent-kafka"](b.bootstrap)
    c.create_topic(topic, partitions=2)
    c.produce(topic, [(None, b"s" * 4000)], partition=0)
    filler = Wire(b.bootstrap, timeout=30)
    try:
        _megabyte_batches(filler, topic, 1, 8)
    finally:
        filler.close()
    fetches = b.metric("ebb_requests_total", api="Fetch")
    before = _open_files(b)
    wires = [_unread(b) for _ in range(11)]
    try:
        _fetch(wires[0], topic, [(0, 0)] * 1_700)
        for w in wires[1:]:
            _fetch(w, topic, [(1, 0)])
        wait_until(
            "the 11 fetches handled", lambda: b.metric("ebb_requests_total", api="Fetch") >= fetches + 11, 30
        )
        assert _open_files(b) <= before + len(wires) + 2
        c.produce(topic, [(None, b"still served")], partition=0)
        assert [r.value for r in c.fetch_at(topic, 0, 1)] == [b"still served"]
        ((partition, error, size),) = _response(wires[0])
        assert (partition, error) == (0, 0) and size > 4000
        assert _response(wires[1]) == [(1, 0, 7 * MB)]
    finally:
        for w in wires:
            w.close()
    wait_until("the descriptors given back", lambda: _open_files(b) <= before + 1, 30)


def test_a_large_produce_is_validated_while_others_are_served(isolated: EbbBroker) -> None:
    """A 20 MB produce (183,000 records, each checked) and, once the broker has read it, a one-record produce
    on another connection: the small one is answered first (the event loop validated the large one
    itself before, so every other client waited for it)."""
    b = isolated
    topic = f"large-{uuid.uuid4().hex[:8]}"
    CLIENTS["confluent-kafka"](b.bootstrap).create_topic(topic)
    count = 183_000
    large = raw_batch(
        b"".join(record(i, value=b"v" * 100) for i in range(count)), count, base_ts=int(time.time() * 1000)
    )
    small = raw_batch(record(0, value=b"small"), 1, base_ts=int(time.time() * 1000))
    big_wire, small_wire = Wire(b.bootstrap, timeout=60), Wire(b.bootstrap, timeout=60)
    try:
        _produced(_produce(small_wire, topic, 0, small))  # connected and served before the large one
        received = b.metric("ebb_network_bytes_in_total")
        _produce(big_wire, topic, 0, large)
        wait_until(
            "the large produce read",
            lambda: b.metric("ebb_network_bytes_in_total") >= received + len(large),
            30,
        )
        _produce(small_wire, topic, 0, small)
        ready, _, _ = select.select([small_wire.sock, big_wire.sock], [], [], 60)
        assert ready == [small_wire.sock], "the large produce was answered first: it held up the small one"
        assert _produced(small_wire) == 1
        assert _produced(big_wire) == 2
    finally:
        big_wire.close()
        small_wire.close()


def test_idle_connections_end_parked_fetches_and_unread_responses(
    broker_factory: Callable[..., EbbBroker],
) -> None:
    """As Kafka's Selector measures idleness (no bytes moved): a connection parked in a fetch and one whose
    8 MB response is never read are closed after connections.max.idle.ms, and what they held is freed."""
    b = broker_factory({"connections.max.idle.ms": "1000"})
    topic = f"idle-{uuid.uuid4().hex[:8]}"
    CLIENTS["confluent-kafka"](b.bootstrap).create_topic(topic, partitions=2)  # its connections go with it
    filler = Wire(b.bootstrap, timeout=30)
    try:
        _megabyte_batches(filler, topic, 1, 8)
    finally:
        filler.close()
    wait_until("every other connection gone", lambda: b.metric("ebb_connections") == 0, 30)
    before, idle = _open_files(b), b.metric("ebb_connections_closed_by_broker_total", reason="idle")
    parked, unread = Wire(b.bootstrap), _unread(b)
    try:
        _fetch(parked, topic, [(0, 0)], max_wait_ms=INT_MAX, min_bytes=1)
        _fetch(unread, topic, [(1, 0)])
        wait_until("the fetch parked", lambda: b.metric("ebb_fetch_purgatory_size") == 1, 30)
        # Not a byte is read until the broker closed both (reading would be activity).
        wait_until("both closed by the broker", lambda: b.metric("ebb_connections") == 0, 30)
        assert b.metric("ebb_connections_closed_by_broker_total", reason="idle") == idle + 2
        assert b.metric("ebb_fetch_purgatory_size") == 0
        assert parked.closed_by_peer(timeout=15)
        assert _ends(unread)
    finally:
        parked.close()
        unread.close()
    wait_until("the descriptors given back", lambda: _open_files(b) <= before, 30)
