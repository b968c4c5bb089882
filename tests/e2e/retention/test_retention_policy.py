"""RetentionPolicy end to end: kubectl apply → operator (RBAC-limited) → analysis job → DeleteRecords →
broker, against ebb-broker and Apache Kafka.

The workload: one topic, 3 partitions of 30 records older than consumedRetention then 10 fresh ones, and
three groups at different positions: `req` (required; at 20 on p0, at the end of p1, no commit on p2),
`idle` (counted but inactive for longer than inactiveAfter; at 5 everywhere) and `other` (outside
include; at 2 everywhere). Exactly what every counted group has consumed AND is older than
consumedRetention may go: below 20 on p0 (req's position), below 30 on p1 (the retention time), nothing
on p2 (req, a required group, has not committed there: held as RequiredGroupMissing, naming req).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource

from harness.bounded import close_within, wait_until
from harness.controlplane import ControlPlane
from harness.operator_process import OperatorProcess
from tests.e2e.operator.operator_kafka import commit, create_topic, log_start, unique
from tests.e2e.retention.policies import apply_policy

OLD, FRESH = 30, 10
HOUR_MS = 3_600_000
INACTIVE_AFTER_S = 4


def _produce_workload(bootstrap: str, topic: str) -> None:
    # Idempotent, and the old records acknowledged before the fresh ones are sent: a plain producer that
    # retries a batch under load can write it after a later one, and fresh records would then sit below
    # old ones (the time cut then falls short of 30: seen as 46 or 48 deletable records instead of 50).
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "enable.idempotence": True})
    old = int(time.time() * 1000) - 2 * HOUR_MS
    for partition in range(3):
        for i in range(OLD + FRESH):
            ts = old + i if i < OLD else int(time.time() * 1000)
            producer.produce(
                topic, key=f"{partition}-{i}".encode(), value=b"v" * 200, partition=partition, timestamp=ts
            )
            if i == OLD - 1:
                assert producer.flush(30) == 0  # the old records written before the fresh ones
        assert producer.flush(30) == 0


def _wait(
    cp: ControlPlane,
    ns: str,
    kind: str,
    name: str,
    check: Callable[[dict[str, Any]], bool],
    timeout: float = 900,
) -> dict[str, Any]:
    obj: dict[str, Any] = wait_until(
        f"{kind}/{name} in the expected state",
        lambda: cp.kubectl_json("get", "-n", ns, kind, *([name] if name else [])),
        timeout,
        until=check,
        interval=0.5,
        detail=lambda o: "\n" + yaml.safe_dump(o),
    )
    return obj


def _finished_run(previous: str | None = None) -> Callable[[dict[str, Any]], bool]:
    def check(obj: dict[str, Any]) -> bool:
        last = obj.get("status", {}).get("lastRun") or {}
        return last.get("id") != previous and last.get("outcome") not in (None, "Running")

    return check


def _ready(obj: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in obj["status"]["conditions"] if c["type"] == "Ready")


def _held(obj: dict[str, Any], topic: str) -> dict[int, tuple[str, list[str]]]:
    (entry,) = [t for t in obj["status"]["topics"] if t["topic"] == topic]
    return {h["partition"]: (h["reason"], h["blockingGroups"]) for h in entry.get("held", [])}


def _read_rest(bootstrap: str, group: str, topic: str) -> dict[int, list[int]]:
    """Consume as `group` from its committed positions (earliest where none) to the end."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    consumer.assign([CkTopicPartition(topic, p) for p in range(3)])
    got: dict[int, list[int]] = {0: [], 1: [], 2: []}
    ends = [0]

    def read() -> int:
        msg = consumer.poll(1)
        if msg is None:
            return ends[0]
        if (error := msg.error()) is not None:
            assert error.code() == KafkaError._PARTITION_EOF, error
            ends[0] += 1
        else:
            partition, offset = msg.partition(), msg.offset()
            assert partition is not None and offset is not None, msg  # a consumed record has both
            got[partition].append(offset)
        return ends[0]

    try:
        wait_until("every partition read to its end", read, 60, until=lambda n: n >= 3, interval=0)
    finally:
        close_within(consumer)
    return got


@pytest.mark.timeout(2400)  # several Spark runs; slow only on a busy machine
def test_retention_policy_deletes_exactly_what_every_counted_group_consumed(
    control_plane: ControlPlane,
    k8s_namespace: str,
    kafka_bootstrap: str,
    start_operator: Callable[[str], OperatorProcess],
) -> None:
    bootstrap, ns = kafka_bootstrap, k8s_namespace
    topic = unique("rp")
    req, idle, other = unique("req"), unique("idle"), unique("other")
    create_topic(bootstrap, topic, 3)
    _produce_workload(bootstrap, topic)
    commit(bootstrap, idle, [(topic, p, 5) for p in range(3)])
    idle_since = time.monotonic()
    commit(bootstrap, other, [(topic, p, 2) for p in range(3)])
    commit(bootstrap, req, [(topic, 0, 20), (topic, 1, OLD + FRESH)])
    time.sleep(max(0.0, INACTIVE_AFTER_S + 1 - (time.monotonic() - idle_since)))

    cluster = {"bootstrapServers": bootstrap}
    common = {
        "cluster": cluster,
        "topics": {"include": [topic]},
        "consumedRetention": "1h",
        "schedule": {"interval": "1h"},
        # Commit times tell how long `idle` has been quiet (the Admin API source, the default, learns it
        # from the operator's memory across runs instead: tests/spark/test_plan.py).
        "analysis": {"offsetsSource": "ConsumerOffsetsTopic"},
    }
    # The policy under test, first as a dry run; and an exclusive one that must refuse the topic.
    apply_policy(control_plane, ns, "orders", {
        **common,
        "consumers": {"include": [req, idle], "required": [req], "inactiveAfter": f"{INACTIVE_AFTER_S}s"},
        "forcedRetention": "30d",
        "dryRun": True,
        "historyLimit": 1,
    })  # fmt: skip
    exclusive = {**common, "consumers": {"include": [req], "exclusive": True}}
    apply_policy(control_plane, ns, "exclusive", exclusive)
    operator = start_operator(bootstrap)

    dry = _wait(control_plane, ns, "retentionpolicy", "orders", _finished_run())
    assert (dry["status"]["lastRun"]["outcome"], _ready(dry)["reason"]) == ("Succeeded", "DryRun"), dry[
        "status"
    ]
    assert dry["status"]["lastRun"]["engine"] == "Local"
    summary = dry["status"]["summary"]
    assert (summary["topics"], summary["partitions"]) == (1, 3)
    assert (summary["deletableRecords"], summary["heldPartitions"]) == (20 + OLD, 1), (
        f"log starts {[log_start(bootstrap, topic, p) for p in range(3)]}\n" + yaml.safe_dump(dry["status"])
    )
    assert _held(dry, topic) == {2: ("RequiredGroupMissing", [req])}
    # The groups holding the disk are named with their lag: req at 20 of 40 on p0 (p1 is cut by age), and
    # all 40 of p2, where it has not committed.
    (entry,) = dry["status"]["topics"]
    assert [(g["group"], g["partitions"], g["lagRecords"]) for g in entry["limiting"]] == [(req, 2, 60)]
    # A dry run changes nothing anywhere: no DeleteRecords, no records gone, no config written...
    assert dry["status"]["lastRun"].get("deleteRecords") is None
    assert _names(control_plane.kubectl_json("get", "-n", ns, "deleterecords"), "orders") == []
    assert [log_start(bootstrap, topic, p) for p in range(3)] == [0, 0, 0], "a dry run deleted records"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    assert _retention_ms(admin, topic) != str(30 * 24 * HOUR_MS), "a dry run set retention.ms"
    # ...and reports what forced retention would set.
    assert (
        f"would set retention.ms={30 * 24 * HOUR_MS} on 1 topic(s): {topic}"
        in dry["status"]["lastRun"]["message"]
    )

    excl = _wait(control_plane, ns, "retentionpolicy", "exclusive", _finished_run())
    assert (excl["status"]["lastRun"]["outcome"], _ready(excl)["reason"]) == ("Held", "Held")
    held = _held(excl, topic)
    assert sorted(held) == [0, 1, 2]
    assert all(reason == "NotExclusive" and other in groups for reason, groups in held.values()), held

    # The same policy for real: patching the spec starts a run at once.
    control_plane.kubectl(
        "patch", "-n", ns, "retentionpolicy", "orders", "--type=merge", "-p", '{"spec":{"dryRun":false}}'
    )
    done = _wait(
        control_plane, ns, "retentionpolicy", "orders", _finished_run(dry["status"]["lastRun"]["id"])
    )
    assert (done["status"]["lastRun"]["outcome"], _ready(done)["reason"]) == ("Succeeded", "Succeeded"), done[
        "status"
    ]
    assert done["status"]["summary"] == summary, "the real run planned differently from the dry run"
    assert _held(done, topic) == {2: ("RequiredGroupMissing", [req])}
    assert _ready(done)["observedGeneration"] == done["metadata"]["generation"]
    assert done["status"]["lastCompletedRun"] == done["status"]["lastRun"]
    assert [log_start(bootstrap, topic, p) for p in range(3)] == [20, OLD, 0]
    # KIP-68's forced level, applied as retention.ms by the real run.
    assert _retention_ms(admin, topic) == str(30 * 24 * HOUR_MS)
    # The run's DeleteRecords re-read the counted groups' commits just before deleting (ConsumedBy).
    dr = control_plane.kubectl_json(
        "get", "-n", ns, "deleterecords", done["status"]["lastRun"]["deleteRecords"]
    )
    assert (dr["spec"]["guard"], sorted(dr["spec"]["consumedBy"])) == ("ConsumedBy", sorted([req]))
    events = control_plane.kubectl_json(
        "get", "events", "-n", ns, "--field-selector", "involvedObject.name=orders"
    )
    assert "RecordsDeleted" in {e["reason"] for e in events["items"]}
    metrics = _metrics(operator)
    assert f'ebb_operator_policy_held_partitions{{namespace="{ns}",policy="orders"}} 1.0' in metrics
    # ...and the group holding it (the chart's dashboard and its held-too-long alert use this series).
    labels = f'group="{req}",namespace="{ns}",policy="orders"'
    by_group = f"ebb_operator_policy_held_partitions_by_group{{{labels}}}"
    assert f"{by_group} 1.0" in metrics

    # Nothing a counted group has not read is gone: req reads on from where it was, without a gap.
    assert _read_rest(bootstrap, req, topic) == {
        0: list(range(20, OLD + FRESH)), 1: [], 2: list(range(OLD + FRESH))
    }  # fmt: skip

    # suspend: acknowledged in Ready, and no run starts.
    control_plane.kubectl(
        "patch", "-n", ns, "retentionpolicy", "exclusive", "--type=merge", "-p", '{"spec":{"suspend":true}}'
    )
    suspended = _wait(
        control_plane, ns, "retentionpolicy", "exclusive", lambda o: _ready(o)["reason"] == "Suspended"
    )
    assert suspended["status"]["lastRun"]["id"] == excl["status"]["lastRun"]["id"]


def _retention_ms(admin: AdminClient, topic: str) -> str:
    (configs,) = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)]).values()
    return str(configs.result(30)["retention.ms"].value)


def _metrics(operator: OperatorProcess) -> str:
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{operator.metrics_port}/metrics", timeout=5) as r:
        return str(r.read().decode())


def _names(listing: dict[str, Any], policy: str) -> list[str]:
    return [
        i["metadata"]["name"]
        for i in listing["items"]
        if i["metadata"].get("labels", {}).get("ebb.dev/retention-policy") == policy
    ]
