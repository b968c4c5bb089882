"""Client quotas side by side with Apache Kafka 4.3.1 (issue 23): `kafka-configs` sets and describes a
producer quota, real producers (librdkafka and Kafka's Java producer) over their quotas are throttled and
held near them, a consumer over its quota is throttled, and removing a quota lifts it; the same
AlterClientQuotas and DescribeClientQuotas requests get the same answers from both brokers.

Both brokers average rates over `quota.window.num=3` windows of 1 s (the Apache Kafka harness sets it
too), so a throttled client settles within seconds rather than Kafka's default 10; the producers send six
quota-seconds of records, so each is throttled for about four seconds. JVM tools cost seconds each, so the
two brokers' scenarios run at once, and within each the Java producer runs beside the rest.
"""

from __future__ import annotations

import struct
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka.protocol.admin import AlterClientQuotasRequest, DescribeClientQuotasRequest
from kafka.protocol.admin import AlterClientQuotasResponse as AlterResponse
from kafka.protocol.admin import DescribeClientQuotasResponse as DescribeResponse

from ebb_operator.kafka import ClusterAdmin, ClusterConnection, QuotaEntity
from harness.bounded import close_within, until
from harness.ebb_broker import EbbBroker
from harness.kafka import KafkaBroker, kafka_tool
from tests.compat.clients import ConfluentClient
from tests.compat.conftest import Side
from tests.compat.wire import Wire

QUOTA = 65_536  # bytes per second
RECORD = b"x" * 1000
RECORDS = 384  # ~6 quota-seconds: 2 s of burst the window allows, then about 4 s throttled


@dataclass
class Produced:
    """What one producer saw: when each record was acknowledged and each throttle time it was given."""

    started: float
    acks: list[float] = field(default_factory=list)
    throttles: list[tuple[float, float]] = field(default_factory=list)

    @property
    def rate_once_throttled(self) -> float:
        """Bytes per second acknowledged from the first throttle to the last ack: the rate the quota holds."""
        first = self.throttles[0][0]
        later = [t for t in self.acks if t > first]
        return len(later) * len(RECORD) / (later[-1] - first)


def _produce(bootstrap: str, topic: str, client_id: str) -> Produced:
    out = Produced(time.monotonic())
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": client_id,
            "linger.ms": 5,
            "batch.size": 16384,
            "throttle_cb": lambda event: out.throttles.append((time.monotonic(), event.throttle_time)),
        }
    )

    def acked(err: Any, _msg: Any) -> None:
        assert err is None, err
        out.acks.append(time.monotonic())

    for _ in range(RECORDS):
        producer.produce(topic, RECORD, on_delivery=acked)
        producer.poll(0)
    assert producer.flush(60) == 0, "records left unacknowledged"
    return out


def _consume_until_throttled(bootstrap: str, topic: str, client_id: str) -> float:
    """Read `topic` from the start as `client_id` until a fetch is throttled; that throttle time (s)."""
    throttles: list[float] = []
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": client_id,
            "group.id": f"g-{client_id}",
            "enable.auto.commit": False,
            "throttle_cb": lambda event: throttles.append(event.throttle_time),
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])

        def throttled() -> list[float]:
            consumer.poll(0.2)
            return throttles

        return until(f"a throttled fetch of {topic} by {client_id}", throttled, 30, interval=0)[0]
    finally:
        close_within(consumer, what="consumer")


def _configs(bootstrap: str, *args: str) -> str:
    out = kafka_tool("kafka-configs", "--bootstrap-server", bootstrap, *args, timeout=90)
    return out.stdout + out.stderr


def _perf_producer(bootstrap: str, topic: str, client_id: str) -> str:
    out = kafka_tool(
        "kafka-producer-perf-test", "--topic", topic, "--num-records", str(RECORDS), "--record-size",
        str(len(RECORD)), "--throughput", "-1", "--print-metrics", "--producer-props",
        f"bootstrap.servers={bootstrap}", f"client.id={client_id}", "batch.size=16384", "linger.ms=5",
        timeout=120,
    )  # fmt: skip
    return out.stdout


def _scenario(bootstrap: str) -> dict[str, Any]:
    tag = uuid.uuid4().hex[:8]
    topic, perf_topic = f"quota-{tag}", f"quota-perf-{tag}"
    producer, java, reader = f"producer-{tag}", f"java-{tag}", f"reader-{tag}"
    ConfluentClient(bootstrap).create_topic(topic)
    ConfluentClient(bootstrap).create_topic(perf_topic)
    out: dict[str, Any] = {}
    with ClusterAdmin(ClusterConnection.of(bootstrap)) as admin, ThreadPoolExecutor(2) as pool:
        others = {
            QuotaEntity.of(client_id=java): {"producer_byte_rate": QUOTA},
            QuotaEntity.of(client_id=reader): {"consumer_byte_rate": QUOTA},
        }
        assert set(admin.alter_client_quotas(others).values()) == {None}
        try:
            perf: Future[str] = pool.submit(_perf_producer, bootstrap, perf_topic, java)
            out["alter"] = _configs(
                bootstrap, "--alter", "--add-config", f"producer_byte_rate={QUOTA}",
                "--entity-type", "clients", "--entity-name", producer,
            )  # fmt: skip
            described = pool.submit(
                _configs, bootstrap, "--describe", "--entity-type", "clients", "--entity-name", producer
            )
            out["throttled"] = _produce(bootstrap, topic, producer)
            out["describe"] = described.result()
            out["consumer_throttle"] = _consume_until_throttled(bootstrap, topic, reader)
            out["perf"] = perf.result()
        finally:
            lift = {"producer_byte_rate": None, "consumer_byte_rate": None}
            removed = admin.alter_client_quotas(
                {QuotaEntity.of(client_id=c): lift for c in (producer, java, reader)}
            )
        assert set(removed.values()) == {None}
        # Kafka answers once its controller committed the change; its brokers apply it a moment later.
        gone = QuotaEntity.of(client_id=producer)
        until("the producer quota removed", lambda: gone not in admin.client_quotas(), 15)
        out["lifted"] = _produce(bootstrap, topic, producer)
    out["ids"] = (producer, java, reader)
    return out


def _check(name: str, out: dict[str, Any]) -> None:
    producer, java, _reader = out["ids"]
    assert f"Completed updating config for client {producer}." in out["alter"], name
    assert (
        f"Quota configs for client-id '{producer}' are producer_byte_rate={float(QUOTA)}" in out["describe"]
    ), name
    throttled: Produced = out["throttled"]
    assert len(throttled.throttles) >= 3, f"{name}: throttle times seen {throttled.throttles}"
    assert max(t for _, t in throttled.throttles) > 0.1
    # Held near the quota once throttled (the burst before was the window's allowance).
    assert 0.4 * QUOTA < throttled.rate_once_throttled < 1.5 * QUOTA, (
        f"{name}: {throttled.rate_once_throttled:.0f} B/s"
    )
    assert out["consumer_throttle"] > 0, name
    # Kafka's Java producer: its throttle-time metric rose and its whole run averaged near the quota.
    perf: str = out["perf"]
    summary = next(line for line in perf.splitlines() if f"{RECORDS} records sent" in line)
    per_second = float(summary.split(" records/sec")[0].rsplit(", ", 1)[1])
    assert per_second * len(RECORD) < 1.5 * QUOTA, f"{name}: {summary}"
    throttle_max = next(
        line for line in perf.splitlines() if "produce-throttle-time-max" in line and java in line
    )
    assert float(throttle_max.rsplit(":", 1)[1]) > 0, f"{name}: {throttle_max}"
    # Removing the quota lifts it at once: the same client id, the same records, no throttle at all.
    lifted: Produced = out["lifted"]
    assert lifted.throttles == [] and len(lifted.acks) == RECORDS, name


@pytest.fixture
def ebb_quota_broker(broker_factory: Callable[..., EbbBroker]) -> EbbBroker:
    """An ebb-broker of its own (its metrics are read) with the Apache Kafka harness's quota window."""
    return broker_factory({"quota.window.num": "3"})


def test_quotas_throttle_real_clients_as_kafka_does(
    ebb_quota_broker: EbbBroker, apache_kafka_broker: KafkaBroker
) -> None:
    with ThreadPoolExecutor(2) as pool:
        ebb = pool.submit(_scenario, ebb_quota_broker.bootstrap)
        kafka = pool.submit(_scenario, apache_kafka_broker.bootstrap_servers)
        results = {"ebb-broker": ebb.result(), "apache-kafka": kafka.result()}
    for name, out in results.items():
        _check(name, out)
    producer, _java, reader = results["ebb-broker"]["ids"]
    m = ebb_quota_broker.metric
    assert m("ebb_client_quota_throttled_total", type="produce", user="", client_id=producer) >= 3
    assert m("ebb_client_quota_throttle_seconds_total", type="produce", user="", client_id=producer) > 0.3
    assert m("ebb_client_quota_throttled_total", type="fetch", user="", client_id=reader) >= 1


# -- the requests themselves, answered alike ------------------------------------------------------------


Pairs = list[tuple[str, str | None]]


def _alter(
    w: Wire, entries: list[tuple[Pairs, list[tuple[str, float, bool]]]], validate_only: bool = False
) -> dict[tuple[tuple[str, str | None], ...], tuple[int, str | None]]:
    """Each entity's (error code, message); Kafka answers in no particular order, so keyed by entity."""
    w.send_raw(w.frame(AlterClientQuotasRequest[1](entries=entries, validate_only=validate_only), 1))
    r = AlterResponse.decode(w.recv_frame(), version=1, header=True)
    return {
        tuple(sorted((e.entity_type, e.entity_name) for e in x.entity)): (x.error_code, x.error_message)
        for x in r.entries
    }


def _describe(
    w: Wire, components: list[tuple[str, int, str | None]], strict: bool
) -> tuple[int, str | None, list[Any] | None]:
    w.send_raw(w.frame(DescribeClientQuotasRequest[1](components=components, strict=strict), 1))
    r = DescribeResponse.decode(w.recv_frame(), version=1, header=True)
    entries = (
        None
        if r.entries is None
        else sorted(
            (
                sorted((e.entity_type, e.entity_name or "<default>") for e in x.entity),
                [(v.key, v.value) for v in x.values],
            )
            for x in r.entries
        )
    )
    return r.error_code, r.error_message, entries


def _describes(
    w: Wire, components: list[tuple[str, int, str | None]], strict: bool, entries: list[Any]
) -> None:
    """The filter answers `entries`, at once on ebb-broker, once the change reached the broker's metadata
    on Kafka (AlterClientQuotas is answered when the controller committed it)."""
    until(
        f"{components} described as {entries}",
        lambda: _describe(w, components, strict) == (0, "", entries),
        15,
    )


def test_quota_requests_get_kafkas_answers(side: Side) -> None:
    tag = uuid.uuid4().hex[:8]
    user, client = f"u-{tag}", f"c-{tag}"
    user_default_client = (("client-id", None), ("user", user))
    w = Wire(side.bootstrap)
    try:
        set_both = [("consumer_byte_rate", 2048.0, False), ("producer_byte_rate", 1024.0, False)]
        assert _alter(
            w,
            [
                ([("user", user), ("client-id", None)], [("producer_byte_rate", 4096.0, False)]),
                ([("client-id", client)], set_both),
                ([("user", user)], [("producer_byte_rate", 1.5, False)]),
                ([("user", "")], [("producer_byte_rate", 1.0, False)]),
                ([("client-id", f"{client}-x")], [("foo", 1.0, False)]),
            ],
        ) == {
            user_default_client: (0, None),
            (("client-id", client),): (0, None),
            (("user", user),): (42, "producer_byte_rate cannot be a fractional value."),
            (("user", ""),): (42, "Empty user not supported"),
            (("client-id", f"{client}-x"),): (42, "Invalid configuration key foo"),
        }
        by_user = [([("client-id", "<default>"), ("user", user)], [("producer_byte_rate", 4096.0)])]
        _describes(w, [("user", 0, user)], False, by_user)
        assert _describe(w, [("user", 0, user)], strict=True) == (0, "", [])
        both = [("consumer_byte_rate", 2048.0), ("producer_byte_rate", 1024.0)]
        _describes(w, [("client-id", 0, client)], True, [([("client-id", client)], both)])
        assert _describe(w, [("group", 2, None)], strict=False) == (35, "Unsupported entity type group", None)
        assert _describe(w, [("user", 0, None)], strict=False)[:2] == (
            42, "Request specified MATCH_TYPE_EXACT, but set match string to null."
        )  # fmt: skip
        # validate_only changes nothing; removing a key that is not set is no error.
        checked = _alter(
            w, [([("client-id", client)], [("producer_byte_rate", 9.0, False)])], validate_only=True
        )
        assert checked == {(("client-id", client),): (0, None)}
        assert _describe(w, [("client-id", 0, client)], strict=True) == (
            0,
            "",
            [([("client-id", client)], both)],
        )
        remove = [(k, 0.0, True) for k in ("consumer_byte_rate", "producer_byte_rate", "request_percentage")]
        removed = _alter(
            w,
            [
                ([("user", user), ("client-id", None)], [("producer_byte_rate", 0.0, True)]),
                ([("client-id", client)], remove),
            ],
        )
        assert removed == {user_default_client: (0, None), (("client-id", client),): (0, None)}
        _describes(w, [("user", 0, user)], False, [])
        _describes(w, [("client-id", 0, client)], False, [])
    finally:
        w.close()


def test_nulls_the_schema_forbids_close_the_connection_as_kafka_does(side: Side) -> None:
    """A v0 AlterClientQuotas with a null entity type and op list, and a DescribeClientQuotas with a null
    component list, as a hostile client can send them: neither field is nullable in Kafka's schema, so
    Kafka's reader refuses the request and closes the connection; ebb-broker does the same before any
    handler runs, and the next connection is served."""
    alter = struct.pack(">hhi", 49, 0, 1) + struct.pack(">h", -1)  # header v1: null client id
    alter += struct.pack(">ii", 1, 1) + struct.pack(">hh", -1, -1) + struct.pack(">i", -1) + b"\x00"
    describe = struct.pack(">hhi", 48, 0, 2) + struct.pack(">h", -1) + struct.pack(">i", -1) + b"\x00"
    for frame in (alter, describe):
        w = Wire(side.bootstrap)
        try:
            w.send_raw(struct.pack(">i", len(frame)) + frame)
            assert w.closed_by_peer(timeout=10)
        finally:
            w.close()
    w = Wire(side.bootstrap)
    try:
        _describes(w, [("client-id", 0, f"c-{uuid.uuid4().hex[:8]}")], False, [])
    finally:
        w.close()
