"""ebb-broker against Apache Kafka (single-node KRaft): produce/fetch throughput, produce latency and
transactional produce throughput (KIP-98: EBB_BENCH_TXN_RECORDS records, default 20000, in transactions of
100 records, each committed before the next begins), on a PLAINTEXT listener and on a SASL_SSL one
(SCRAM-SHA-512 over TLS).

Both brokers run on this machine with their default segment settings, each serving both listeners at
once (the same certificate, made by harness/tls.py, and a SCRAM-SHA-512 user; no authorizer on either),
and are driven by the same clients with the same settings; the ratio rows say how ebb-broker compares
and what TLS+SASL costs it. Two clients: librdkafka through confluent-kafka (produce, fetch,
single-record latency, transactions), and Apache Kafka's own perf tools with the Java client
(`kafka-producer-perf-test`, `kafka-consumer-perf-test`, full JIT as their scripts run them; the
consumer figure is its fetch rate without the group join, the median of rounds the brokers take in
turn). Apache Kafka and its tools are included when the kafka-harness has assembled them
(`make harness-kafka`); otherwise only ebb-broker is measured with confluent-kafka and the notes say so.
Sizes: EBB_BENCH_RECORDS (default 200000) records of EBB_BENCH_RECORD_BYTES (default 100).
"""

from __future__ import annotations

import contextlib
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.brokers import cpu_seconds, kafka_available, ratio
from bench.report import emit
from harness.ebb_broker import EbbBroker
from harness.tls import TestCA

RECORDS = int(os.environ.get("EBB_BENCH_RECORDS", "200000"))
RECORD_BYTES = int(os.environ.get("EBB_BENCH_RECORD_BYTES", "100"))
LATENCY_SAMPLES = 2000
TXN_RECORDS = int(os.environ.get("EBB_BENCH_TXN_RECORDS", "20000"))
TXN_SIZE = 100
PRODUCER = {"acks": "all", "linger.ms": 5, "batch.size": 1_000_000, "compression.type": "none"}
# Each kafka-consumer-perf-test run is short and the machine is shared: the targets take turns, round
# after round; the median of each one's rounds is its figure (and the best round is shown too).
JAVA_FETCH_ROUNDS = 6
# The perf tools' JVM: what kafka-*-perf-test.sh runs (512 MiB heap, G1, full JIT), not the harness's
# quick-start options.
PERF_JVM_OPTS = ("-Xmx512m", "-XX:+UseG1GC", "-XX:-UsePerfData", "-Djava.awt.headless=true")

LISTENERS = ("plaintext", "sasl_ssl")
USER, PASSWORD = "bench", "bench-secret"
SCRAM_USER = f"SCRAM-SHA-512=[name={USER},password={PASSWORD}]"
Conf = dict[str, Any]


@dataclass
class Target:
    """One listener of one broker: every phase runs against each target in turn."""

    broker: str
    listener: str  # one of LISTENERS
    conf: Conf  # librdkafka settings that reach it
    java_config: Path  # the same for the Java perf tools (--command-config)
    pid: int  # the broker's process, for its CPU time
    row: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.row.update(broker=self.broker, listener=self.listener)

    @property
    def name(self) -> str:
        return f"{self.broker} {self.listener}"

    @property
    def bootstrap(self) -> str:
        return str(self.conf["bootstrap.servers"])

    def topic(self, base: str) -> str:
        """Each listener writes topics of its own, so its two listeners do not share a broker's log."""
        return f"{base}-{self.listener}"


def _targets(broker: str, pid: int, bootstraps: dict[str, str], ca: Path, work: Path) -> list[Target]:
    """A broker's targets: plaintext, and SCRAM-SHA-512 over TLS with the server certificate verified
    against the test CA, for librdkafka and for the Java tools alike."""
    librdkafka: dict[str, Conf] = {
        "plaintext": {},
        "sasl_ssl": {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": USER,
            "sasl.password": PASSWORD,
            "ssl.ca.location": str(ca),
        },
    }
    java: dict[str, dict[str, str]] = {
        "plaintext": {},
        "sasl_ssl": {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required "
                f'username="{USER}" password="{PASSWORD}";'
            ),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(ca),
        },
    }
    targets = []
    for listener in LISTENERS:
        java_config = work / f"{broker}-{listener}.properties"
        java_config.write_text("".join(f"{k}={v}\n" for k, v in java[listener].items()))
        conf = {"bootstrap.servers": bootstraps[listener], **librdkafka[listener]}
        targets.append(Target(broker, listener, conf, java_config, pid))
    return targets


@contextlib.contextmanager
def _ebb(work: Path, ca: TestCA) -> Iterator[list[Target]]:
    server = ca.issue("ebb-broker", "CN=localhost", server=True)
    configs = {
        "offsets.topic.num.partitions": "4",
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "ssl.keystore.location": str(server.keystore),
    }
    with EbbBroker(work / "ebb-data", configs=configs, add_scram=[SCRAM_USER]) as b:
        assert b.proc is not None
        bootstraps = {"plaintext": b.bootstrap_of("PLAINTEXT"), "sasl_ssl": b.bootstrap_of("SASL_SSL")}
        yield _targets("ebb-broker", b.proc.pid, bootstraps, ca.ca_pem, work)


@contextlib.contextmanager
def _kafka(work: Path, ca: TestCA) -> Iterator[list[Target]]:
    from harness.kafka import apache_kafka

    server = ca.issue("apache-kafka", "CN=localhost", server=True)
    overrides = {
        "log.segment.bytes": str(1024**3),
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        ),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(server.keystore),
    }
    with apache_kafka(
        work / "kafka", overrides, listeners={"SASL_SSL": "SASL_SSL"}, add_scram=(SCRAM_USER,)
    ) as k:
        bootstraps = {"plaintext": k.bootstrap_servers, "sasl_ssl": k.bootstrap_of("SASL_SSL")}
        yield _targets("apache-kafka", k.process.pid, bootstraps, ca.ca_pem, work)


@contextlib.contextmanager
def _broker_cpu(pid: int, into: dict[str, Any], key: str, records: int = RECORDS) -> Iterator[None]:
    """Record the broker's CPU microseconds per record spent in the block: unlike wall-clock rates, this
    hardly moves when other work loads the machine."""
    before = cpu_seconds(pid)
    yield
    into[key] = (cpu_seconds(pid) - before) * 1e6 / records


def _produce_throughput(conf: Conf, topic: str, count: int = RECORDS) -> tuple[float, float]:
    p = Producer({**conf, **PRODUCER})
    payload = b"x" * RECORD_BYTES
    started = time.perf_counter()
    for _ in range(count):
        while True:
            try:
                p.produce(topic, payload, partition=0)
                break
            except BufferError:
                p.poll(0.01)
    assert p.flush(120) == 0, "records still in flight after 120 s"
    seconds = time.perf_counter() - started
    return count / seconds, count * RECORD_BYTES / seconds / 1e6


def _txn_produce_throughput(conf: Conf, topic: str, count: int = TXN_RECORDS) -> float:
    """Records/s of a transactional producer (acks=all, idempotent) committing every TXN_SIZE records."""
    p = Producer({**conf, **PRODUCER, "transactional.id": f"bench-{topic}"})
    p.init_transactions(60)
    payload = b"t" * RECORD_BYTES
    started = time.perf_counter()
    for _ in range(count // TXN_SIZE):
        p.begin_transaction()
        for _ in range(TXN_SIZE):
            p.produce(topic, payload, partition=0)
        p.commit_transaction(60)
    seconds = time.perf_counter() - started
    return (count // TXN_SIZE) * TXN_SIZE / seconds


def _produce_latency(conf: Conf, topic: str) -> tuple[float, float]:
    p = Producer({**conf, **PRODUCER, "linger.ms": 0})
    samples: list[float] = []
    acked: list[float] = []  # delivery times, one per record, in order (one record in flight at a time)

    def on_delivery(_err: object, _msg: object) -> None:
        acked.append(time.perf_counter())

    for i in range(LATENCY_SAMPLES):
        started = time.perf_counter()
        p.produce(topic, b"y" * RECORD_BYTES, partition=0, on_delivery=on_delivery)
        while len(acked) <= i:
            p.poll(0.001)
        samples.append((acked[i] - started) * 1000)
    q = statistics.quantiles(samples, n=100)
    return q[49], q[98]


def _fetch_throughput(conf: Conf, topic: str) -> tuple[float, float]:
    """The rate librdkafka fetches the topic at, from offset 0, once connected."""
    c = Consumer(
        {
            **conf,
            "group.id": "bench",
            "enable.auto.commit": False,
            "fetch.max.bytes": 52428800,
            "max.partition.fetch.bytes": 10485760,
            # librdkafka stops fetching for this long (default 1 s) once queued.min.messages records wait in
            # its queue: at these sizes that one pause was most of the measured time, for either broker.
            "fetch.queue.backoff.ms": 0,
        }
    )
    partition = TopicPartition(topic, 0, 0)
    # Connect to the leader (TLS handshake and SCRAM exchange on SASL_SSL) before the clock starts.
    c.get_watermark_offsets(partition, timeout=30)
    c.assign([partition])
    got = 0
    started = time.perf_counter()
    while got < RECORDS:
        for msg in c.consume(min(10000, RECORDS - got), 1.0):  # no wait for records that will not come
            if not msg.error():
                got += 1
    seconds = time.perf_counter() - started
    c.close()
    return got / seconds, got * RECORD_BYTES / seconds / 1e6


def _java_produce_throughput(t: Target, topic: str) -> float:
    """kafka-producer-perf-test: records/s with acks=all (the Java producer is idempotent by default)."""
    from harness.kafka import kafka_tool

    out = kafka_tool(
        "kafka-producer-perf-test", "--bootstrap-server", t.bootstrap, "--command-config", str(t.java_config),
        "--topic", topic, "--num-records", str(RECORDS), "--record-size", str(RECORD_BYTES),
        "--throughput", "-1",
        "--command-property", "acks=all", "linger.ms=5", "batch.size=1000000",
        timeout=300, jvm_opts=PERF_JVM_OPTS,
    ).stdout  # fmt: skip
    # last line: "200000 records sent, 123456.7 records/sec (11.77 MB/sec), ..."
    summary = [line for line in out.splitlines() if "records sent" in line][-1]
    return float(summary.split("records sent,")[1].split("records/sec")[0])


def _java_fetch_once(t: Target, topic: str) -> float:
    """kafka-consumer-perf-test: records/s while fetching (fetch.nMsg.sec: the group join excluded)."""
    from harness.kafka import kafka_tool

    out = kafka_tool(
        "kafka-consumer-perf-test", "--bootstrap-server", t.bootstrap, "--command-config", str(t.java_config),
        "--topic", topic, "--num-records", str(RECORDS), "--group", f"perf-{uuid.uuid4().hex[:8]}",
        "--timeout", "30000",
        timeout=300, jvm_opts=PERF_JVM_OPTS,
    ).stdout  # fmt: skip
    lines = [line for line in out.splitlines() if line.strip()]
    header = [h.strip() for h in lines[-2].split(",")]
    values = [v.strip() for v in lines[-1].split(",")]
    row = dict(zip(header, values, strict=True))
    assert int(row["data.consumed.in.nMsg"]) >= RECORDS, row
    return float(row["fetch.nMsg.sec"])


def _each(targets: list[Target], what: str, work: Callable[[Target], None]) -> None:
    for t in targets:
        print(f"  {t.name}: {what}", flush=True)
        work(t)


def _measure(targets: list[Target], java_tools: bool) -> None:
    """Every phase on every target in turn, so all of them see the machine's load of the same minutes."""
    for t in targets:
        admin = AdminClient(dict(t.conf))
        bases = ("bench", "bench-lat", "warmup", "bench-java", "bench-txn")
        topics = [NewTopic(t.topic(base), 1, 1) for base in bases]
        for created in admin.create_topics(topics, operation_timeout=30).values():
            created.result(timeout=60)

    # Warm both sides (JIT for Kafka, caches for Python, TLS sessions) on another topic before measuring.
    def warm(t: Target) -> None:
        _produce_throughput(t.conf, t.topic("warmup"), RECORDS // 4)

    _each(targets, "warming up", warm)

    def produce(t: Target) -> None:
        with _broker_cpu(t.pid, t.row, "produce_cpu_us_rec"):
            t.row["produce_rec_s"], t.row["produce_MB_s"] = _produce_throughput(t.conf, t.topic("bench"))

    def fetch(t: Target) -> None:
        with _broker_cpu(t.pid, t.row, "fetch_cpu_us_rec"):
            t.row["fetch_rec_s"], t.row["fetch_MB_s"] = _fetch_throughput(t.conf, t.topic("bench"))

    def latency(t: Target) -> None:
        t.row["produce_p50_ms"], t.row["produce_p99_ms"] = _produce_latency(t.conf, t.topic("bench-lat"))

    def txn_produce(t: Target) -> None:
        with _broker_cpu(t.pid, t.row, "txn_produce_cpu_us_rec", TXN_RECORDS):
            t.row["txn_produce_rec_s"] = _txn_produce_throughput(t.conf, t.topic("bench-txn"))

    _each(targets, f"producing {RECORDS} records of {RECORD_BYTES} bytes", produce)
    _each(targets, "fetching them back", fetch)
    _each(targets, f"{LATENCY_SAMPLES} single-record produce round trips", latency)
    _each(targets, f"{TXN_RECORDS} records in transactions of {TXN_SIZE}", txn_produce)
    if not java_tools:
        return
    cpu = {t.name: 0.0 for t in targets}
    rates: dict[str, list[float]] = {t.name: [] for t in targets}

    def java_fetch(t: Target) -> None:
        before = cpu_seconds(t.pid)
        rates[t.name].append(_java_fetch_once(t, t.topic("bench")))
        cpu[t.name] += cpu_seconds(t.pid) - before

    for round_ in range(JAVA_FETCH_ROUNDS):
        _each(targets, f"kafka-consumer-perf-test round {round_ + 1}", java_fetch)
    for t in targets:
        t.row["java_fetch_rec_s"] = statistics.median(rates[t.name])
        t.row["java_fetch_best_rec_s"] = max(rates[t.name])
        t.row["java_fetch_cpu_us_rec"] = cpu[t.name] * 1e6 / (RECORDS * JAVA_FETCH_ROUNDS)

    def java_produce(t: Target) -> None:
        with _broker_cpu(t.pid, t.row, "java_produce_cpu_us_rec"):
            t.row["java_produce_rec_s"] = _java_produce_throughput(t, t.topic("bench-java"))

    _each(targets, f"kafka-producer-perf-test, {RECORDS} records", java_produce)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="ebb-bench-") as tmp, contextlib.ExitStack() as stack:
        work = Path(tmp)
        ca = TestCA(work / "pki")
        why_not = kafka_available()
        brokers = [stack.enter_context(_ebb(work, ca))]
        if why_not is None:
            brokers.append(stack.enter_context(_kafka(work, ca)))
        # Listener by listener, the brokers alternating within each.
        targets = [b[i] for i in range(len(LISTENERS)) for b in brokers]
        _measure(targets, java_tools=why_not is None)
    row = {(t.broker, t.listener): t.row for t in targets}
    rows = list(row.values())
    notes = (
        f"{RECORDS} records x {RECORD_BYTES} B, 1 partition, acks=all, linger.ms=5; sasl_ssl: SCRAM-SHA-512 "
        "over TLS (EC P-256 certificate); *_cpu_us_rec: the broker process's CPU per record in that phase; "
        "load average at the end: " + " ".join(f"{x:.2f}" for x in os.getloadavg())
    )
    ebb, kafka = "ebb-broker", "apache-kafka"
    for broker, short in ((ebb, "ebb"), (kafka, "kafka"))[: len(brokers)]:
        tls, plain = row[broker, "sasl_ssl"], row[broker, "plaintext"]
        rows.append(ratio({"broker": f"ratio {short} sasl_ssl/plaintext", "listener": ""}, tls, plain))
    if why_not is None:
        for listener in LISTENERS:
            rows.append(
                ratio(
                    {"broker": "ratio ebb/kafka", "listener": listener},
                    row[ebb, listener],
                    row[kafka, listener],
                )
            )
    else:
        notes += f"; Apache Kafka not measured: {why_not}"
    emit("broker", rows, notes=notes)


if __name__ == "__main__":
    main()
