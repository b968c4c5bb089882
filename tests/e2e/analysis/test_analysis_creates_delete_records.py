"""`python -m ebb_operator.analysis --policy NS/NAME` on a real kube-apiserver with Apache Kafka.

The job reads the RetentionPolicy from the API server, plans from the group's real commits, and creates
one DeleteRecords owned by the policy, with the plan's partitions and guard None (the plan already
applied the policy's consumer rules). No operator runs, so the DeleteRecords is only created, never
executed: what is asserted is exactly what the job hands over.
"""

from __future__ import annotations

import json
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
from harness.controlplane import ControlPlane
from harness.kafka import KafkaBroker

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def crds(control_plane: ControlPlane) -> None:
    control_plane.kubectl("apply", "-f", str(REPO / "crds"))
    for plural in ("deleterecords", "retentionpolicies"):
        control_plane.kubectl("wait", "--for=condition=Established", f"crd/{plural}.ebb.dev", "--timeout=60s")


def test_job_creates_one_delete_records_owned_by_the_policy(
    control_plane: ControlPlane,
    crds: None,
    k8s_namespace: str,
    apache_kafka_broker: KafkaBroker,
    tmp_path: Path,
) -> None:
    bootstrap = apache_kafka_broker.bootstrap_servers
    tag = uuid.uuid4().hex[:6]
    topic, group = f"rp-{tag}", f"app-{tag}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(30)
    old = int(time.time() * 1000) - 2 * 3_600_000  # every record is older than consumedRetention
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for p in range(2):
        for _ in range(10):
            producer.produce(topic, value=b"x" * 50, partition=p, timestamp=old)
    assert producer.flush(30) == 0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(topic, 0, 6), TopicPartition(topic, 1, 0)], asynchronous=False)
    close_within(c)

    policy = {
        "apiVersion": "ebb.dev/v1alpha1",
        "kind": "RetentionPolicy",
        "metadata": {"name": "orders", "namespace": k8s_namespace},
        "spec": {
            "cluster": {"bootstrapServers": bootstrap},
            "topics": {"include": [topic]},
            "consumers": {"include": [group]},
            "consumedRetention": "1h",
        },
    }
    control_plane.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(policy))
    uid = control_plane.kubectl_json("get", "-n", k8s_namespace, "retentionpolicy", "orders")["metadata"][
        "uid"
    ]

    out = tmp_path / "plan.json"
    proc = subprocess.run(
        [sys.executable, "-m", "ebb_operator.analysis", "--policy", f"{k8s_namespace}/orders",
         "--run-id", "r1", "--master", "local[1]", "--output", str(out)],
        env=control_plane.env(), capture_output=True, text=True, timeout=400, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    plan = json.loads(out.read_text())
    assert plan["deleteRecords"] == "orders-r1"

    dr = control_plane.kubectl_json("get", "-n", k8s_namespace, "deleterecords", "orders-r1")
    (owner,) = dr["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "RetentionPolicy",
        "orders",
        uid,
        True,
    )
    # The group is at 0 on partition 1: only partition 0 goes, up to what the group has read.
    assert dr["spec"]["partitions"] == [{"topic": topic, "partition": 0, "offset": 6}]
    assert (dr["spec"]["guard"], dr["spec"]["dryRun"]) == ("None", False)
    assert dr["spec"]["cluster"] == {"bootstrapServers": bootstrap}
    parts = {p["partition"]: p for p in plan["partitions"] if p["topic"] == topic}
    assert (parts[1]["deleteBefore"], parts[1]["reason"]) == (None, "NothingToDelete")
