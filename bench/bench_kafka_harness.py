"""What the Apache Kafka harness costs a test run: broker start and stop, and one CLI tool invocation.

The broker start covers `kafka-storage format` plus the JVM start until the broker serves; a test session
pays it once. Every Java tool call pays one JVM start, which is why the compat tests keep them few.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from bench.report import emit
from harness.kafka import KAFKA_VERSION, apache_kafka, kafka_tool

RUNS = 3


def main() -> None:
    starts: list[float] = []
    stops: list[float] = []
    tools: list[float] = []
    for run in range(RUNS):
        print(f"  start {run + 1}/{RUNS}: Apache Kafka {KAFKA_VERSION} single-node KRaft", flush=True)
        with tempfile.TemporaryDirectory(prefix="ebb-bench-kafka-") as tmp:
            with apache_kafka(Path(tmp)) as broker:
                starts.append(broker.start_seconds)
                t = time.monotonic()
                kafka_tool(
                    "kafka-configs",
                    "--bootstrap-server",
                    broker.bootstrap_servers,
                    "--describe",
                    "--entity-type",
                    "brokers",
                    "--entity-default",
                )
                tools.append(time.monotonic() - t)
                t = time.monotonic()
            stops.append(time.monotonic() - t)
    rows = [
        _row("broker start (format + serve)", starts),
        _row("broker stop (SIGTERM, controlled shutdown)", stops),
        _row("one CLI tool call (kafka-configs --describe)", tools),
    ]
    emit("kafka_harness", rows, notes=f"Apache Kafka {KAFKA_VERSION}, {RUNS} runs each, seconds")


def _row(what: str, samples: list[float]) -> dict[str, object]:
    return {
        "what": what,
        "median_s": statistics.median(samples),
        "min_s": min(samples),
        "max_s": max(samples),
    }
