"""ebb-broker against Apache Kafka (single-node KRaft): produce/fetch throughput, produce latency,
in plaintext and over SASL_SSL (SCRAM-SHA-512 over TLS 1.3).

Both brokers run on this machine with their default segment settings and are driven by the same
client (librdkafka through confluent-kafka) with the same settings; the ratio rows say how
ebb-broker compares, and what TLS+SASL costs it. Each broker serves both listeners at once (the same
certificate, made by harness/tls.py, and a SCRAM-SHA-512 user); no authorizer on either. Apache Kafka
is included when the kafka-harness has assembled it (`make harness-kafka`); otherwise only ebb-broker is
measured and the notes say so. Sizes: EBB_BENCH_RECORDS (default 200000) records of
EBB_BENCH_RECORD_BYTES (default 100).
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
from harness.tls import TestCA

RECORDS = int(os.environ.get("EBB_BENCH_RECORDS", "200000"))
RECORD_BYTES = int(os.environ.get("EBB_BENCH_RECORD_BYTES", "100"))
LATENCY_SAMPLES = 2000
PRODUCER = {"acks": "all", "linger.ms": 5, "batch.size": 1_000_000, "compression.type": "none"}


USER, PASSWORD = "bench", "bench-secret"
Conf = dict[str, Any]


def _confs(plain: str, sasl_ssl: str, ca: Path) -> dict[str, Conf]:
    """librdkafka settings for each listener: plaintext, and SCRAM-SHA-512 over TLS (CA verified)."""
    return {
        "plaintext": {"bootstrap.servers": plain},
        "sasl_ssl": {
            "bootstrap.servers": sasl_ssl,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": USER,
            "sasl.password": PASSWORD,
            "ssl.ca.location": str(ca),
        },
    }


@contextlib.contextmanager
def _ebb(work: Path, ca: TestCA) -> Iterator[dict[str, Conf]]:
    server = ca.issue("ebb-broker", "CN=localhost", server=True)
    configs = {
        "offsets.topic.num.partitions": "4",
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "ssl.keystore.location": str(server.keystore),
    }
    scram = [f"SCRAM-SHA-512=[name={USER},password={PASSWORD}]"]
    with EbbBroker(work / "ebb-data", configs=configs, add_scram=scram) as b:
        yield _confs(b.bootstrap_of("PLAINTEXT"), b.bootstrap_of("SASL_SSL"), ca.ca_pem)


@contextlib.contextmanager
def _kafka(work: Path, ca: TestCA) -> Iterator[dict[str, Conf]]:
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
    scram = (f"SCRAM-SHA-512=[name={USER},password={PASSWORD}]",)
    with apache_kafka(work / "kafka", overrides, listeners={"SASL_SSL": "SASL_SSL"}, add_scram=scram) as k:
        yield _confs(k.bootstrap_servers, k.bootstrap_of("SASL_SSL"), ca.ca_pem)


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
    c = Consumer(
        {
            **conf,
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


def _measure(name: str, conf: Conf, suffix: str) -> dict[str, Any]:
    """One broker on one listener; each listener writes topics of its own (`suffix`)."""
    bench, lat, warm = f"bench-{suffix}", f"bench-lat-{suffix}", f"warmup-{suffix}"
    AdminClient(dict(conf)).create_topics([NewTopic(bench, 1, 1), NewTopic(lat, 1, 1), NewTopic(warm, 1, 1)])
    time.sleep(1)
    # Warm both sides (JIT for Kafka, caches for Python) on another topic before measuring.
    print(f"  {name}: warming up", flush=True)
    _produce_throughput(conf, warm, RECORDS // 4)
    print(f"  {name}: producing {RECORDS} records of {RECORD_BYTES} bytes", flush=True)
    p_rate, p_mb = _produce_throughput(conf, bench)
    print(f"  {name}: fetching them back", flush=True)
    f_rate, f_mb = _fetch_throughput(conf, bench)
    print(f"  {name}: {LATENCY_SAMPLES} single-record produce round trips", flush=True)
    p50, p99 = _produce_latency(conf, lat)
    return {
        "broker": name,
        "produce_rec_s": p_rate,
        "produce_MB_s": p_mb,
        "fetch_rec_s": f_rate,
        "fetch_MB_s": f_mb,
        "produce_p50_ms": p50,
        "produce_p99_ms": p99,
    }


def _ratio(label: str, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    return {
        "broker": label,
        **{k: a[k] / b[k] for k in ("produce_rec_s", "fetch_rec_s", "produce_p50_ms", "produce_p99_ms")},
    }


def main() -> None:
    found: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="ebb-bench-") as tmp:
        work = Path(tmp)
        ca = TestCA(work / "pki")
        with _ebb(work, ca) as confs:
            for listener, conf in confs.items():
                found[f"ebb-broker {listener}"] = _measure(f"ebb-broker {listener}", conf, listener)
        why_not = _kafka_available()
        if why_not is None:
            with _kafka(work, ca) as confs:
                for listener, conf in confs.items():
                    found[f"apache-kafka {listener}"] = _measure(f"apache-kafka {listener}", conf, listener)
    rows = list(found.values())
    notes = (
        f"{RECORDS} records x {RECORD_BYTES} B, 1 partition, acks=all, linger.ms=5, confluent-kafka; "
        "sasl_ssl = SCRAM-SHA-512 over TLS 1.3 (EC P-256 certificate); load average at the end: "
        + " ".join(f"{x:.2f}" for x in os.getloadavg())
    )
    ebb_plain, ebb_tls = found["ebb-broker plaintext"], found["ebb-broker sasl_ssl"]
    rows.append(_ratio("ratio ebb sasl_ssl/plaintext", ebb_tls, ebb_plain))
    if why_not is None:
        rows.append(_ratio("ratio ebb/kafka plaintext", ebb_plain, found["apache-kafka plaintext"]))
        rows.append(_ratio("ratio ebb/kafka sasl_ssl", ebb_tls, found["apache-kafka sasl_ssl"]))
    else:
        notes += f"; Apache Kafka not measured: {why_not}"
    emit("broker", rows, notes=notes)


if __name__ == "__main__":
    main()
