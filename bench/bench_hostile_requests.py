"""What parked fetches and duplicate-heavy requests cost a broker: ebb-broker and Apache Kafka side by side.

Both brokers run on this machine with their defaults, measured in turn within each phase:

- `produce, nothing parked`: EBB_BENCH_ROUNDS single-record produce round trips (confluent-kafka, acks=1,
  linger.ms=0) to a topic nobody fetches; the latency percentiles and the broker's CPU per produce.
- `produce, 4 fetches x 20,000 repeats parked`: the same while four connections each hold a Fetch v12
  naming one empty partition of another topic 20,000 times, with max_wait_ms 60,000 (the request of
  issue 25: on ebb-broker before the purgatory was keyed by partition, every produce woke and re-read all
  of them).
- `produce, 500 fetches parked`: the same while 500 connections each hold a plain Fetch (one partition,
  max_wait_ms 60,000).
- `idle, 500 fetches parked`: the broker's CPU over EBB_BENCH_IDLE_SECONDS with those 500 fetches and
  nothing else: what waiting costs.
- `fetch 1 partition x 20,000 repeats`: EBB_BENCH_ROUNDS / 10 Fetch requests (max_wait_ms 0) naming one
  partition holding one 1 KB record 20,000 times (a 560 KB request); the round trip, the broker's CPU
  per request and the response's size (a broker that reads each repeat answers 20,000 copies).

Ratio rows: ebb/Kafka for each figure. Without an assembled Apache Kafka (`make harness-kafka`), only
ebb-broker is measured and the notes say so.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.consumer.fetch import FetchResponse

from bench.brokers import cpu_seconds, kafka_available, ratio
from bench.report import emit
from harness.ebb_broker import EbbBroker
from tests.compat.wire import FETCH_VERSION, Wire, fetch_request

ROUNDS = int(os.environ.get("EBB_BENCH_ROUNDS", "1000"))
IDLE_SECONDS = float(os.environ.get("EBB_BENCH_IDLE_SECONDS", "5"))
REPEATS = 20_000
MANY = 500
MAX_WAIT_MS = 60_000
BUSY, PARKED, DATA = "busy", "parked", "data"  # produced to; fetched and empty; one 1 KB record


@dataclass
class Target:
    broker: str
    bootstrap: str
    pid: int


@contextlib.contextmanager
def _ebb(work: Path) -> Iterator[Target]:
    with EbbBroker(work / "ebb-data", configs={"offsets.topic.num.partitions": "4"}) as b:
        assert b.proc is not None
        yield Target("ebb-broker", b.bootstrap, b.proc.pid)


@contextlib.contextmanager
def _kafka(work: Path) -> Iterator[Target]:
    from harness.kafka import apache_kafka

    with apache_kafka(work / "kafka", {}) as k:
        yield Target("apache-kafka", k.bootstrap_servers, k.process.pid)


def _fetch_frame(wire: Wire, topic: str, repeats: int, max_wait_ms: int) -> bytes:
    request = fetch_request(
        topic,
        [(0, 0)] * repeats,
        max_wait_ms=max_wait_ms,
        min_bytes=1,
        max_bytes=50 * 1024 * 1024,
        partition_max_bytes=1024 * 1024,
    )
    return wire.frame(request, FETCH_VERSION)


def _topics(t: Target, *names: str) -> None:
    admin = AdminClient({"bootstrap.servers": t.bootstrap})
    for future in admin.create_topics([NewTopic(n, 1, 1) for n in names]).values():
        future.result(60)


def _producer(t: Target, topic: str) -> Producer:
    """A producer whose first produce went through (Kafka answers NOT_LEADER for a moment after creation)."""
    p = Producer({"bootstrap.servers": t.bootstrap, "acks": 1, "linger.ms": 0})
    p.produce(topic, b"warm-up")
    assert p.flush(60) == 0
    return p


def _produces(t: Target, p: Producer, topic: str, row: dict[str, Any]) -> None:
    """ROUNDS produce round trips: p50/p99 latency and the broker's CPU per produce."""
    seconds = []
    before = cpu_seconds(t.pid)
    for _ in range(ROUNDS):
        started = time.perf_counter()
        p.produce(topic, b"x" * 100)
        assert p.flush(60) == 0
        seconds.append(time.perf_counter() - started)
    row["cpu_us_per_op"] = (cpu_seconds(t.pid) - before) * 1e6 / ROUNDS
    _latency(seconds, row)


def _latency(seconds: list[float], row: dict[str, Any]) -> None:
    ordered = sorted(seconds)
    row["ops"] = len(ordered)
    row["p50_ms"] = statistics.median(ordered) * 1000
    row["p99_ms"] = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))] * 1000


@contextlib.contextmanager
def _parked(t: Target, connections: int, repeats: int) -> Iterator[None]:
    """`connections` connections, each with one Fetch parked on the empty PARKED topic."""
    wires = []
    try:
        for _ in range(connections):
            w = Wire(t.bootstrap, timeout=30)
            wires.append(w)
            w.send_raw(_fetch_frame(w, PARKED, repeats, MAX_WAIT_MS))
        time.sleep(1)  # every request read and parked (a benchmark may sleep; Kafka shows no count)
        yield
    finally:
        for w in wires:
            w.close()


def _duplicate_fetches(t: Target, topic: str, row: dict[str, Any]) -> None:
    """Fetches naming one partition REPEATS times: round trip, CPU per request and response size."""
    w = Wire(t.bootstrap, timeout=60)
    try:
        frame = _fetch_frame(w, topic, REPEATS, 0)
        rounds = max(ROUNDS // 10, 1)
        seconds, size = [], 0
        before = cpu_seconds(t.pid)
        for _ in range(rounds):
            started = time.perf_counter()
            w.send_raw(frame)
            body = w.recv_frame()
            seconds.append(time.perf_counter() - started)
            size = len(body)
        row["cpu_us_per_op"] = (cpu_seconds(t.pid) - before) * 1e6 / rounds
        _latency(seconds, row)
        response = FetchResponse.decode(body, version=FETCH_VERSION, header=True)
        row["partitions_answered"] = float(sum(len(x.partitions) for x in response.responses))
        row["response_bytes"] = float(size)
        row["request_bytes"] = len(frame)
    finally:
        w.close()


def _alone(t: Target) -> dict[str, Any]:
    row: dict[str, Any] = {}
    _produces(t, _producer(t, BUSY), BUSY, row)
    return row


def _four_repeated(t: Target) -> dict[str, Any]:
    row: dict[str, Any] = {}
    p = _producer(t, BUSY)
    with _parked(t, 4, REPEATS):
        _produces(t, p, BUSY, row)
    return row


def _many(t: Target) -> dict[str, Any]:
    row: dict[str, Any] = {}
    p = _producer(t, BUSY)
    with _parked(t, MANY, 1):
        _produces(t, p, BUSY, row)
        before, started = cpu_seconds(t.pid), time.monotonic()
        time.sleep(IDLE_SECONDS)
        row["idle_cpu_percent"] = (cpu_seconds(t.pid) - before) * 100 / (time.monotonic() - started)
    return row


def _duplicates(t: Target) -> dict[str, Any]:
    row: dict[str, Any] = {}
    p = _producer(t, DATA)
    p.produce(DATA, b"d" * 1000)
    assert p.flush(60) == 0
    _duplicate_fetches(t, DATA, row)
    return row


PHASES: list[tuple[str, Callable[[Target], dict[str, Any]]]] = [
    ("produce, nothing parked", _alone),
    (f"produce, 4 fetches x {REPEATS:,} repeats parked", _four_repeated),
    (f"produce + idle, {MANY} fetches parked", _many),
    (f"fetch 1 partition x {REPEATS:,} repeats", _duplicates),
]


def main() -> None:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ebb-bench-") as tmp, contextlib.ExitStack() as stack:
        work = Path(tmp)
        why_not = kafka_available()
        targets = [stack.enter_context(_ebb(work))]
        if why_not is None:
            targets.append(stack.enter_context(_kafka(work)))
        for t in targets:
            _topics(t, BUSY, PARKED, DATA)
        for phase, measure in PHASES:
            by_broker = {}
            for t in targets:  # the brokers take turns within each phase: the same minutes of load
                by_broker[t.broker] = {"phase": phase, "broker": t.broker, **measure(t)}
                rows.append(by_broker[t.broker])
            if len(by_broker) == 2:
                rows.append(ratio({"phase": phase, "broker": "ratio ebb/kafka"}, *by_broker.values()))
    notes = (
        f"{ROUNDS} produce round trips (acks=1, linger.ms=0, 100 B) per produce phase, "
        f"{max(ROUNDS // 10, 1)} duplicate-heavy fetches; "
        f"parked fetches: max_wait_ms {MAX_WAIT_MS}, min_bytes 1; "
        "cpu_us_per_op: the broker process's CPU per produce or fetch; "
        "load average at the end: " + " ".join(f"{x:.2f}" for x in os.getloadavg())
    )
    if why_not is not None:
        notes += f"; Apache Kafka not measured: {why_not}"
    emit("hostile_requests", rows, notes=notes)


if __name__ == "__main__":
    main()
