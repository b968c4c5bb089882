"""`ebb delete-records` does what kafka-delete-records.sh does, on a real cluster, and the kafka adapter
reports per-partition results, group offsets and the cluster's capabilities truthfully."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ebb_operator.handlers.consumed_guard import blocking_groups
from ebb_operator.kafka import EARLIEST, ClusterAdmin, ClusterConnection, KafkaFailure, TopicPartition
from harness.kafka import kafka_tool
from tests.e2e.operator.operator_kafka import commit, create_topic, log_start, produce, unique


def _ebb(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "ebb_operator.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


def _offsets_file(tmp_path: Path, partitions: list[tuple[str, int, int]]) -> Path:
    path = tmp_path / "offsets.json"
    body = {"partitions": [{"topic": t, "partition": p, "offset": o} for t, p, o in partitions], "version": 1}
    path.write_text(json.dumps(body))
    return path


def test_delete_records_moves_low_watermarks_like_kafkas_tool(kafka_bootstrap: str, tmp_path: Path) -> None:
    topic = unique("cli")
    create_topic(kafka_bootstrap, topic, 3)
    produce(kafka_bootstrap, topic, {0: 50, 1: 50, 2: 50})
    path = _offsets_file(tmp_path, [(topic, 0, 20), (topic, 1, -1), (topic, 2, 500)])

    proc = _ebb("delete-records", "--bootstrap-server", kafka_bootstrap, "--offset-json-file", str(path))

    assert f"partition: {topic}-0\tlow_watermark: 20" in proc.stdout
    assert f"partition: {topic}-1\tlow_watermark: 50" in proc.stdout
    assert f"partition: {topic}-2\terror: OFFSET_OUT_OF_RANGE" in proc.stdout
    assert proc.returncode == 1  # one partition failed
    assert (log_start(kafka_bootstrap, topic, 0), log_start(kafka_bootstrap, topic, 1)) == (20, 50)
    assert log_start(kafka_bootstrap, topic, 2) == 0
    # Kafka's own tool, same file, same cluster: idempotent (KIP-107), reports the same low watermarks.
    kafka = kafka_tool(
        "kafka-delete-records",
        "--bootstrap-server",
        kafka_bootstrap,
        "--offset-json-file",
        str(path),
        check=False,
    )
    assert f"partition: {topic}-0\tlow_watermark: 20" in kafka.stdout


def test_dry_run_deletes_nothing(kafka_bootstrap: str, tmp_path: Path) -> None:
    topic = unique("dry")
    create_topic(kafka_bootstrap, topic, 1)
    produce(kafka_bootstrap, topic, {0: 10})
    path = _offsets_file(tmp_path, [(topic, 0, 7)])
    proc = _ebb(
        "delete-records", "--bootstrap-server", kafka_bootstrap, "--offset-json-file", str(path), "--dry-run"
    )
    assert proc.returncode == 0, proc.stderr
    assert f"partition: {topic}-0\tlow_watermark: 0\twould_become: 7" in proc.stdout
    assert log_start(kafka_bootstrap, topic, 0) == 0


def test_adapter_reports_groups_and_capabilities(kafka_bootstrap: str, kafka_kind: str) -> None:
    topic, group = unique("adapter"), unique("group")
    create_topic(kafka_bootstrap, topic, 2)
    produce(kafka_bootstrap, topic, {0: 5, 1: 5})
    commit(kafka_bootstrap, group, [(topic, 0, 3)])
    other = unique("group")
    commit(kafka_bootstrap, other, [(topic, 1, 4)])
    with ClusterAdmin(ClusterConnection.of(kafka_bootstrap)) as admin:
        assert admin.committed_offsets(group) == {TopicPartition(topic, 0): 3}
        # Many groups in one call (one OffsetFetch per coordinator where the broker serves v8+, KIP-709).
        assert admin.committed_offsets_of([group, other]) == {
            group: {TopicPartition(topic, 0): 3},
            other: {TopicPartition(topic, 1): 4},
        }
        # The Consumed guard's read: `other` committed on partition 1 only, so it reads the topic and
        # holds partition 0, where it has no commit (fail closed); a missing topic guards nothing.
        descriptions, answered = admin.readers([group, other], [topic, unique("missing")])
        commits = {g: found for g, found in answered.items() if not isinstance(found, KafkaFailure)}
        assert commits.keys() == answered.keys() == {group, other}, answered  # both groups' commits read
        tp0 = TopicPartition(topic, 0)
        assert blocking_groups({tp0: 2}, commits, descriptions) == {tp0: [f"{other} (no committed offset)"]}
        both = sorted([f"{group} (committed 3)", f"{other} (no committed offset)"])  # in name order
        assert blocking_groups({tp0: 4}, commits, descriptions) == {tp0: both}
        assert admin.cluster_id() and admin.cluster_id() == admin.cluster_id()
        assert group in {g.group_id for g in admin.list_groups()}
        configs = admin.topic_configs([topic, unique("missing")])
        assert configs[topic].supports("min.compaction.lag.ms")
        # KIP-87's setting exists on Ebb only: the probe must find that out, not assume it by vendor.
        assert configs[topic].supports("tombstone.null.value.enable") == (kafka_kind == "ebb-broker")
        missing = next(c for name, c in configs.items() if name != topic)
        assert missing.error is not None and missing.error.code == "UNKNOWN_TOPIC_OR_PARTITION"
        results = admin.delete_records({TopicPartition(topic, 0): 2, TopicPartition(topic, 9): 1})
        assert results[TopicPartition(topic, 0)].low_watermark == 2
        assert results[TopicPartition(topic, 9)].error is not None
        assert admin.offsets([TopicPartition(topic, 0)], EARLIEST)[TopicPartition(topic, 0)].offset == 2
        sizes = admin.log_dir_sizes([TopicPartition(topic, 0), TopicPartition(topic, 1)])
        assert sizes[TopicPartition(topic, 1)] > 0
