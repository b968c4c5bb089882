"""ebb-broker against Apache Kafka (single-node KRaft): produce/fetch throughput, produce latency,
transactional produce throughput (KIP-98: EBB_BENCH_TXN_RECORDS records, default 20000, in transactions of
100 records, each committed before the next begins).

Both brokers run on this machine with their default segment settings and are driven by the same
clients with the same settings; the ratio row says how ebb-broker compares. Two clients: librdkafka
through confluent-kafka (produce, fetch, single-record latency), and Apache Kafka's own perf tools with
the Java client (`kafka-producer-perf-test`, `kafka-consumer-perf-test`, full JIT as their scripts run
them; the consumer figure is its fetch rate without the group join, the median of rounds the two
brokers take in turn). Apache Kafka and its tools are
included when the kafka-harness has assembled them (`make harness-kafka`); otherwise only ebb-broker is
measured with confluent-kafka and the notes say so.
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

from bench.report import emit
from harness.ebb_broker import EbbBroker

RECORDS = int(os.environ.get("EBB_BENCH_RECORDS", "200000"))
RECORD_BYTES = int(os.environ.get("EBB_BENCH_RECORD_BYTES", "100"))
LATENCY_SAMPLES = 2000
TXN_RECORDS = int(os.environ.get("EBB_BENCH_TXN_RECORDS", "20000"))
TXN_SIZE = 100
PRODUCER = {"acks": "all", "linger.ms": 5, "batch.size": 1_000_000, "compression.type": "none"}


@contextlib.contextmanager
def _ebb(work: Path) -> Iterator[tuple[str, int]]:
    with EbbBroker(work / "ebb-data", configs={"offsets.topic.num.partitions": "4"}) as b:
        assert b.proc is not None
        yield b.bootstrap, b.proc.pid


@contextlib.contextmanager
def _kafka(work: Path) -> Iterator[tuple[str, int]]:
    from harness.kafka import apache_kafka

    with apache_kafka(work / "kafka", {"log.segment.bytes": str(1024**3)}) as k:
        yield k.bootstrap_servers, k.process.pid


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (every thread), from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def _broker_cpu(pid: int, into: dict[str, Any], key: str, records: int = RECORDS) -> Iterator[None]:
    """Record the broker's CPU microseconds per record spent in the block: unlike wall-clock rates, this
    hardly moves when other work loads the machine."""
    before = _cpu_seconds(pid)
    yield
    into[key] = (_cpu_seconds(pid) - before) * 1e6 / records


def _kafka_available() -> str | None:
    """None when Apache Kafka can be started, else why not."""
    try:
        from harness.kafka import libs_dir
    except ImportError:
        return "harness/kafka.py is not on this branch"
    try:
        libs_dir()
    except Exception as exc:
        return f"Apache Kafka is not assembled ({exc}); run `make harness-kafka`"
    return None


def _produce_throughput(bootstrap: str, topic: str, count: int = RECORDS) -> tuple[float, float]:
    p = Producer({"bootstrap.servers": bootstrap, **PRODUCER})
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


def _txn_produce_throughput(bootstrap: str, topic: str, count: int = TXN_RECORDS) -> float:
    """Records/s of a transactional producer (acks=all, idempotent) committing every TXN_SIZE records."""
    p = Producer({"bootstrap.servers": bootstrap, **PRODUCER, "transactional.id": f"bench-{topic}"})
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


def _produce_latency(bootstrap: str, topic: str) -> tuple[float, float]:
    p = Producer({"bootstrap.servers": bootstrap, **PRODUCER, "linger.ms": 0})
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


def _fetch_throughput(bootstrap: str, topic: str) -> tuple[float, float]:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench",
            "enable.auto.commit": False,
            "fetch.max.bytes": 52428800,
            "max.partition.fetch.bytes": 10485760,
        }
    )
    c.assign([TopicPartition(topic, 0, 0)])
    got = 0
    started = time.perf_counter()
    while got < RECORDS:
        for msg in c.consume(10000, 1.0):
            if not msg.error():
                got += 1
    seconds = time.perf_counter() - started
    c.close()
    return got / seconds, got * RECORD_BYTES / seconds / 1e6


# The perf tools' JVM: what kafka-*-perf-test.sh runs (512 MiB heap, G1, full JIT), not the harness's
# quick-start options.
PERF_JVM_OPTS = ("-Xmx512m", "-XX:+UseG1GC", "-XX:-UsePerfData", "-Djava.awt.headless=true")


def _java_produce_throughput(bootstrap: str, topic: str) -> float:
    """kafka-producer-perf-test: records/s with acks=all (the Java producer is idempotent by default)."""
    from harness.kafka import kafka_tool

    out = kafka_tool(
        "kafka-producer-perf-test", "--topic", topic, "--num-records", str(RECORDS),
        "--record-size", str(RECORD_BYTES), "--throughput", "-1",
        "--producer-props", f"bootstrap.servers={bootstrap}", "acks=all", "linger.ms=5", "batch.size=1000000",
        timeout=300, jvm_opts=PERF_JVM_OPTS,
    ).stdout  # fmt: skip
    # last line: "200000 records sent, 123456.7 records/sec (11.77 MB/sec), ..."
    summary = [line for line in out.splitlines() if "records sent" in line][-1]
    return float(summary.split("records sent,")[1].split("records/sec")[0])


JAVA_FETCH_ROUNDS = 3


def _java_fetch_once(bootstrap: str, topic: str) -> float:
    """kafka-consumer-perf-test: records/s while fetching (fetch.nMsg.sec: the group join excluded)."""
    from harness.kafka import kafka_tool

    out = kafka_tool(
        "kafka-consumer-perf-test", "--bootstrap-server", bootstrap, "--topic", topic,
        "--num-records", str(RECORDS), "--group", f"perf-{uuid.uuid4().hex[:8]}", "--timeout", "30000",
        timeout=300, jvm_opts=PERF_JVM_OPTS,
    ).stdout  # fmt: skip
    lines = [line for line in out.splitlines() if line.strip()]
    header = [h.strip() for h in lines[-2].split(",")]
    values = [v.strip() for v in lines[-1].split(",")]
    row = dict(zip(header, values, strict=True))
    assert int(row["data.consumed.in.nMsg"]) >= RECORDS, row
    return float(row["fetch.nMsg.sec"])


# Each kafka-consumer-perf-test run is short and the machine is shared: the brokers take turns, round after
# round; the median of each one's rounds is its figure (and the best round is shown too).
JAVA_FETCH_ROUNDS = 6


@dataclass
class Target:
    name: str
    bootstrap: str
    pid: int
    row: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.row["broker"] = self.name


def _each(targets: list[Target], what: str, work: Callable[[Target], None]) -> None:
    for t in targets:
        print(f"  {t.name}: {what}", flush=True)
        work(t)


def _measure(targets: list[Target], java_tools: bool) -> None:
    """Every phase on every broker in turn, so both see the machine's load of the same minutes."""
    for t in targets:
        admin = AdminClient({"bootstrap.servers": t.bootstrap})
        admin.create_topics([NewTopic(n, 1, 1) for n in ("bench", "bench-lat", "warmup", "bench-java")])
    time.sleep(1)

    # Warm both sides (JIT for Kafka, caches for Python) on another topic before measuring.
    def warm(t: Target) -> None:
        _produce_throughput(t.bootstrap, "warmup", RECORDS // 4)

    _each(targets, "warming up", warm)

    def produce(t: Target) -> None:
        with _broker_cpu(t.pid, t.row, "produce_cpu_us_rec"):
            t.row["produce_rec_s"], t.row["produce_MB_s"] = _produce_throughput(t.bootstrap, "bench")

    def fetch(t: Target) -> None:
        with _broker_cpu(t.pid, t.row, "fetch_cpu_us_rec"):
            t.row["fetch_rec_s"], t.row["fetch_MB_s"] = _fetch_throughput(t.bootstrap, "bench")

    def latency(t: Target) -> None:
        t.row["produce_p50_ms"], t.row["produce_p99_ms"] = _produce_latency(t.bootstrap, "bench-lat")

    def txn_produce(t: Target) -> None:
        admin = AdminClient({"bootstrap.servers": t.bootstrap})
        admin.create_topics([NewTopic("bench-txn", 1, 1)])["bench-txn"].result(30)
        with _broker_cpu(t.pid, t.row, "txn_produce_cpu_us_rec", TXN_RECORDS):
            t.row["txn_produce_rec_s"] = _txn_produce_throughput(t.bootstrap, "bench-txn")

    _each(targets, f"producing {RECORDS} records of {RECORD_BYTES} bytes", produce)
    _each(targets, "fetching them back", fetch)
    _each(targets, f"{LATENCY_SAMPLES} single-record produce round trips", latency)
    _each(targets, f"{TXN_RECORDS} records in transactions of {TXN_SIZE}", txn_produce)
    if not java_tools:
        return
    cpu = {t.name: 0.0 for t in targets}
    rates: dict[str, list[float]] = {t.name: [] for t in targets}

    def java_fetch(t: Target) -> None:
        before = _cpu_seconds(t.pid)
        rates[t.name].append(_java_fetch_once(t.bootstrap, "bench"))
        cpu[t.name] += _cpu_seconds(t.pid) - before

    for round_ in range(JAVA_FETCH_ROUNDS):
        _each(targets, f"kafka-consumer-perf-test round {round_ + 1}", java_fetch)
    for t in targets:
        t.row["java_fetch_rec_s"] = statistics.median(rates[t.name])
        t.row["java_fetch_best_rec_s"] = max(rates[t.name])
        t.row["java_fetch_cpu_us_rec"] = cpu[t.name] * 1e6 / (RECORDS * JAVA_FETCH_ROUNDS)

    def java_produce(t: Target) -> None:
        with _broker_cpu(t.pid, t.row, "java_produce_cpu_us_rec"):
            t.row["java_produce_rec_s"] = _java_produce_throughput(t.bootstrap, "bench-java")

    _each(targets, f"kafka-producer-perf-test, {RECORDS} records", java_produce)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="ebb-bench-") as tmp, contextlib.ExitStack() as stack:
        work = Path(tmp)
        why_not = _kafka_available()
        bootstrap, pid = stack.enter_context(_ebb(work))
        targets = [Target("ebb-broker", bootstrap, pid)]
        if why_not is None:
            bootstrap, pid = stack.enter_context(_kafka(work))
            targets.append(Target("apache-kafka", bootstrap, pid))
        _measure(targets, java_tools=why_not is None)
        rows = [t.row for t in targets]
    notes = (
        f"{RECORDS} records x {RECORD_BYTES} B, 1 partition, acks=all, linger.ms=5; *_cpu_us_rec: the broker "
        f"process's CPU per record in that phase (load average at the end: {os.getloadavg()[0]:.1f})"
    )
    if len(rows) == 2:
        ebb, kafka = rows
        rows.append(
            {
                "broker": "ratio ebb/kafka",
                "produce_rec_s": ebb["produce_rec_s"] / kafka["produce_rec_s"],
                "fetch_rec_s": ebb["fetch_rec_s"] / kafka["fetch_rec_s"],
                "produce_p50_ms": ebb["produce_p50_ms"] / kafka["produce_p50_ms"],
                "produce_p99_ms": ebb["produce_p99_ms"] / kafka["produce_p99_ms"],
                "java_fetch_rec_s": ebb["java_fetch_rec_s"] / kafka["java_fetch_rec_s"],
                "java_fetch_best_rec_s": ebb["java_fetch_best_rec_s"] / kafka["java_fetch_best_rec_s"],
                "java_produce_rec_s": ebb["java_produce_rec_s"] / kafka["java_produce_rec_s"],
                "txn_produce_rec_s": ebb["txn_produce_rec_s"] / kafka["txn_produce_rec_s"],
                **{k: ebb[k] / kafka[k] for k in ebb if k.endswith("_cpu_us_rec")},
            }
        )
    else:
        notes += f"; Apache Kafka not measured: {why_not}"
    emit("broker", rows, notes=notes)


if __name__ == "__main__":
    main()
