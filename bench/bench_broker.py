"""ebb-broker against Apache Kafka (single-node KRaft): produce/fetch throughput, produce latency,
transactional produce throughput (KIP-98: EBB_BENCH_TXN_RECORDS records, default 20000, in transactions of
100 records, each committed before the next begins).

Both brokers run on this machine with their default segment settings and are driven by the same
client (librdkafka through confluent-kafka) with the same settings; the ratio columns say how
ebb-broker compares. Apache Kafka is included when the kafka-harness has assembled it
(`make harness-kafka`); otherwise only ebb-broker is measured and the notes say so.
Sizes: EBB_BENCH_RECORDS (default 200000) records of EBB_BENCH_RECORD_BYTES (default 100).
"""

from __future__ import annotations

import contextlib
import os
import statistics
import tempfile
import time
from collections.abc import Iterator
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
def _ebb(work: Path) -> Iterator[str]:
    with EbbBroker(work / "ebb-data", configs={"offsets.topic.num.partitions": "4"}) as b:
        yield b.bootstrap


@contextlib.contextmanager
def _kafka(work: Path) -> Iterator[str]:
    from harness.kafka import apache_kafka

    with apache_kafka(work / "kafka", {"log.segment.bytes": str(1024**3)}) as k:
        yield k.bootstrap_servers


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


def _measure(name: str, bootstrap: str) -> dict[str, Any]:
    AdminClient({"bootstrap.servers": bootstrap}).create_topics(
        [NewTopic("bench", 1, 1), NewTopic("bench-lat", 1, 1)]
    )
    time.sleep(1)
    # Warm both sides (JIT for Kafka, caches for Python) on another topic before measuring.
    print(f"  {name}: warming up", flush=True)
    AdminClient({"bootstrap.servers": bootstrap}).create_topics([NewTopic("warmup", 1, 1)])
    time.sleep(0.5)
    _produce_throughput(bootstrap, "warmup", RECORDS // 4)
    print(f"  {name}: producing {RECORDS} records of {RECORD_BYTES} bytes", flush=True)
    p_rate, p_mb = _produce_throughput(bootstrap, "bench")
    print(f"  {name}: fetching them back", flush=True)
    f_rate, f_mb = _fetch_throughput(bootstrap, "bench")
    print(f"  {name}: {LATENCY_SAMPLES} single-record produce round trips", flush=True)
    p50, p99 = _produce_latency(bootstrap, "bench-lat")
    print(f"  {name}: {TXN_RECORDS} records in transactions of {TXN_SIZE}", flush=True)
    AdminClient({"bootstrap.servers": bootstrap}).create_topics([NewTopic("bench-txn", 1, 1)])
    time.sleep(0.5)
    txn_rate = _txn_produce_throughput(bootstrap, "bench-txn")
    return {
        "broker": name,
        "produce_rec_s": p_rate,
        "produce_MB_s": p_mb,
        "fetch_rec_s": f_rate,
        "fetch_MB_s": f_mb,
        "produce_p50_ms": p50,
        "produce_p99_ms": p99,
        "txn_produce_rec_s": txn_rate,
    }


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory(prefix="ebb-bench-") as tmp:
        work = Path(tmp)
        with _ebb(work) as bootstrap:
            rows.append(_measure("ebb-broker", bootstrap))
        why_not = _kafka_available()
        if why_not is None:
            with _kafka(work) as bootstrap:
                rows.append(_measure("apache-kafka", bootstrap))
    notes = f"{RECORDS} records x {RECORD_BYTES} B, 1 partition, acks=all, linger.ms=5, confluent-kafka"
    if len(rows) == 2:
        ebb, kafka = rows
        rows.append(
            {
                "broker": "ratio ebb/kafka",
                "produce_rec_s": ebb["produce_rec_s"] / kafka["produce_rec_s"],
                "fetch_rec_s": ebb["fetch_rec_s"] / kafka["fetch_rec_s"],
                "produce_p50_ms": ebb["produce_p50_ms"] / kafka["produce_p50_ms"],
                "produce_p99_ms": ebb["produce_p99_ms"] / kafka["produce_p99_ms"],
                "txn_produce_rec_s": ebb["txn_produce_rec_s"] / kafka["txn_produce_rec_s"],
            }
        )
    else:
        notes += f"; Apache Kafka not measured: {why_not}"
    emit("broker", rows, notes=notes)


if __name__ == "__main__":
    main()
