"""Two operator processes with the same settings against one API server: one acts, on each object once,
counted where it matters, at the broker (ebb-broker's `ebb_requests_total{api="DeleteRecords"}`); after a
kill -9 of either, the other finishes the work (the waiting one killed: the leader goes on; the leader
killed: the waiting one takes over). The election's rules on their own: tests/unit/operator/
test_election.py. Lease timings here are the tier's short ones (conftest.OPERATOR_TEST_SETTINGS)."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable

from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CkTopicPartition

from harness.bounded import close_within
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


def _check_done_once(
    objects: Objects, broker: EbbBroker, topic: str, names: list[str], before: float
) -> None:
    """Each object cut its partition once: one RecordsDeleted, one DeleteRecords request at the broker."""
    items = objects.cp.kubectl_json("get", "-n", objects.namespace, "deleterecords")["items"]
    by_name = {o["metadata"]["name"]: o for o in items}
    events = objects.cp.kubectl_json("get", "events", "-n", objects.namespace)["items"]
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": unique("probe")})
    try:
        for name in names:
            (part,) = by_name[name]["status"]["partitions"]
            assert part["lowWatermark"] == 6, part
            low, _ = consumer.get_watermark_offsets(CkTopicPartition(topic, part["partition"]), timeout=10)
            assert low == 6, (name, low)
            deleted = [
                e for e in events if e["involvedObject"]["name"] == name and e["reason"] == "RecordsDeleted"
            ]
            assert len(deleted) == 1, name
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
    topic, names = unique("le-once"), [f"once-{p}" for p in range(12)]
    create_topic(metered_broker.bootstrap, topic, len(names))
    produce(metered_broker.bootstrap, topic, dict.fromkeys(range(len(names)), 10))
    before = broker_metric(metered_broker, DELETE_REQUESTS, default=0)

    _apply(objects, metered_broker.bootstrap, topic, names[:8])
    _all_succeeded(objects, names[:8])
    assert not _leads(follower) and "ebb_operator_reconciles_total{" not in follower.metrics()
    # kill -9 of the one that waits: the leader goes on alone.
    follower.kill()
    _apply(objects, metered_broker.bootstrap, topic, names[8:])
    _all_succeeded(objects, names[8:])

    _check_done_once(objects, metered_broker, topic, names, before)
    assert 'ebb_operator_reconciles_total{kind="DeleteRecords"} 12.0' in leader.metrics()
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
    assert _one_leader([follower]) is follower
    took_over = time.monotonic() - killed_at
    _all_succeeded(objects, names)
    finished = time.monotonic() - killed_at

    _check_done_once(objects, metered_broker, topic, names, before)
    assert _holder(objects) == _identity(follower)
    print(
        f"\ntakeover after kill -9 of the leader: {took_over:.1f} s (lease 6 s); work done: {finished:.1f} s"
    )
