"""Apache Kafka's own Java CLI tools against a running broker, as an operator would use them.

Every test runs against each target a user may point the tools at. Apache Kafka itself is always a target:
it proves the harness and these expectations against the reference implementation, and it is the second
target the operator manages. Java tools start a JVM each, so every test keeps its invocations few and uses
confluent-kafka (librdkafka) for the setup steps that are not the tool under test.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from harness.bounded import close_within, until
from harness.dump_log import dump_consumer_offsets, dump_log
from harness.kafka import kafka_tool
from tests.compat.clients import polled


@dataclass(frozen=True)
class Target:
    """A broker the tools talk to: where it listens, where its partitions live, which configs it knows."""

    name: str
    bootstrap_servers: str
    data_dir: Path
    # Ebb's own topic configs (KIP-68 retention.commitoffset.ms and .groups, KIP-87
    # tombstone.null.value.enable).
    has_ebb_configs: bool


@pytest.fixture(params=["ebb-broker", "apache-kafka"])
def target(request: pytest.FixtureRequest) -> Target:
    if request.param == "ebb-broker":
        ebb = request.getfixturevalue("broker")  # the compat tier's shared ebb-broker (compat/conftest.py)
        return Target("ebb-broker", ebb.bootstrap, ebb.data_dir, has_ebb_configs=True)
    kafka = request.getfixturevalue("apache_kafka_broker")
    return Target("apache-kafka", kafka.bootstrap_servers, kafka.data_dir, has_ebb_configs=False)


def _create_topic(
    target: Target, partitions: int, config: dict[str, str] | None = None, name: str | None = None
) -> str:
    """A fresh topic, so tests sharing a session broker never see each other's records."""
    name = name or f"tools-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": target.bootstrap_servers})
    new = NewTopic(name, num_partitions=partitions, replication_factor=1, config=config or {})
    admin.create_topics([new])[name].result(30)
    return name


@pytest.fixture
def topic(target: Target) -> str:
    return _create_topic(target, partitions=2)


Record = tuple[int, bytes | None, bytes | None, int]  # partition, key, value, timestamp


def _produce(target: Target, topic: str, records: list[Record], **conf: str) -> None:
    """Produce (partition, key, value, timestamp) records with acks=all and wait for every ack."""
    producer = Producer({"bootstrap.servers": target.bootstrap_servers, "linger.ms": 0, **conf})
    errors: list[object] = []
    for partition, key, value, ts in records:
        producer.produce(
            topic,
            key=key,
            value=value,
            partition=partition,
            timestamp=ts,
            on_delivery=lambda err, _msg: errors.append(err) if err else None,
        )
    assert producer.flush(30) == 0
    assert errors == []


def _now_ms() -> int:
    """Record timestamps near now: older ones would fall to the brokers' time retention (7 days) at once."""
    return int(time.time() * 1000)


def _watermarks(target: Target, topic: str, partition: int) -> tuple[int, int]:
    consumer = Consumer({"bootstrap.servers": target.bootstrap_servers, "group.id": f"wm-{uuid.uuid4().hex}"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)
        return int(low), int(high)
    finally:
        close_within(consumer)


def test_console_producer_and_consumer_round_trip_then_group_lag(target: Target) -> None:
    """Lines typed into kafka-console-producer come out of kafka-console-consumer unchanged and in order,
    and kafka-consumer-groups --describe then shows the group's committed offset and its lag."""
    topic = _create_topic(target, partitions=1)  # one partition: consumed order is produced order
    group = f"console-{uuid.uuid4().hex[:8]}"
    lines = ["k1\tfirst value", "k2\tsecond, with ünïcode", 'k3\t{"json": true}']
    kafka_tool(
        "kafka-console-producer", "--bootstrap-server", target.bootstrap_servers, "--topic", topic,
        "--reader-property", "parse.key=true",
        input="\n".join(lines) + "\n",
    )  # fmt: skip
    out = kafka_tool(
        "kafka-console-consumer", "--bootstrap-server", target.bootstrap_servers, "--topic", topic,
        "--group", group, "--from-beginning", "--max-messages", "3", "--timeout-ms", "30000",
        "--formatter-property", "print.key=true",
    )  # fmt: skip
    assert out.stdout.splitlines() == lines

    # Two more records the group has not read: its lag becomes 2.
    now = _now_ms()
    _produce(target, topic, [(0, b"k4", b"v4", now), (0, b"k5", b"v5", now + 1)])
    described = kafka_tool(
        "kafka-consumer-groups", "--bootstrap-server", target.bootstrap_servers,
        "--describe", "--group", group,
    )  # fmt: skip
    rows = _table(described.stdout)
    assert [(r["GROUP"], r["TOPIC"], r["PARTITION"], r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"])
            for r in rows] == [(group, topic, "0", "3", "5", "2")]  # fmt: skip


def test_console_producer_codecs_round_trip_and_dump(target: Target) -> None:
    """The Java producer's own compression (gzip, snappy in xerial framing, lz4 frame, zstd) is stored as
    sent: kafka-console-consumer reads every topic back unchanged and kafka-dump-log shows each codec."""
    codecs = ("gzip", "snappy", "lz4", "zstd")
    prefix = f"codec-{uuid.uuid4().hex[:8]}-"
    values = [f"{n}: " + "compressible text " * 8 for n in range(4)]
    for codec in codecs:
        _create_topic(target, partitions=1, name=prefix + codec)
        kafka_tool(
            "kafka-console-producer", "--bootstrap-server", target.bootstrap_servers,
            "--topic", prefix + codec, "--compression-codec", codec, "--reader-property", "parse.key=true",
            input="".join(f"{codec}\t{v}\n" for v in values),
        )  # fmt: skip
    out = kafka_tool(
        "kafka-console-consumer", "--bootstrap-server", target.bootstrap_servers,
        "--include", f"{prefix}.*", "--from-beginning", "--max-messages", str(len(codecs) * len(values)),
        "--timeout-ms", "30000", "--formatter-property", "print.key=true",
    )  # fmt: skip
    by_codec: dict[str, list[str]] = {}
    for line in out.stdout.splitlines():
        key, value = line.split("\t", 1)
        by_codec.setdefault(key, []).append(value)
    assert by_codec == {codec: values for codec in codecs}

    segments = dump_log(
        f for codec in codecs for f in sorted((target.data_dir / f"{prefix}{codec}-0").glob("*.log"))
    )
    for codec, segment in zip(codecs, segments, strict=True):
        assert {b.codec for b in segment.batches} == {codec}
        assert [(r.key, r.value) for r in segment.records] == [(codec, v) for v in values]


def _table(text: str) -> list[dict[str, str]]:
    """The whitespace-aligned table kafka-consumer-groups prints (header line starting with GROUP)."""
    lines = [line for line in text.splitlines() if line.strip()]
    start = next(i for i, line in enumerate(lines) if line.startswith("GROUP"))
    header = lines[start].split()
    return [dict(zip(header, line.split(), strict=True)) for line in lines[start + 1 :]]


def test_delete_records_with_kip107_offsets_file_prints_low_watermarks_and_errors(
    target: Target, tmp_path: Path
) -> None:
    """kafka-delete-records takes KIP-107's JSON offsets file (-1 = high watermark) and prints the new
    low watermark of every partition, which the broker's earliest offset then equals. In the same request
    an offset above the high watermark gets OffsetOutOfRange and a compact-only topic PolicyViolation, per
    partition, and both partitions keep every record."""
    topic = _create_topic(target, partitions=3)
    compacted = _create_topic(target, partitions=1, config={"cleanup.policy": "compact"})
    ts = _now_ms()
    _produce(target, topic, [(0, b"k", str(i).encode(), ts + i) for i in range(10)])
    _produce(target, topic, [(1, b"k", str(i).encode(), ts + i) for i in range(6)])
    _produce(target, topic, [(2, b"k", str(i).encode(), ts + i) for i in range(3)])
    _produce(target, compacted, [(0, f"k{i}".encode(), b"v", ts + i) for i in range(3)])
    offsets = tmp_path / "offsets.json"
    entries = [(topic, 0, 4), (topic, 1, -1), (topic, 2, 100), (compacted, 0, 1)]
    offsets.write_text(
        json.dumps(
            {"version": 1, "partitions": [{"topic": t, "partition": p, "offset": o} for t, p, o in entries]}
        )
    )
    out = kafka_tool(
        "kafka-delete-records", "--bootstrap-server", target.bootstrap_servers,
        "--offset-json-file", str(offsets),
    )  # fmt: skip
    # "partition: T-P\tlow_watermark: N" or "partition: T-P\terror: <exception class>: <message>"
    lines = [line for line in out.stdout.splitlines() if line.startswith("partition: ")]
    printed = {line.split()[1]: line.split("\t", 1)[1] for line in lines}
    assert printed.keys() == {f"{topic}-0", f"{topic}-1", f"{topic}-2", f"{compacted}-0"}, out.stdout
    assert printed[f"{topic}-0"] == "low_watermark: 4"
    assert printed[f"{topic}-1"] == "low_watermark: 6"
    errors = "error: org.apache.kafka.common.errors."
    assert printed[f"{topic}-2"].startswith(errors + "OffsetOutOfRangeException")
    assert printed[f"{compacted}-0"].startswith(errors + "PolicyViolationException")
    assert _watermarks(target, topic, 0) == (4, 10)
    assert _watermarks(target, topic, 1) == (6, 6)
    assert _watermarks(target, topic, 2) == (0, 3)
    assert _watermarks(target, compacted, 0) == (0, 3)


def _describe_configs(target: Target, topic: str) -> dict[str, str]:
    """`kafka-configs --describe` of a topic's dynamic configs, as {name: value}."""
    out = kafka_tool(
        "kafka-configs", "--bootstrap-server", target.bootstrap_servers,
        "--describe", "--entity-type", "topics", "--entity-name", topic,
    )  # fmt: skip
    configs: dict[str, str] = {}
    for line in out.stdout.splitlines():
        if line.startswith("  ") and " sensitive=" in line:
            name, value = line.strip().split(" sensitive=")[0].split("=", 1)
            configs[name] = value
    return configs


KAFKA_CONFIGS = {
    "retention.ms": "3600000",
    "cleanup.policy": "compact,delete",
    "min.compaction.lag.ms": "1000",
    "delete.retention.ms": "60000",
}
EBB_CONFIGS = {
    "retention.commitoffset.ms": "600000",
    "retention.commitoffset.groups": "billing,audit",  # a list: kafka-configs takes it as [billing,audit]
    "tombstone.null.value.enable": "false",
}


def _add_config_arg(configs: dict[str, str]) -> str:
    # kafka-configs separates pairs with commas, so a list value goes in square brackets.
    return ",".join(f"{k}=[{v}]" if "," in v else f"{k}={v}" for k, v in configs.items())


def test_configs_alter_and_describe_round_trip(target: Target, topic: str) -> None:
    """kafka-configs --alter sets topic configs (Ebb's own ones where the broker has them), --describe
    shows exactly those, and --delete-config removes one again."""
    wanted = {**KAFKA_CONFIGS, **(EBB_CONFIGS if target.has_ebb_configs else {})}
    kafka_tool(
        "kafka-configs", "--bootstrap-server", target.bootstrap_servers, "--alter",
        "--entity-type", "topics", "--entity-name", topic, "--add-config", _add_config_arg(wanted),
    )  # fmt: skip
    assert _describe_configs(target, topic) == wanted

    kafka_tool(
        "kafka-configs", "--bootstrap-server", target.bootstrap_servers, "--alter",
        "--entity-type", "topics", "--entity-name", topic, "--delete-config", "retention.ms",
    )  # fmt: skip
    admin = AdminClient({"bootstrap.servers": target.bootstrap_servers})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(30)
    assert entries["retention.ms"].is_default
    assert entries["cleanup.policy"].value == "compact,delete"


def _alter(target: Target, topic: str, configs: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return kafka_tool(
        "kafka-configs", "--bootstrap-server", target.bootstrap_servers, "--alter",
        "--entity-type", "topics", "--entity-name", topic, "--add-config", _add_config_arg(configs),
        check=False,
    )  # fmt: skip


def test_ebb_configs_are_set_on_ebb_and_refused_by_name_elsewhere(target: Target, topic: str) -> None:
    """Ebb's own topic configs are set through kafka-configs like any other; a broker without them (Apache
    Kafka) refuses them by name and keeps the topic unchanged, which is why the operator reports such a
    cluster as Unsupported. A misspelt config is refused by both, naming it, and changes nothing."""
    typo = _alter(target, topic, {"retention.commitofset.ms": "600000"})
    assert typo.returncode != 0
    assert "retention.commitofset.ms" in typo.stderr + typo.stdout

    out = _alter(target, topic, EBB_CONFIGS)
    if target.has_ebb_configs:
        assert out.returncode == 0, out.stderr
        assert _describe_configs(target, topic) == EBB_CONFIGS
    else:
        assert out.returncode != 0
        assert "Unknown topic config name: retention.commitoffset.ms" in out.stderr + out.stdout
        assert _describe_configs(target, topic) == {}


def test_dump_log_reads_topic_segments_and_consumer_offsets(target: Target, topic: str) -> None:
    """kafka-dump-log --deep-iteration shows the broker's segment records exactly as produced (offsets,
    keys, values incl. nulls, timestamps, per-codec batches), and --offsets-decoder finds a group's commit
    in __consumer_offsets."""
    ts = _now_ms()
    plain: list[Record] = [(0, b"a", b"1", ts), (0, None, b"no key", ts + 1), (0, b"tomb", None, ts + 2)]
    zstd: list[Record] = [(0, b"z", b"compressed " * 20, ts + 3), (0, b"y", b"again", ts + 4)]
    _produce(target, topic, plain)
    _produce(target, topic, zstd, **{"compression.type": "zstd"})

    group = f"dump-{uuid.uuid4().hex[:8]}"
    consumer = Consumer(
        {"bootstrap.servers": target.bootstrap_servers, "group.id": group, "enable.auto.commit": False}
    )
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 4)], asynchronous=False)
    finally:
        close_within(consumer)

    segments = dump_log(sorted((target.data_dir / f"{topic}-0").glob("*.log")))
    records = [(r.offset, r.key, r.value, r.timestamp) for s in segments for r in s.records]
    expected = [
        (i, k.decode() if k is not None else None, v.decode() if v is not None else None, t)
        for i, (_, k, v, t) in enumerate(plain + zstd)
    ]
    assert records == expected
    batches = [b for s in segments for b in s.batches]
    assert all(b.crc_valid for b in batches)
    assert {b.codec for b in batches} == {"none", "zstd"}

    offsets_logs = sorted(target.data_dir.glob("__consumer_offsets-*/*.log"))
    commits, _groups = dump_consumer_offsets(offsets_logs)
    mine = [(c.topic, c.partition, c.offset) for c in commits if c.group == group]
    assert mine == [(topic, 0, 4)]


def test_consumer_groups_describe_members_and_group_metadata_on_disk(target: Target, topic: str) -> None:
    """While a consumer is in the group, kafka-consumer-groups --describe --members shows it with its
    client id and assigned partitions (the Java admin falls back from KIP-848's ConsumerGroupDescribe to
    DescribeGroups); the group's metadata is stored in __consumer_offsets as Kafka's GroupMetadata record,
    which kafka-dump-log --offsets-decoder decodes with the member's subscription and assignment."""
    group = f"members-{uuid.uuid4().hex[:8]}"
    client_id = f"client-{uuid.uuid4().hex[:6]}"
    consumer = Consumer(
        {
            "bootstrap.servers": target.bootstrap_servers,
            "group.id": group,
            "client.id": client_id,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.subscribe([topic])
        until("the consumer's partitions", lambda: polled(consumer).assignment(), 60, 0)
        out = kafka_tool(
            "kafka-consumer-groups", "--bootstrap-server", target.bootstrap_servers,
            "--describe", "--members", "--group", group,
        )  # fmt: skip
    finally:
        close_within(consumer)
    (row,) = _table(out.stdout)
    assert (row["GROUP"], row["CLIENT-ID"], row["#PARTITIONS"]) == (group, client_id, "2")
    assert row["CONSUMER-ID"].startswith(client_id)

    commits, groups = dump_consumer_offsets(sorted(target.data_dir.glob("__consumer_offsets-*/*.log")))
    assert [c for c in commits if c.group == group] == []  # nothing consumed, nothing committed
    joined = [g for g in groups if g["group"] == group and g["members"]]
    assert joined, f"no GroupMetadata with members for {group}"
    member = joined[-1]["members"][0]
    assert joined[-1]["protocolType"] == "consumer"
    assert member["clientId"] == client_id
    assert member["subscription"]["topics"] == [topic]
    assert member["assignment"]["assignedPartitions"] == [{"topic": topic, "partitions": [0, 1]}]
