"""DeleteRecords and RetentionPolicy on a 3-broker Apache Kafka (RF=3, min.insync.replicas=2), issue 13:
partitions led by different brokers; a follower that stops fetching (KIP-107: a leader answers
DeleteRecords once every live replica's log start has moved, so the request times out; the object shows
that per partition and completes once the follower is back); a leader that changes in the middle of a
DeleteRecords; reclaimedBytes summed over the replicas; a RetentionPolicy run with a broker down; a
RetentionPolicy reading `__consumer_offsets` (spread over the brokers) whose own cut meets a frozen follower.

One cluster for the module (three JVMs take seconds to start); every test starts with all nodes running.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import yaml
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from harness.bounded import close_within, until, wait_until
from harness.controlplane import ControlPlane
from harness.kafka_cluster import KafkaCluster
from harness.operator_process import OperatorProcess
from tests.e2e.operator.operator_kafka import commit, log_start, unique

HOUR_MS = 3_600_000
SEGMENT = 1 << 20  # Kafka's smallest segment.bytes; 40 records of 40 KB fill one and a half


def _create(cluster: KafkaCluster, topic: str, replicas: list[list[int]]) -> None:
    """The topic with the given replica lists (the first replica of each is its preferred leader)."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    config = {"segment.bytes": str(SEGMENT), "file.delete.delay.ms": "0"}
    topics = [NewTopic(topic, len(replicas), -1, replica_assignment=replicas, config=config)]
    for f in admin.create_topics(topics).values():
        f.result(60)
    for p, assigned in enumerate(replicas):
        _led_by(cluster, topic, p, assigned[0])


def _produce(bootstrap: str, topic: str, partitions: int, count: int, size: int, old: int = 0) -> None:
    """`count` records per partition, acknowledged by every in-sync replica; the first `old` two hours old."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    stamp = int(time.time() * 1000) - 2 * HOUR_MS
    for p in range(partitions):
        for i in range(count):
            producer.produce(topic, value=b"v" * size, partition=p, timestamp=stamp + i if i < old else 0)
    assert producer.flush(60) == 0


def _apply(cp: ControlPlane, ns: str, kind: str, name: str, spec: dict[str, Any]) -> None:
    body = {"apiVersion": "ebb.dev/v1alpha1", "kind": kind, "metadata": {"name": name}, "spec": spec}
    cp.kubectl("apply", "-n", ns, "-f", "-", stdin=yaml.safe_dump(body))


def _until(
    cp: ControlPlane, ns: str, plural: str, name: str, check: Callable[[dict[str, Any]], bool], timeout: float
) -> dict[str, Any]:
    obj: dict[str, Any] = wait_until(
        f"{plural}/{name}",
        lambda: cp.kubectl_json("get", "-n", ns, plural, name),
        timeout,
        until=check,
        interval=0.3,
        detail=lambda o: "\n" + yaml.safe_dump(o.get("status")),
    )
    return obj


def _partitions(obj: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {p["partition"]: p for p in obj.get("status", {}).get("partitions", [])}


def _controller_call(cluster: KafkaCluster, call: Callable[[Any], object], via: int) -> None:
    """`call(admin)` for a request the admin client sends to "the controller". A KRaft broker forwards
    such requests to the active controller, and Metadata names a random live broker as the controller,
    which may be the frozen node (a 10 s timeout per try): the request is sent to node `via`, never
    frozen (kafka-python's `_controller_id`, the broker it picked)."""
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=20_000)
    try:
        admin._controller_id = via
        call(admin)
    finally:
        close_within(admin)


def _roles(cluster: KafkaCluster) -> tuple[int, int, int]:
    """(a, b, frozen): the node a test may freeze is never the active KRaft controller. A broker forwards
    controller requests (ElectLeaders, AlterPartitionReassignments) to it, and one forwarded to a frozen
    controller stays stuck there for its request timeout though the other voters have elected a new
    leader within seconds (Kafka 4.3.1)."""
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=20_000)
    try:
        quorum = admin.describe_metadata_quorum()
    finally:
        close_within(admin)
    controller = quorum["topics"][0]["partitions"][0]["leader_id"]
    frozen = 3 if controller != 3 else 2
    a, b = (n.node_id for n in cluster.nodes if n.node_id != frozen)
    return a, b, frozen


def _reorder(cluster: KafkaCluster, topic: str, partition: int, replicas: list[int], via: int) -> None:
    """The partition's replica list reordered (the same brokers, so the reassignment ends at once): its
    preferred leader is now `replicas[0]`, its leader unchanged until an election."""
    from kafka import TopicPartition as KTopicPartition

    def reorder(admin: Any) -> None:
        errors = admin.alter_partition_reassignments({KTopicPartition(topic, partition): replicas})
        assert all(e is None for e in errors.values()), errors

    _controller_call(cluster, reorder, via)
    wait_until(
        f"{topic}-{partition} reordered to {replicas}",
        lambda: cluster.partition_state(topic, partition),
        30,
        until=lambda state: state[1] == replicas,
    )


def _elect_preferred(cluster: KafkaCluster, topic: str, partition: int, leader: int, via: int) -> None:
    """A preferred leader election, as kafka-leader-election.sh runs it."""
    _controller_call(
        cluster, lambda admin: admin.elect_leaders(0, {topic: [partition]}, timeout_ms=20_000), via
    )
    _led_by(cluster, topic, partition, leader)


def _led_by(cluster: KafkaCluster, topic: str, partition: int, leader: int) -> None:
    wait_until(
        f"{topic}-{partition} led by {leader}",
        lambda: cluster.partition_state(topic, partition),
        30,
        until=lambda state: state[0] == leader,
    )


def test_delete_records_waits_for_a_frozen_follower_and_outlives_a_leader_change(
    control_plane: ControlPlane,
    k8s_namespace: str,
    kafka_cluster3: KafkaCluster,
    start_operator: Callable[..., OperatorProcess],
) -> None:
    cp, ns, cluster = control_plane, k8s_namespace, kafka_cluster3
    topic = unique("mb-dr")
    a, b, f = _roles(cluster)
    _create(cluster, topic, [[a, b, f], [b, a, f]])  # partitions led by nodes a and b; node f follows both
    _produce(cluster.bootstrap_servers, topic, 2, 40, 1_000)
    _reorder(cluster, topic, 0, [b, a, f], via=b)  # node b preferred; node a leads until the election below
    assert cluster.partition_state(topic, 0)[0] == a
    follower = cluster.node(f)
    bootstrap = ",".join(f"{n.host}:{n.port}" for n in (cluster.node(a), cluster.node(b)))
    start_operator(bootstrap)
    follower.freeze()  # registered and alive to the controller (its session is 45 s) but not fetching
    try:
        spec = {
            "cluster": {"bootstrapServers": bootstrap},
            "partitions": [{"topic": topic, "partition": p, "offset": 30} for p in (0, 1)],
            "guard": "None",
            "timeout": "300s",
        }
        _apply(cp, ns, "DeleteRecords", "frozen", spec)
        # Each leader waits for node f's log start to move: the request times out, shown per partition,
        # and is tried again.
        waiting = _until(
            cp, ns, "deleterecords", "frozen",
            lambda o: len(_partitions(o)) == 2 and all(p.get("retrying") for p in _partitions(o).values()),
            timeout=120,
        )  # fmt: skip
        assert waiting["status"]["phase"] == "Running"
        for p in _partitions(waiting).values():
            assert "REQUEST_TIMED_OUT" in p["retrying"] and p.get("lowWatermark") is None, p
        assert log_start(bootstrap, topic, 0) == 30  # the leader has cut; the answer waits for node f
        # A leader change in the middle: partition 0 moves from node a to node b while it is retried.
        _elect_preferred(cluster, topic, 0, b, via=b)
    finally:
        follower.thaw()
    done = _until(cp, ns, "deleterecords", "frozen", lambda o: o["status"].get("phase") == "Succeeded", 120)
    assert {p: r["lowWatermark"] for p, r in _partitions(done).items()} == {0: 30, 1: 30}
    assert all(r.get("retrying") is None and r.get("error") is None for r in _partitions(done).values())
    assert cluster.partition_state(topic, 0)[0] == b
    assert [log_start(cluster.bootstrap_servers, topic, p) for p in (0, 1)] == [30, 30]


def test_a_delete_records_whose_only_replica_is_down_waits_for_it_within_its_timeout(
    control_plane: ControlPlane,
    k8s_namespace: str,
    kafka_cluster3: KafkaCluster,
    start_operator: Callable[..., OperatorProcess],
) -> None:
    """A partition with no leader (its one replica's broker stopped, as in a rolling restart) answers the
    plan's lookups with a retriable error: the request says it retries them, and cuts once the broker is
    back, rather than failing for good."""
    cp, ns, cluster = control_plane, k8s_namespace, kafka_cluster3
    topic = unique("mb-down")
    _create(cluster, topic, [[3]])
    _produce(cluster.bootstrap_servers, topic, 1, 40, 200)
    node = cluster.node(3)
    node.stop()  # (started again before the next test by `kafka_cluster3`, whatever happens here)
    bootstrap = ",".join(f"{n.host}:{n.port}" for n in (cluster.node(1), cluster.node(2)))
    start_operator(bootstrap)
    spec = {
        "cluster": {"bootstrapServers": bootstrap},
        "partitions": [{"topic": topic, "partition": 0, "offset": 30}],
        "guard": "None",
        "timeout": "300s",
    }
    _apply(cp, ns, "DeleteRecords", "leaderless", spec)
    waiting = _until(
        cp, ns, "deleterecords", "leaderless",
        lambda o: "retrying the lookup" in _ready(o).get("message", ""), timeout=120,
    )  # fmt: skip
    assert waiting["status"]["phase"] == "Running" and not _partitions(waiting), waiting["status"]
    node.start()
    done = _until(cp, ns, "deleterecords", "leaderless", lambda o: _phase(o) == "Succeeded", 180)
    assert {p: r["lowWatermark"] for p, r in _partitions(done).items()} == {0: 30}
    assert log_start(cluster.bootstrap_servers, topic, 0) == 30


def test_reclaimed_bytes_are_summed_over_the_replicas(
    control_plane: ControlPlane,
    k8s_namespace: str,
    kafka_cluster3: KafkaCluster,
    start_operator: Callable[..., OperatorProcess],
) -> None:
    cp, ns, cluster = control_plane, k8s_namespace, kafka_cluster3
    topic = unique("mb-bytes")
    _create(cluster, topic, [[2, 3, 1]])
    _produce(cluster.bootstrap_servers, topic, 1, 40, 40_000)  # the first segment ends below offset 30
    start_operator(cluster.bootstrap_servers, EBB_RECLAIM_POLL_SECONDS="1")
    spec = {
        "cluster": {"bootstrapServers": cluster.bootstrap_servers},
        "partitions": [{"topic": topic, "partition": 0, "offset": 30}],
        "guard": "None",
    }
    _apply(cp, ns, "DeleteRecords", "bytes", spec)
    # Each replica's retention pass deletes its first segment (about 1 MiB): three of them are freed.
    done = _until(
        cp,
        ns,
        "deleterecords",
        "bytes",
        lambda o: o.get("status", {}).get("reclaimedBytes", 0) > 2 * SEGMENT,
        120,
    )
    status = done["status"]
    assert status["phase"] == "Succeeded" and status["bytesBefore"] > 3 * 40 * 40_000
    assert 2 * SEGMENT < status["reclaimedBytes"] <= status["bytesBefore"]


@pytest.mark.timeout(900)  # a Spark run; slow only on a busy machine
def test_a_retention_policy_runs_with_a_broker_down(
    control_plane: ControlPlane,
    k8s_namespace: str,
    kafka_cluster3: KafkaCluster,
    start_operator: Callable[..., OperatorProcess],
) -> None:
    cp, ns, cluster = control_plane, k8s_namespace, kafka_cluster3
    topic, reader = unique("mb-rp"), unique("mb-reader")
    _create(cluster, topic, [[1, 2, 3], [2, 3, 1], [3, 1, 2]])  # one partition led by each broker
    _produce(cluster.bootstrap_servers, topic, 3, 40, 200, old=30)
    commit(cluster.bootstrap_servers, reader, [(topic, p, 20) for p in range(3)])
    cluster.node(3).stop()  # its leaderships and group coordinators move; min.insync.replicas=2 holds
    # (started again before the next test, by `kafka_cluster3`)
    start_operator(cluster.bootstrap_servers)
    _apply(cp, ns, "RetentionPolicy", "spread", {
        "cluster": {"bootstrapServers": cluster.bootstrap_servers},
        "topics": {"include": [topic]},
        "consumers": {"include": [reader]},
        "consumedRetention": "1h",
    })  # fmt: skip
    done = _until(
        cp, ns, "retentionpolicy", "spread", lambda o: bool(o.get("status", {}).get("lastCompletedRun")), 600
    )
    status = done["status"]
    assert status["lastCompletedRun"]["outcome"] == "Succeeded", status
    assert [log_start(cluster.bootstrap_servers, topic, p) for p in range(3)] == [20, 20, 20]
    (entry,) = status["topics"]
    assert [(g["group"], g["partitions"], g["lagRecords"]) for g in entry["limiting"]] == [(reader, 3, 60)]


def _coordinator_partition(group: str, partitions: int) -> int:
    """The `__consumer_offsets` partition of a group: Java's String.hashCode, Utils.abs, modulo."""
    h = 0
    for char in group:  # ASCII names: one UTF-16 unit per character
        h = (31 * h + ord(char)) & 0xFFFFFFFF
    signed = h - (1 << 32) if h >= 1 << 31 else h
    return (0 if signed == -(1 << 31) else abs(signed)) % partitions


def _group_on(cluster: KafkaCluster, prefix: str, leader: int) -> str:
    """A fresh group name whose coordinator (its `__consumer_offsets` partition's leader) is `leader`."""
    leaders = {p: cluster.partition_state("__consumer_offsets", p)[0] for p in range(3)}
    while True:
        group = unique(prefix)
        if leaders[_coordinator_partition(group, 3)] == leader:
            return group


def _spread_offsets_topic(cluster: KafkaCluster) -> dict[int, int]:
    """`__consumer_offsets` led by its preferred replicas, one partition per broker (an earlier test may
    have moved a node's leaderships away); a node just started again may need a moment to be in sync."""

    def spread() -> dict[int, int]:
        leaders = {p: cluster.partition_state("__consumer_offsets", p)[0] for p in range(3)}
        if len(set(leaders.values())) < 3:  # elect the preferred leaders, and look again
            _controller_call(
                cluster,
                lambda admin: admin.elect_leaders(
                    0, {"__consumer_offsets": [0, 1, 2]}, timeout_ms=20_000, raise_errors=False
                ),
                via=1,
            )
        return leaders

    leaders: dict[int, int] = wait_until(
        "__consumer_offsets led by three brokers",
        spread,
        60,
        until=lambda leaders: len(set(leaders.values())) == 3,
        interval=1,
    )
    return leaders


def _process_state(pid: int) -> str | None:
    """The process's state letter from /proc (R, S, T, Z...), None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None


def _analysis_job(operator_pid: int, timeout: float) -> int:
    """The pid of the operator's Local analysis job (`python -m ebb_operator.analysis`, its child)."""

    def child() -> int | None:
        for pid in (name for name in os.listdir("/proc") if name.isdigit()):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except (OSError, IndexError, ValueError):
                continue
            if ppid == operator_pid and b"ebb_operator.analysis" in argv:
                return int(pid)
        return None

    return until("the operator's analysis job started", child, timeout, interval=0.05)


@contextmanager
def _operator_paused(pid: int) -> Iterator[None]:
    """The operator process stopped (SIGSTOP, not its process group: its analysis job runs on), and
    always continued after."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


@pytest.mark.timeout(900)  # a Spark run; slow only on a busy machine
def test_a_retention_policy_reading_consumer_offsets_waits_for_a_frozen_follower(
    control_plane: ControlPlane,
    k8s_namespace: str,
    kafka_cluster3: KafkaCluster,
    start_operator: Callable[..., OperatorProcess],
) -> None:
    """offsetsSource ConsumerOffsetsTopic reads commits from `__consumer_offsets` partitions led by three
    brokers; the run's DeleteRecords then meets a follower (node f) that has stopped fetching. KIP-107: each
    leader cuts at once but answers only when every live replica's log start has moved, so the object shows
    REQUEST_TIMED_OUT per partition, the policy says it is still deleting (never Succeeded), and the cut
    completes once the follower is back.

    To freeze the follower after the analysis (which talks to every broker: ListGroups, DescribeLogDirs)
    and before the DeleteRecords, the operator is held (SIGSTOP) while its analysis job runs: the job
    ends, the follower is frozen, the operator continues and creates the run's DeleteRecords. Node f must
    come back before its broker session (45 s) ends, or it is fenced and no longer waited for (the
    follower is thawed as soon as the waiting is seen; the test prints how long that took).
    """
    cp, ns, cluster = control_plane, k8s_namespace, kafka_cluster3
    leaders = _spread_offsets_topic(cluster)
    topic = unique("mb-co")
    a, b, f = _roles(cluster)
    _create(cluster, topic, [[a, b, f], [b, a, f]])  # led by nodes a and b; node f follows both
    _produce(cluster.bootstrap_servers, topic, 2, 40, 200, old=30)
    # Two counted groups, their commits in `__consumer_offsets` partitions led by nodes a and b (the run's
    # DeleteRecords re-reads them from their coordinators while node f is frozen).
    reader, ahead = _group_on(cluster, "mb-co-reader", a), _group_on(cluster, "mb-co-ahead", b)
    commit(cluster.bootstrap_servers, reader, [(topic, p, 20) for p in range(2)])
    commit(cluster.bootstrap_servers, ahead, [(topic, p, 40) for p in range(2)])
    follower = cluster.node(f)
    bootstrap = ",".join(f"{n.host}:{n.port}" for n in (cluster.node(a), cluster.node(b)))
    # A frozen node answers nothing: each request the operator's admin client happens to send it (Metadata
    # to the least loaded node, DescribeLogDirs for bytesBefore) costs the request timeout, shortened here
    # so the cut meets the frozen follower well within its broker session. The operator is stopped on
    # purpose below, longer than its Lease's renew deadline: a leader that cannot renew rightly stops
    # acting and exits (leader election, tested on its own); this single replica runs without it.
    op = start_operator(bootstrap, EBB_KAFKA_REQUEST_TIMEOUT_SECONDS="6", EBB_LEADER_ELECTION="false")
    _apply(cp, ns, "RetentionPolicy", "co", {
        "cluster": {"bootstrapServers": bootstrap},
        "topics": {"include": [topic]},
        "consumers": {"include": [reader, ahead]},
        "consumedRetention": "1h",
        "analysis": {"offsetsSource": "ConsumerOffsetsTopic"},
    })  # fmt: skip
    job = _analysis_job(op.popen.pid, timeout=120)
    try:
        with _operator_paused(op.popen.pid):
            wait_until(  # a zombie: the paused operator cannot reap it
                "the analysis job ended",
                lambda: _process_state(job),
                600,
                until=lambda state: state in (None, "Z"),
                interval=0.1,
            )
            follower.freeze()
        frozen_at = time.monotonic()
        policy = _until(
            cp, ns, "retentionpolicy", "co",
            lambda o: bool(o.get("status", {}).get("lastRun", {}).get("deleteRecords")), 60,
        )  # fmt: skip
        name = policy["status"]["lastRun"]["deleteRecords"]
        waiting = _until(
            cp, ns, "deleterecords", name,
            lambda o: o.get("status", {}).get("phase") in ("Succeeded", "PartiallyFailed", "Failed")
            or (len(_partitions(o)) == 2 and all(p.get("retrying") for p in _partitions(o).values())),
            timeout=40,
        )  # fmt: skip
        assert waiting["status"]["phase"] == "Running", waiting["status"]  # not done without node f
        for p in _partitions(waiting).values():
            assert p["requestedOffset"] == 20 and "REQUEST_TIMED_OUT" in p["retrying"], p
            assert p.get("lowWatermark") is None and p.get("error") is None, p
        assert [log_start(bootstrap, topic, p) for p in (0, 1)] == [20, 20]  # the leaders have cut
        # The policy: still deleting, saying why; no run claims success.
        policy = _until(
            cp, ns, "retentionpolicy", "co",
            lambda o: "REQUEST_TIMED_OUT" in _ready(o).get("message", ""), 10,
        )  # fmt: skip
        status = policy["status"]
        assert status["lastRun"]["outcome"] == "Running" and "lastCompletedRun" not in status, status
        assert (_ready(policy)["status"], _ready(policy)["reason"]) == ("Unknown", "Deleting")
        print(f"DeleteRecords waited for the frozen follower {time.monotonic() - frozen_at:.1f} s")
    finally:
        if follower.frozen:
            follower.thaw()
    done = _until(
        cp, ns, "retentionpolicy", "co", lambda o: bool(o.get("status", {}).get("lastCompletedRun")), 120
    )
    status = done["status"]
    assert status["lastCompletedRun"]["outcome"] == "Succeeded", status
    dr = cp.kubectl_json("get", "-n", ns, "deleterecords", name)
    assert {p: r["lowWatermark"] for p, r in _partitions(dr).items()} == {0: 20, 1: 20}
    assert [log_start(cluster.bootstrap_servers, topic, p) for p in (0, 1)] == [20, 20]
    (entry,) = status["topics"]
    assert [(g["group"], g["partitions"], g["lagRecords"]) for g in entry["limiting"]] == [(reader, 2, 40)]
    # The commits came from `__consumer_offsets`, whose partitions three brokers led.
    assert sorted(leaders.values()) == [1, 2, 3]
    assert "reading __consumer_offsets took" in op.log_path.read_text(errors="replace")


def _phase(obj: dict[str, Any]) -> str | None:
    phase: str | None = obj.get("status", {}).get("phase")
    return phase


def _ready(obj: dict[str, Any]) -> dict[str, Any]:
    return next((c for c in obj.get("status", {}).get("conditions", []) if c["type"] == "Ready"), {})
