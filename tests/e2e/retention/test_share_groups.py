"""Share groups (KIP-932, Kafka 4.x queues) count as consumers, end to end on Apache Kafka 4.3.

Kafka's retention ignores share groups, so a queue never frees what every consumer acknowledged. Ebb
reads each share group's start offset (DescribeShareGroupOffsets): every record below it was
acknowledged, none at or above it is known to be. So it is the share group's commit: a RetentionPolicy
cuts no further, and the Consumed guard of a DeleteRecords refuses to go past it. (Both offsets sources
count share groups: tests/spark/test_analysis_job.py.)

The consumer is Kafka's own Java share consumer (kafka-console-share-consumer); it accepts 12 of the
topic's 30 records and releases the rest as it closes, so the group's start offset is 12. A consumer
group beside it has read everything: without share groups counted, the cut would be 30. Apache Kafka
only: ebb-broker has no share groups (tests/compat/test_share_groups.py).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from confluent_kafka import Producer

from harness.bounded import wait_until
from harness.controlplane import ControlPlane
from harness.kafka import kafka_tool
from harness.operator_process import OperatorProcess
from tests.e2e.operator.operator_kafka import commit, create_topic, log_start, unique
from tests.e2e.retention.policies import apply_policy, run_after

HOUR_MS = 3_600_000
RECORDS, ACKNOWLEDGED = 30, 12


def _start_offset(bootstrap: str, group: str, topic: str) -> int | None:
    """The share group's start offset on partition 0, as Kafka's kafka-share-groups tool reports it."""
    out = kafka_tool(
        "kafka-share-groups", "--bootstrap-server", bootstrap, "--describe", "--group", group, "--offsets"
    ).stdout
    found = re.search(rf"^{re.escape(group)}\s+{re.escape(topic)}\s+0\s+(\d+)", out, re.MULTILINE)
    return int(found.group(1)) if found else None


@pytest.mark.timeout(600)
@pytest.mark.parametrize("kafka_bootstrap", ["apache-kafka"], indirect=True)
def test_a_share_group_holds_the_cut_and_the_guard_at_what_it_acknowledged(
    control_plane: ControlPlane,
    k8s_namespace: str,
    kafka_bootstrap: str,
    start_operator: Callable[[str], OperatorProcess],
) -> None:
    bootstrap, ns, cp = kafka_bootstrap, k8s_namespace, control_plane
    topic, workers, readers = unique("queue"), unique("workers"), unique("readers")
    create_topic(bootstrap, topic, 1)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    old = int(time.time() * 1000) - 3 * HOUR_MS  # older than consumedRetention: only consumption holds them
    for i in range(RECORDS):
        producer.produce(topic, value=f"job-{i}".encode(), partition=0, timestamp=old + i)
    assert producer.flush(30) == 0

    # The share group starts at the log start (its default is the end) and accepts 12 records.
    kafka_tool(
        "kafka-configs", "--bootstrap-server", bootstrap, "--entity-type", "groups", "--entity-name", workers,
        "--alter", "--add-config", "share.auto.offset.reset=earliest",
    )  # fmt: skip
    consumed = kafka_tool(
        "kafka-console-share-consumer", "--bootstrap-server", bootstrap, "--topic", topic, "--group", workers,
        "--max-messages", str(ACKNOWLEDGED), "--timeout-ms", "30000",
    )  # fmt: skip
    assert consumed.stdout.split() == [f"job-{i}" for i in range(ACKNOWLEDGED)], consumed.stdout
    wait_until(
        "the share group's start offset at 12",
        lambda: _start_offset(bootstrap, workers, topic),
        60,
        until=lambda start: start == ACKNOWLEDGED,
        interval=1,
    )
    commit(bootstrap, readers, [(topic, 0, RECORDS)])

    apply_policy(cp, ns, "queue", {
        "cluster": {"bootstrapServers": bootstrap},
        "topics": {"include": [topic]},
        "consumers": {"include": [workers, readers]},
        "consumedRetention": "1h",
        "schedule": {"interval": "1h"},
    })  # fmt: skip
    start_operator(bootstrap)
    run = run_after(cp, ns, "queue")
    assert run["status"]["lastRun"]["outcome"] == "Succeeded", run["status"]
    assert log_start(bootstrap, topic, 0) == ACKNOWLEDGED, yaml.safe_dump(run["status"])
    (entry,) = run["status"]["topics"]
    assert [(g["group"], g["lagRecords"]) for g in entry["limiting"]] == [(workers, RECORDS - ACKNOWLEDGED)]

    # The Consumed guard: past the share group's start offset is refused, naming it.
    body = {
        "apiVersion": "ebb.dev/v1alpha1",
        "kind": "DeleteRecords",
        "metadata": {"name": "past-the-queue"},
        "spec": {
            "cluster": {"bootstrapServers": bootstrap},
            "partitions": [{"topic": topic, "partition": 0, "offset": 20}],
            "guard": "Consumed",
        },
    }
    cp.kubectl("apply", "-n", ns, "-f", "-", stdin=yaml.safe_dump(body))
    refused: dict[str, Any] = wait_until(
        "the DeleteRecords past the share group finished",
        lambda: cp.kubectl_json("get", "-n", ns, "deleterecords", "past-the-queue"),
        120,
        until=lambda o: o.get("status", {}).get("phase") in ("Succeeded", "Failed", "PartiallyFailed"),
        interval=0.5,
        detail=lambda o: "\n" + yaml.safe_dump(o.get("status")),
    )
    (result,) = refused["status"]["partitions"]
    assert refused["status"]["phase"] == "Failed" and result["refused"], refused["status"]
    assert f"GuardRefused: not consumed past 20 by {workers}" in result["error"], result
    assert log_start(bootstrap, topic, 0) == ACKNOWLEDGED
