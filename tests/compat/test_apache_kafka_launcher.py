"""The Apache Kafka launcher other tiers and benchmarks build on: overrides apply, data lands in the
exposed data dir, and leaving the context leaves no broker behind."""

from __future__ import annotations

import socket
from pathlib import Path

from confluent_kafka import Producer

from harness.kafka import apache_kafka


def test_launcher_applies_overrides_exposes_data_dir_and_stops(tmp_path: Path) -> None:
    with apache_kafka(tmp_path / "kafka", {"num.partitions": "3"}) as broker:
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
        producer.produce("auto-created", key=b"k", value=b"v")
        assert producer.flush(30) == 0
        # auto.create.topics.enable with the overridden num.partitions, stored where the launcher says.
        assert sorted(p.name for p in broker.data_dir.glob("auto-created-*")) == [
            "auto-created-0",
            "auto-created-1",
            "auto-created-2",
        ]
        assert broker.start_seconds > 0
        process, host, port = broker.process, broker.host, broker.port
    assert process.poll() is not None
    with socket.socket() as s:
        assert s.connect_ex((host, port)) != 0
