"""`python -m ebb_operator.analysis` end to end against Apache Kafka, as the operator starts it (a process).

Records 0-9 of each partition are two hours old, 10-19 are new; consumedRetention is one hour. Real groups
commit through a real client, and a share group acknowledges through Kafka's share consumer. The plan must
cut each partition at the slowest counted group or at the first young record, whichever is lower, and
name the group that holds it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from harness.bounded import close_within
from harness.kafka import KafkaBroker, kafka_tool
from tests.spark.conftest import SMALL_DATA_ENV

HOUR_MS = 3_600_000


@pytest.mark.parametrize("source", ["AdminAPI", "ConsumerOffsetsTopic"])
def test_job_plans_from_real_commits_and_record_times(
    apache_kafka_broker: KafkaBroker, tmp_path: Path, source: str
) -> None:
    """Both offsets sources give the same plan from the same commits."""
    bootstrap = apache_kafka_broker.bootstrap_servers
    tag = uuid.uuid4().hex[:6]
    topic, compact, queue = f"job-{tag}", f"job-{tag}-compact", f"job-{tag}-queue"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [
            NewTopic(topic, num_partitions=2, replication_factor=1),
            NewTopic(compact, num_partitions=1, replication_factor=1, config={"cleanup.policy": "compact"}),
            NewTopic(queue, num_partitions=1, replication_factor=1),
        ]
    )
    for f in futures.values():
        f.result(30)
    now_ms = int(time.time() * 1000)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for p in range(2):
        for i in range(20):
            ts = now_ms - 2 * HOUR_MS if i < 10 else now_ms
            producer.produce(topic, key=b"k%d" % i, value=b"v" * 100, partition=p, timestamp=ts)
    producer.produce(compact, key=b"k", value=b"v", partition=0)
    assert producer.flush(30) == 0

    def commit(group: str, offsets: dict[tuple[str, int], int]) -> None:
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
        try:
            c.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False)
        finally:
            close_within(c)

    # A queue read by a share group (KIP-932) through Kafka's Java share consumer: it accepts 4 of 10 old
    # records, so its start offset, which counts as its commit, is 4 (__consumer_offsets holds nothing of it).
    for i in range(10):
        producer.produce(queue, value=b"job-%d" % i, partition=0, timestamp=now_ms - 2 * HOUR_MS)
    assert producer.flush(30) == 0
    kafka_tool(
        "kafka-configs", "--bootstrap-server", bootstrap, "--entity-type", "groups",
        "--entity-name", f"queue-{tag}", "--alter", "--add-config", "share.auto.offset.reset=earliest",
    )  # fmt: skip
    kafka_tool(
        "kafka-console-share-consumer", "--bootstrap-server", bootstrap, "--topic", queue,
        "--group", f"queue-{tag}", "--max-messages", "4", "--timeout-ms", "30000",
    )  # fmt: skip
    commit(f"app-{tag}", {(topic, 0): 15, (topic, 1): 8, (compact, 0): 1})
    commit(f"slow-{tag}", {(topic, 0): 5, (topic, 1): 12})
    commit(f"tool-{tag}", {(topic, 0): 0, (topic, 1): 0})  # excluded: must not hold anything

    policy_file = tmp_path / "rp.yaml"
    policy_file.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "ebb.dev/v1alpha1",
                "kind": "RetentionPolicy",
                "metadata": {"name": "orders", "namespace": "team-a"},
                "spec": {
                    "cluster": {"bootstrapServers": bootstrap},
                    "topics": {"include": [f"job-{tag}.*"]},
                    "consumers": {"include": [f".*-{tag}"], "exclude": [f"tool-{tag}"]},
                    "consumedRetention": "1h",
                    "analysis": {"offsetsSource": source},
                },
            }
        )
    )
    out = tmp_path / "plan.json"
    proc = subprocess.run(
        [sys.executable, "-m", "ebb_operator.analysis", "--policy-file", str(policy_file),
         "--output", str(out), "--master", "local[2]", "--now-ms", str(now_ms)],
        capture_output=True, text=True, timeout=300, check=False, env={**os.environ, **SMALL_DATA_ENV},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    plan = json.loads(out.read_text())
    parts = {(p["topic"], p["partition"]): p for p in plan["partitions"]}
    assert parts[topic, 0]["deleteBefore"] == 5 and parts[topic, 0]["blockingGroups"] == [f"slow-{tag}"]
    assert parts[topic, 1]["deleteBefore"] == 8 and parts[topic, 1]["blockingGroups"] == [f"app-{tag}"]
    assert (parts[topic, 0]["logStartOffset"], parts[topic, 0]["highWatermark"]) == (0, 20)
    assert parts[topic, 0]["bytes"] > 0  # DescribeLogDirs gave the partition's size
    assert parts[compact, 0]["reason"] == "CompactOnly" and parts[compact, 0]["deleteBefore"] is None
    assert parts[queue, 0]["deleteBefore"] == 4 and parts[queue, 0]["blockingGroups"] == [f"queue-{tag}"]
    assert plan["summary"]["deletableRecords"] == 13 + 4
    assert plan["summary"]["heldPartitions"] == 1
    # The plan hands back the cuts and the groups it counted; the job itself creates nothing.
    assert sorted((d["topic"], d["partition"], d["offset"]) for d in plan["deletes"]) == [
        (topic, 0, 5),
        (topic, 1, 8),
        (queue, 0, 4),
    ]
    assert plan["countedGroups"] == sorted([f"app-{tag}", f"queue-{tag}", f"slow-{tag}"])
    # Who pins the disk: slow alone keeps 5-9 of partition 0 (app is at 15, records from 10 on are young),
    # app alone keeps 8-9 of partition 1; the oldest record each has not read is two hours old.
    (entry,) = [t for t in plan["topics"] if t["topic"] == topic]
    limiting = {g["group"]: g for g in entry["limiting"]}
    assert {g: (e["lagRecords"], e["pinnedRecords"]) for g, e in limiting.items()} == {
        f"slow-{tag}": (15, 5),
        f"app-{tag}": (12, 2),
    }
    assert all(e["pinnedBytes"] > 0 for e in limiting.values())
    assert {e["oldestUnreadAgeSeconds"] for e in limiting.values()} == {2 * HOUR_MS // 1000}

    # A policy the CRD would reject fails before touching the cluster, with the field named.
    bad = tmp_path / "bad.yaml"
    bad.write_text(policy_file.read_text().replace("consumedRetention: 1h", "consumedRetention: soon"))
    proc = subprocess.run(
        [sys.executable, "-m", "ebb_operator.analysis", "--policy-file", str(bad)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 2 and "consumedRetention" in proc.stderr
