"""Two operator processes with the same settings against one API server: one acts, on each object once,
counted where it matters, at the broker (ebb-broker's `ebb_requests_total{api="DeleteRecords"}`); after a
kill -9 of either, the other finishes the work (the waiting one killed: the leader goes on; the leader
killed: the waiting one takes over), and what it left half done is finished once. The election's rules
on their own: tests/unit/operator/test_election.py. Lease timings here are the tier's short ones
(conftest.OPERATOR_TEST_SETTINGS)."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient

from harness.bounded import close_within, wait_until
from harness.ebb_broker import EbbBroker
from tests.e2e.operator.operator_kafka import create_topic, produce, unique
from tests.k8s.operator.conftest import OPERATOR_NAMESPACE
from tests.k8s.operator.operator_k8s import Objects, OperatorProcess, broker_metric

DELETE_REQUESTS = 'ebb_requests_total{api="DeleteRecords"}'
LEASE = "ebb-operator"


def _leads(op: OperatorProcess) -> bool:
    return "ebb_operator_leader 1.0" in op.metrics()


def _identity(op: OperatorProcess) -> str:
    return f"{socket.gethostname()}/{op.process.pid}"


def _holder(objects: Objects) -> str:
    lease = objects.cp.kubectl_json("get", "lease", "-n", OPERATOR_NAMESPACE, LEASE)
    return str(lease["spec"].get("holderIdentity", ""))


def _one_leader(ops: list[OperatorProcess], timeout: float = 30) -> OperatorProcess:
    deadline = time.monotonic() + timeout
    while True:
        leaders = [op for op in ops if op.process.poll() is None and _leads(op)]
        if len(leaders) == 1:
            return leaders[0]
        assert len(leaders) < 2, "two replicas lead at once"
        assert time.monotonic() < deadline, f"no leader within {timeout:.0f} s"
        time.sleep(0.2)


def _apply(objects: Objects, bootstrap: str, topic: str, names: list[str]) -> None:
    """DeleteRecords `<prefix>-<p>` cuts partition p of `topic` at offset 6."""
    for name in names:
        p = int(name.rsplit("-", 1)[1])
        spec = {
            "cluster": {"bootstrapServers": bootstrap},
            "guard": "None",
            "partitions": [{"topic": topic, "partition": p, "offset": 6}],
        }
        assert objects.apply("DeleteRecords", name, spec).returncode == 0


def _all_succeeded(objects: Objects, names: list[str], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    pending = set(names)
    while pending:
        items = objects.cp.kubectl_json("get", "-n", objects.namespace, "deleterecords")["items"]
        phases = {o["metadata"]["name"]: o.get("status", {}).get("phase") for o in items}
        pending = {n for n in names if phases.get(n) != "Succeeded"}
        assert time.monotonic() < deadline, f"not Succeeded: {sorted((n, phases.get(n)) for n in pending)}"
        time.sleep(0.3)


def _succeeded(objects: Objects) -> set[str]:
    items = objects.cp.kubectl_json("get", "-n", objects.namespace, "deleterecords")["items"]
    return {o["metadata"]["name"] for o in items if o.get("status", {}).get("phase") == "Succeeded"}


def _check_done_once(
    objects: Objects,
    broker: EbbBroker,
    topic: str,
    names: list[str],
    before: float,
    finished_by_the_killed: frozenset[str] = frozenset(),
) -> None:
    """Each object cut its partition once: one RecordsDeleted, one DeleteRecords request at the broker.
    An object a leader finished just before its kill -9 may lack its Event: kopf posts Events from a queue
    after the status write, and Events are best effort in Kubernetes; it never has two."""
    items = objects.cp.kubectl_json("get", "-n", objects.namespace, "deleterecords")["items"]
    by_name = {o["metadata"]["name"]: o for o in items}

    def records_deleted() -> dict[str, int]:
        items = objects.cp.kubectl_json("get", "events", "-n", objects.namespace)["items"]
        found = [e["involvedObject"]["name"] for e in items if e["reason"] == "RecordsDeleted"]
        return {name: found.count(name) for name in names}

    # kopf posts Events from a queue of its own, after the status write the caller waited for.
    expected = [name for name in names if name not in finished_by_the_killed]
    posted = wait_until(
        "a RecordsDeleted Event for each", records_deleted, 30, until=lambda c: all(c[n] for n in expected)
    )
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": unique("probe")})
    try:
        for name in names:
            (part,) = by_name[name]["status"]["partitions"]
            assert part["lowWatermark"] == 6, part
            low, _ = consumer.get_watermark_offsets(CkTopicPartition(topic, part["partition"]), timeout=10)
            assert low == 6, (name, low)
            assert posted[name] == 1 or (posted[name] == 0 and name not in expected), (name, posted[name])
    finally:
        close_within(consumer)
    assert broker_metric(broker, DELETE_REQUESTS, default=0) - before == len(names)


def test_two_operators_act_on_each_object_once_and_without_the_waiting_one_too(
    metered_broker: EbbBroker, objects: Objects, start_operators: Callable[..., list[OperatorProcess]]
) -> None:
    ops = start_operators(2, EBB_LOG_FORMAT="json")
    leader = _one_leader(ops)
    (follower,) = [op for op in ops if op is not leader]
    assert _holder(objects) == _identity(leader)
    topic, names = unique("le-once"), [f"once-{p}" for p in range(8)]
    create_topic(metered_broker.bootstrap, topic, len(names))
    produce(metered_broker.bootstrap, topic, dict.fromkeys(range(len(names)), 10))
    before = broker_metric(metered_broker, DELETE_REQUESTS, default=0)

    _apply(objects, metered_broker.bootstrap, topic, names[:6])
    _all_succeeded(objects, names[:6])
    assert not _leads(follower) and "ebb_operator_reconciles_total{" not in follower.metrics()
    # kill -9 of the one that waits: the leader goes on alone.
    follower.kill()
    _apply(objects, metered_broker.bootstrap, topic, names[6:])
    _all_succeeded(objects, names[6:])

    _check_done_once(objects, metered_broker, topic, names, before)
    assert 'ebb_operator_reconciles_total{kind="DeleteRecords"} 8.0' in leader.metrics()
    # EBB_LOG_FORMAT=json: every line one object, what log pipelines parse.
    lines = [json.loads(line) for line in leader.log.read_text().splitlines()]
    assert lines and all({"message", "severity", "timestamp"} <= line.keys() for line in lines)
    events = objects.cp.kubectl_json("get", "events", "-n", OPERATOR_NAMESPACE)["items"]
    assert any(
        e["involvedObject"]["kind"] == "Lease"
        and e["reason"] == "LeaderElection"
        and e["message"].startswith(f"{_identity(leader)} became leader")
        for e in events
    )


def test_after_kill_9_of_the_leader_the_other_finishes_the_work(
    metered_broker: EbbBroker, objects: Objects, start_operators: Callable[..., list[OperatorProcess]]
) -> None:
    ops = start_operators(2)
    leader = _one_leader(ops)
    (follower,) = [op for op in ops if op is not leader]
    topic, names = unique("le-kill"), [f"kill-{p}" for p in range(8)]
    create_topic(metered_broker.bootstrap, topic, len(names))
    produce(metered_broker.bootstrap, topic, dict.fromkeys(range(len(names)), 10))
    before = broker_metric(metered_broker, DELETE_REQUESTS, default=0)

    _apply(objects, metered_broker.bootstrap, topic, names)
    objects.wait("deleterecords", names[0], lambda o: bool(o.get("status", {}).get("phase")), timeout=60)
    killed_at = time.monotonic()
    leader.kill()
    # Read before the follower can lead (the Lease lasts 6 s): what the killed leader finished.
    finished_by_the_killed = frozenset(_succeeded(objects))
    assert _one_leader([follower]) is follower
    took_over = time.monotonic() - killed_at
    _all_succeeded(objects, names)
    finished = time.monotonic() - killed_at

    _check_done_once(objects, metered_broker, topic, names, before, finished_by_the_killed)
    assert _holder(objects) == _identity(follower)
    print(
        f"\ntakeover after kill -9 of the leader: {took_over:.1f} s (lease 6 s); work done: {finished:.1f} s"
    )


def _patch_status(objects: Objects, plural: str, name: str, status: dict[str, Any]) -> None:
    objects.cp.kubectl(
        "patch", "-n", objects.namespace, plural, name, "--subresource=status", "--type=merge",
        "-p", json.dumps({"status": status}),
    )  # fmt: skip


def test_what_a_killed_leader_left_is_finished_once(
    metered_broker: EbbBroker, objects: Objects, start_operator: Callable[..., OperatorProcess]
) -> None:
    """The states a kill -9 (or a lost Lease) leaves, made exactly, then one operator started. A DeleteRecords
    cut off between its request and its status write (plan recorded, partitions cut): its log starts are
    read and recorded, no second request. A RetentionPolicy run cut off after it created its DeleteRecords:
    that DeleteRecords ends the same run (no new analysis, no second DeleteRecords)."""
    bootstrap = metered_broker.bootstrap
    topic = unique("le-left")
    create_topic(bootstrap, topic, 3)
    produce(bootstrap, topic, {0: 20, 1: 20, 2: 20})
    cluster = {"bootstrapServers": bootstrap}
    spec = {"cluster": cluster, "guard": "None", "partitions": [
        {"topic": topic, "partition": p, "offset": 10} for p in (0, 1)
    ]}  # fmt: skip
    assert objects.apply("DeleteRecords", "cut", spec).returncode == 0
    planned = [{"topic": topic, "partition": p, "requestedOffset": 10, "logStartBefore": 0} for p in (0, 1)]
    _patch_status(objects, "deleterecords", "cut", {
        "phase": "Running", "startedAt": "2026-01-01T00:00:00Z", "partitionCount": 2, "partitions": planned,
    })  # fmt: skip
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_records([CkTopicPartition(topic, p, 10) for p in (0, 1)]).values():
        future.result(30)
    started = datetime.now(UTC)  # the next run is due an interval (1h) after this one started
    run = started.strftime("%Y%m%d-%H%M%S")
    policy = {"cluster": cluster, "topics": {"include": [topic]}, "consumedRetention": "1h",
              "schedule": {"interval": "1h"}, "analysis": {"engine": "Local"}}  # fmt: skip
    assert objects.apply("RetentionPolicy", "policy", policy).returncode == 0
    _patch_status(objects, "retentionpolicies", "policy", {"lastRun": {
        "id": run, "startedAt": started.strftime("%Y-%m-%dT%H:%M:%SZ"), "engine": "Local",
        "outcome": "Running",
    }})  # fmt: skip
    run_cut = {
        "cluster": cluster,
        "guard": "None",
        "partitions": [{"topic": topic, "partition": 2, "offset": 5}],
    }
    body = {"apiVersion": "ebb.dev/v1alpha1", "kind": "DeleteRecords",
            "metadata": {"name": f"policy-{run}", "labels": {"ebb.dev/retention-policy": "policy"}},
            "spec": run_cut}  # fmt: skip
    objects.cp.kubectl("apply", "-n", objects.namespace, "-f", "-", stdin=json.dumps(body))
    requests = broker_metric(metered_broker, DELETE_REQUESTS, default=0)

    start_operator(EBB_RETENTION_POLL_SECONDS="0.2")
    cut = objects.wait("deleterecords", "cut", lambda o: o["status"].get("phase") == "Succeeded")
    done = objects.wait(
        "retentionpolicies", "policy", lambda o: (o["status"].get("lastCompletedRun") or {}).get("id") == run
    )

    assert [p["lowWatermark"] for p in cut["status"]["partitions"]] == [10, 10]
    assert cut["status"]["deletedRecords"] == 20
    assert (done["status"]["lastRun"]["id"], done["status"]["lastRun"]["outcome"]) == (run, "Succeeded")
    assert f"via DeleteRecords policy-{run}" in done["status"]["lastRun"]["message"]
    listed = objects.cp.kubectl_json("get", "-n", objects.namespace, "deleterecords")["items"]
    assert sorted(o["metadata"]["name"] for o in listed) == ["cut", f"policy-{run}"]
    # One request: the policy's DeleteRecords; the cut one is recorded from the log starts.
    assert broker_metric(metered_broker, DELETE_REQUESTS) - requests == 1


def test_a_final_status_an_older_operator_overwrote_is_restored(
    metered_broker: EbbBroker, objects: Objects, start_operator: Callable[..., OperatorProcess]
) -> None:
    """During an upgrade from a release without leader election its operator runs beside this one for a
    few seconds; both may take a DeleteRecords created then. The state that leaves, made exactly: kopf
    recorded the creation as handled (the request was cut), and the other operator's last write, from an
    attempt that could not reach the brokers, says Pending. This operator finishes it from there."""
    bootstrap = metered_broker.bootstrap
    topic = unique("le-over")
    create_topic(bootstrap, topic, 1)
    produce(bootstrap, topic, {0: 20})
    spec = {"cluster": {"bootstrapServers": bootstrap}, "guard": "None",
            "partitions": [{"topic": topic, "partition": 0, "offset": 10}]}  # fmt: skip
    assert objects.apply("DeleteRecords", "over", spec).returncode == 0
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_records([CkTopicPartition(topic, 0, 10)]).values():
        future.result(30)
    handled = json.dumps({"spec": {**spec, "dryRun": False, "timeout": "30s"}})
    objects.cp.kubectl(
        "annotate",
        "-n",
        objects.namespace,
        "deleterecords",
        "over",
        f"ebb.dev/last-handled-configuration={handled}",
    )
    _patch_status(objects, "deleterecords", "over", {
        "phase": "Pending", "startedAt": "2026-01-01T00:00:00Z", "completedAt": "2026-01-01T00:00:01Z",
        "partitions": [], "conditions": [{
            "type": "Ready", "status": "Unknown", "reason": "Pending", "observedGeneration": 1,
            "message": "cannot read cluster state, retrying: KafkaConnectionError: Connection timed out",
            "lastTransitionTime": "2026-01-01T00:00:01Z",
        }],
    })  # fmt: skip

    start_operator()
    done = objects.wait("deleterecords", "over", lambda o: o["status"].get("phase") == "Succeeded")
    assert [p["lowWatermark"] for p in done["status"]["partitions"]] == [10]
