"""DeleteRecords end to end: kubectl apply -> operator (RBAC-limited) -> Kafka -> status and Events."""

from __future__ import annotations

import json
from collections.abc import Callable

from harness.bounded import wait_until
from harness.ports import free_port
from tests.e2e.operator.operator_kafka import commit, create_topic, log_start, produce, unique
from tests.k8s.operator.operator_k8s import Objects, OperatorProcess, ready


def _phase(expected: str) -> Callable[[dict], bool]:
    return lambda obj: obj.get("status", {}).get("phase") == expected


def _cluster(bootstrap: str) -> dict[str, str]:
    return {"bootstrapServers": bootstrap}


def test_succeeds_with_the_right_low_watermarks(
    kafka_bootstrap: str, objects: Objects, ebb_operator: OperatorProcess
) -> None:
    topic, group = unique("dr-ok"), unique("readers")
    # 40 KB records in 1 MiB segments: partition 0's first segment lies wholly below the cut at 30, so
    # the brokers' retention passes free it after the deletion.
    create_topic(kafka_bootstrap, topic, 2, {"segment.bytes": str(1 << 20), "file.delete.delay.ms": "0"})
    produce(kafka_bootstrap, topic, {0: 40, 1: 40}, size=40_000)
    commit(kafka_bootstrap, group, [(topic, 0, 40), (topic, 1, 40)])
    spec = {
        "cluster": _cluster(kafka_bootstrap),
        "partitions": [
            {"topic": topic, "partition": 0, "offset": 30},
            {"topic": topic, "partition": 1, "offset": -1},
        ],
    }
    assert objects.apply("DeleteRecords", "ok", spec).returncode == 0

    obj = objects.wait("deleterecords", "ok", _phase("Succeeded"))

    status = obj["status"]
    by_partition = {p["partition"]: p for p in status["partitions"]}
    assert by_partition[0]["lowWatermark"] == 30 and by_partition[1]["lowWatermark"] == 40
    assert by_partition[1]["requestedOffset"] == 40  # -1 resolved to the high watermark and recorded
    assert status["deletedRecords"] == 70 and status["partitionCount"] == 2
    assert status["observedGeneration"] == 1 and status["bytesBefore"] > 40 * 40_000
    # reclaimedBytes is what the brokers really freed, measured after their retention passes.
    obj = objects.wait("deleterecords", "ok", lambda o: o["status"].get("reclaimedBytes", 0) >= 1_000_000)
    assert obj["status"]["reclaimedBytes"] <= obj["status"]["bytesBefore"]
    assert ready(obj)["status"] == "True" and ready(obj)["reason"] == "Succeeded"
    assert (log_start(kafka_bootstrap, topic, 0), log_start(kafka_bootstrap, topic, 1)) == (30, 40)
    reasons = {e["reason"] for e in objects.events("ok")}
    assert {"DeletingRecords", "RecordsDeleted"} <= reasons
    assert "ebb_operator_records_deleted_total 70.0" in ebb_operator.metrics()


def test_guard_refuses_partitions_a_group_has_not_consumed(
    kafka_bootstrap: str, objects: Objects, ebb_operator: OperatorProcess
) -> None:
    topic, group = unique("dr-guard"), unique("slow")
    create_topic(kafka_bootstrap, topic, 1)
    produce(kafka_bootstrap, topic, {0: 30})
    commit(kafka_bootstrap, group, [(topic, 0, 10)])
    spec = {
        "cluster": _cluster(kafka_bootstrap),
        "partitions": [{"topic": topic, "partition": 0, "offset": 20}],
    }
    assert objects.apply("DeleteRecords", "guarded", spec).returncode == 0

    obj = objects.wait("deleterecords", "guarded", _phase("Failed"))

    assert ready(obj)["reason"] == "GuardRefused"
    error = obj["status"]["partitions"][0]["error"]
    assert f"{group} (committed 10)" in error
    assert log_start(kafka_bootstrap, topic, 0) == 0
    # A dry run, which sends no DeleteRecords, reads the guard when it plans and reports the refusal.
    assert objects.apply("DeleteRecords", "guarded-dry", {**spec, "dryRun": True}).returncode == 0
    dry = objects.wait("deleterecords", "guarded-dry", _phase("Succeeded"))
    assert ready(dry)["reason"] == "DryRun" and dry["status"]["deletedRecords"] == 0
    assert f"{group} (committed 10)" in dry["status"]["partitions"][0]["error"]
    # The user can override the guard explicitly.
    assert objects.apply("DeleteRecords", "unguarded", {**spec, "guard": "None"}).returncode == 0
    objects.wait("deleterecords", "unguarded", _phase("Succeeded"))
    assert log_start(kafka_bootstrap, topic, 0) == 20


def test_a_partition_the_guard_refuses_is_not_counted_as_reclaimed(
    kafka_bootstrap: str, objects: Objects, ebb_operator: OperatorProcess
) -> None:
    """The guard is read just before the DeleteRecords request, after the plan measured the bytes of every
    partition: what the brokers freed is counted over the partitions really cut."""
    topic, group = unique("dr-reclaim"), unique("half")
    create_topic(kafka_bootstrap, topic, 2, {"segment.bytes": str(1 << 20), "file.delete.delay.ms": "0"})
    produce(kafka_bootstrap, topic, {0: 40, 1: 40}, size=40_000)
    commit(kafka_bootstrap, group, [(topic, 0, 40), (topic, 1, 5)])
    spec = {
        "cluster": _cluster(kafka_bootstrap),
        "partitions": [{"topic": topic, "partition": p, "offset": 30} for p in (0, 1)],
    }
    assert objects.apply("DeleteRecords", "half", spec).returncode == 0

    obj = objects.wait("deleterecords", "half", _phase("PartiallyFailed"))

    by_partition = {p["partition"]: p for p in obj["status"]["partitions"]}
    assert by_partition[0]["lowWatermark"] == 30
    assert f"{group} (committed 5)" in by_partition[1]["error"]
    assert by_partition[0]["bytesBefore"] > 40 * 40_000 and by_partition[1]["bytesBefore"] > 40 * 40_000
    assert obj["status"]["bytesBefore"] == by_partition[0]["bytesBefore"] + by_partition[1]["bytesBefore"]
    # Partition 0's first segment (up to 1 MiB, as the producer batched) lies below the cut, its last
    # records above it. Counting the refused partition 1 as freed would report at least all it held, as
    # much as partition 0 ever did.
    obj = objects.wait("deleterecords", "half", lambda o: o["status"].get("reclaimedBytes", 0) > 0)
    assert 0 < obj["status"]["reclaimedBytes"] < by_partition[0]["bytesBefore"]
    assert (log_start(kafka_bootstrap, topic, 0), log_start(kafka_bootstrap, topic, 1)) == (30, 0)


def test_one_bad_partition_gives_partially_failed(
    kafka_bootstrap: str, objects: Objects, ebb_operator: OperatorProcess
) -> None:
    topic = unique("dr-partial")
    create_topic(kafka_bootstrap, topic, 1)
    produce(kafka_bootstrap, topic, {0: 10})
    spec = {
        "cluster": _cluster(kafka_bootstrap),
        "guard": "None",
        "partitions": [
            {"topic": topic, "partition": 0, "offset": 5},
            {"topic": topic, "partition": 7, "offset": 1},
        ],
    }
    assert objects.apply("DeleteRecords", "partial", spec).returncode == 0

    obj = objects.wait("deleterecords", "partial", _phase("PartiallyFailed"))

    by_partition = {p["partition"]: p for p in obj["status"]["partitions"]}
    assert by_partition[0]["lowWatermark"] == 5 and "error" not in by_partition[0]
    assert "UNKNOWN_TOPIC_OR_PART" in by_partition[7]["error"]
    assert ready(obj)["status"] == "False"
    assert any(e["type"] == "Warning" and e["reason"] == "PartiallyFailed" for e in objects.events("partial"))


def test_dry_run_reports_and_deletes_nothing(
    kafka_bootstrap: str, objects: Objects, ebb_operator: OperatorProcess
) -> None:
    topic = unique("dr-dry")
    create_topic(kafka_bootstrap, topic, 1)
    produce(kafka_bootstrap, topic, {0: 10})
    spec = {
        "cluster": _cluster(kafka_bootstrap),
        "dryRun": True,
        "guard": "None",
        "partitions": [{"topic": topic, "partition": 0, "offset": 6}],
    }
    assert objects.apply("DeleteRecords", "dry", spec).returncode == 0
    obj = objects.wait("deleterecords", "dry", _phase("Succeeded"))
    assert ready(obj)["reason"] == "DryRun" and obj["status"]["deletedRecords"] == 6
    assert log_start(kafka_bootstrap, topic, 0) == 0


def test_restart_mid_run_resumes_the_recorded_plan_without_a_second_deletion(
    kafka_bootstrap: str, objects: Objects, start_operator: Callable[..., OperatorProcess]
) -> None:
    """The operator records its plan (-1 resolved) in status before deleting. Recreate exactly the state a
    kill -9 right after that write leaves behind, let the log grow, then start the operator: it must finish
    the recorded plan, not cut to the new high watermark."""
    topic = unique("dr-resume")
    create_topic(kafka_bootstrap, topic, 1)
    produce(kafka_bootstrap, topic, {0: 20})
    spec = {
        "cluster": _cluster(kafka_bootstrap),
        "guard": "None",
        "partitions": [{"topic": topic, "partition": 0, "offset": -1}],
    }
    assert objects.apply("DeleteRecords", "resume", spec).returncode == 0
    recorded = {
        "status": {
            "phase": "Running",
            "startedAt": "2026-01-01T00:00:00Z",
            "partitionCount": 1,
            "observedGeneration": 1,
            "partitions": [{"topic": topic, "partition": 0, "requestedOffset": 20, "logStartBefore": 0}],
            "conditions": [
                {
                    "type": "Ready",
                    "status": "Unknown",
                    "reason": "Running",
                    "message": "deleting",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                    "observedGeneration": 1,
                }
            ],
        }
    }
    objects.cp.kubectl(
        "patch",
        "-n",
        objects.namespace,
        "deleterecords",
        "resume",
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(recorded),
    )
    produce(kafka_bootstrap, topic, {0: 15})  # high watermark now 35

    # One pod's container, restarted: its process takes the lease it held back at once (EBB_POD_NAME).
    operator = start_operator(EBB_POD_NAME="operator-pod")
    obj = objects.wait("deleterecords", "resume", _phase("Succeeded"))
    assert obj["status"]["partitions"][0]["lowWatermark"] == 20
    assert obj["status"]["deletedRecords"] == 20
    assert log_start(kafka_bootstrap, topic, 0) == 20

    def deleted_events() -> int:
        return sum(1 for e in objects.events("resume") if e["reason"] == "RecordsDeleted")

    # kopf posts Events from a queue of its own, after the status write: the kill waits for it.
    wait_until("the RecordsDeleted Event", deleted_events, 30, interval=0.3)
    # Executed once: a killed and restarted operator never runs a finished request again.
    operator.kill()
    produce(kafka_bootstrap, topic, {0: 5})
    start_operator(EBB_POD_NAME="operator-pod")
    objects.wait("deleterecords", "resume", lambda o: True)
    assert log_start(kafka_bootstrap, topic, 0) == 20
    assert deleted_events() == 1


def test_cluster_secret_is_read_and_a_missing_one_is_waited_for(
    kafka_bootstrap: str, objects: Objects, ebb_operator: OperatorProcess
) -> None:
    """spec.cluster.secretRef: client properties come from a Secret the operator may read (RBAC); a
    DeleteRecords applied before its Secret waits for it (GitOps order) and runs once it exists."""
    topic = unique("dr-secret")
    create_topic(kafka_bootstrap, topic, 1)
    produce(kafka_bootstrap, topic, {0: 10})
    objects.cp.kubectl(
        "create",
        "secret",
        "generic",
        "kafka-client",
        "-n",
        objects.namespace,
        "--from-literal=security.protocol=PLAINTEXT",
        "--from-literal=client.id=ebb-test",
    )
    partitions = [{"topic": topic, "partition": 0, "offset": 4}]
    cluster = {**_cluster(kafka_bootstrap), "secretRef": {"name": "kafka-client"}}
    assert (
        objects.apply(
            "DeleteRecords", "with-secret", {"cluster": cluster, "guard": "None", "partitions": partitions}
        ).returncode
        == 0
    )
    objects.wait("deleterecords", "with-secret", _phase("Succeeded"))
    assert log_start(kafka_bootstrap, topic, 0) == 4

    missing = {**_cluster(kafka_bootstrap), "secretRef": {"name": "no-such-secret"}}
    assert (
        objects.apply(
            "DeleteRecords", "no-secret", {"cluster": missing, "guard": "None", "partitions": partitions}
        ).returncode
        == 0
    )
    obj = objects.wait("deleterecords", "no-secret", lambda o: ready(o).get("reason") == "ClusterNotFound")
    assert obj["status"]["phase"] == "Pending"
    assert f"Secret {objects.namespace}/no-such-secret does not exist (yet)" in ready(obj)["message"]
    objects.cp.kubectl(
        "create", "secret", "generic", "no-such-secret", "-n", objects.namespace,
        "--from-literal=security.protocol=PLAINTEXT",
    )  # fmt: skip
    objects.wait("deleterecords", "no-secret", _phase("Succeeded"))


def test_kill_9_during_a_run_and_restart_cuts_exactly_the_planned_offsets(
    kafka_bootstrap: str, objects: Objects, start_operator: Callable[..., OperatorProcess]
) -> None:
    """kill -9 as soon as the run is seen (Running, or already done), grow the log, restart: whatever the
    moment of the kill, every partition ends at the offset planned before the kill, never past it."""
    topic = unique("dr-kill")
    create_topic(kafka_bootstrap, topic, 20)
    produce(kafka_bootstrap, topic, dict.fromkeys(range(20), 30))
    # One pod's container, restarted: its process takes the lease it held back at once (EBB_POD_NAME).
    operator = start_operator(EBB_POD_NAME="operator-pod")
    spec = {
        "cluster": _cluster(kafka_bootstrap),
        "guard": "None",
        "partitions": [{"topic": topic, "partition": p, "offset": -1} for p in range(20)],
    }
    assert objects.apply("DeleteRecords", "killed", spec).returncode == 0
    objects.wait("deleterecords", "killed", lambda o: bool(o.get("status", {}).get("phase")), timeout=60)
    operator.kill()
    produce(kafka_bootstrap, topic, dict.fromkeys(range(20), 10))

    start_operator(EBB_POD_NAME="operator-pod")
    obj = objects.wait("deleterecords", "killed", _phase("Succeeded"))

    assert {p["lowWatermark"] for p in obj["status"]["partitions"]} == {30}
    assert obj["status"]["deletedRecords"] == 600
    assert {log_start(kafka_bootstrap, topic, p) for p in range(20)} == {30}


def test_unreachable_cluster_stays_pending_with_the_reason_and_deletes_nothing(
    objects: Objects, ebb_operator: OperatorProcess
) -> None:
    """Nothing answers on the port: the request waits (Pending) and says why, it neither fails nor runs."""
    dead = f"127.0.0.1:{free_port()}"
    spec = {
        "cluster": _cluster(dead),
        "timeout": "2s",
        "partitions": [{"topic": "t", "partition": 0, "offset": 1}],
    }
    assert objects.apply("DeleteRecords", "unreachable", spec).returncode == 0
    obj = objects.wait(
        "deleterecords",
        "unreachable",
        lambda o: "cannot read cluster state" in ready(o).get("message", ""),
    )
    assert obj["status"]["phase"] == "Pending"
    assert ready(obj)["status"] == "Unknown"
