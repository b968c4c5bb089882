"""Kafka clients the cluster tier runs inside pods (the broker image's kafka-python), where the broker's
advertised name resolves: `python kafka_client.py COMMAND ...`, one JSON object per output line.

- create-topics NAME:PARTITIONS...
- produce TOPIC COUNT [--prefix P] [--interval S] [--age-ms MS] [--spread N] [--stop-file F]: acks=all,
  timestamps MS in the past, record i to partition i % N (else the default partitioner), up to COUNT records
  or until file F exists; one line per acknowledged record ({"partition", "offset", "value"}) or per failed
  one ({"error", "value"}); then {"done": N}
- read TOPIC: every record from the log start of each partition ({"partition", "offset", "value"})
- read-group TOPIC GROUP: a group member that reads on forever from the group's committed offsets (the
  log start for a new group), committing after each poll; one line per record, {"error": ...} for
  anything that goes wrong (it carries on: a failed commit means those records are read again)
- commit TOPIC GROUP PARTITION:OFFSET...
- log-start TOPIC: {"partition": log start offset}
- describe-topic-configs TOPIC: the topic's configs
- get URL: the body of an HTTP GET (metrics endpoints)
"""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from typing import Any

BOOTSTRAP = "ebb-broker.ebb.svc.cluster.local:9092"
# Where the client pods mount the chart's admin password and CA, when the chart's broker speaks
# SASL_SSL (both Secrets are optional mounts: a PLAINTEXT broker has neither).
ADMIN_PASSWORD = "/etc/ebb-kafka/admin/password"
CA_FILE = "/etc/ebb-kafka/tls/ca.crt"


def security() -> dict[str, str]:
    """kafka-python's settings for the chart's broker: SASL_SSL as its admin, or PLAINTEXT."""
    try:
        with open(ADMIN_PASSWORD) as f:
            password = f.read().strip()
    except FileNotFoundError:
        return {}
    return {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "admin",
        "sasl_plain_password": password,
        "ssl_cafile": CA_FILE,
    }


def out(obj: object) -> None:
    print(json.dumps(obj), flush=True)


def create_topics(specs: list[str]) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = KafkaAdminClient(bootstrap_servers=BOOTSTRAP, **security())
    for spec in specs:
        name, partitions = spec.split(":")
        try:
            admin.create_topics([NewTopic(name, int(partitions), 1)])
        except TopicAlreadyExistsError:
            pass
        out({"topic": name})
    admin.close()


def produce(
    topic: str, count: int, prefix: str, interval: float, age_ms: int, spread: int, stop_file: str
) -> None:
    import os

    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=BOOTSTRAP,
        **security(),
        acks="all",
        retries=1000,
        retry_backoff_ms=200,
        request_timeout_ms=10000,
        delivery_timeout_ms=180000,
        max_in_flight_requests_per_connection=1,
    )
    acked = 0
    for i in range(count):
        if stop_file and os.path.exists(stop_file):
            break
        value = f"{prefix}{i}"
        try:
            timestamp = int(time.time() * 1000) - age_ms + i
            partition = i % spread if spread else None
            future = producer.send(topic, value=value.encode(), partition=partition, timestamp_ms=timestamp)
            meta = future.get(timeout=200)
            out({"partition": meta.partition, "offset": meta.offset, "value": value})
            acked += 1
        except Exception as exc:
            out({"error": repr(exc), "value": value})
        if interval:
            time.sleep(interval)
    producer.close(timeout=30)
    out({"done": acked})


def _assigned_consumer(topic: str) -> tuple[Any, list[Any]]:  # kafka-python is untyped
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP, enable_auto_commit=False, **security())
    partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or [])]
    consumer.assign(partitions)
    return consumer, partitions


def read(topic: str) -> None:
    consumer, partitions = _assigned_consumer(topic)
    consumer.seek_to_beginning(*partitions)
    ends = consumer.end_offsets(partitions)
    pending = {tp for tp in partitions if consumer.position(tp) < ends[tp]}
    deadline = time.monotonic() + 120
    while pending and time.monotonic() < deadline:
        for tp, records in consumer.poll(timeout_ms=1000).items():
            for r in records:
                out({"partition": r.partition, "offset": r.offset, "value": r.value.decode()})
            if consumer.position(tp) >= ends[tp]:
                pending.discard(tp)
    if pending:
        out({"error": f"not read to the end: {sorted(tp.partition for tp in pending)}"})
    consumer.close()


def read_group(topic: str, group: str) -> None:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=BOOTSTRAP,
        **security(),
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    while True:
        try:
            batches = consumer.poll(timeout_ms=1000)
        except Exception as exc:
            out({"error": repr(exc)})
            time.sleep(1)
            continue
        for records in batches.values():
            for r in records:
                out({"partition": r.partition, "offset": r.offset, "value": r.value.decode()})
        if batches:
            try:
                consumer.commit()
            except Exception as exc:  # a broker restart: these records come again from the last commit
                out({"error": repr(exc)})
                continue
            out({"committed": {str(tp.partition): consumer.position(tp) for tp in batches}})


def commit(topic: str, group: str, specs: list[str]) -> None:
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    consumer = KafkaConsumer(
        bootstrap_servers=BOOTSTRAP, group_id=group, enable_auto_commit=False, **security()
    )
    offsets = {}
    for spec in specs:
        partition, offset = spec.split(":")
        offsets[TopicPartition(topic, int(partition))] = OffsetAndMetadata(int(offset), "", -1)
    consumer.commit(offsets)
    consumer.close()
    out({"group": group})


def log_start(topic: str) -> None:
    consumer, partitions = _assigned_consumer(topic)
    out({str(tp.partition): offset for tp, offset in consumer.beginning_offsets(partitions).items()})
    consumer.close()


def describe_topic_configs(topic: str) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=BOOTSTRAP, **security())
    # {resource type: {name: {config: {"value": ...}}}}; the topic's own (non-default) configs.
    described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    out({key: entry["value"] for key, entry in described["topic"][topic].items()})
    admin.close()


def main(argv: list[str]) -> None:
    command, *args = argv
    if command == "create-topics":
        create_topics(args)
    elif command == "produce":
        topic, count, *rest = args
        options = dict(zip(rest[::2], rest[1::2], strict=True))
        produce(
            topic,
            int(count),
            options.get("--prefix", "v"),
            float(options.get("--interval", "0")),
            int(options.get("--age-ms", "0")),
            int(options.get("--spread", "0")),
            options.get("--stop-file", ""),
        )
    elif command == "read":
        read(args[0])
    elif command == "read-group":
        read_group(args[0], args[1])
    elif command == "commit":
        commit(args[0], args[1], args[2:])
    elif command == "log-start":
        log_start(args[0])
    elif command == "describe-topic-configs":
        describe_topic_configs(args[0])
    elif command == "get":
        with urllib.request.urlopen(args[0], timeout=10) as resp:
            sys.stdout.write(resp.read().decode())
    else:
        raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    main(sys.argv[1:])
