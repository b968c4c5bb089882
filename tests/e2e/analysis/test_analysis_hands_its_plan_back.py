"""`python -m ebb_operator.analysis --request FILE --report-configmap NAME --report-namespace NS` on a real
kube-apiserver with Apache Kafka, as a SparkApplication's driver runs it.

The job gets everything from its request (no API reads), plans from the group's real commits and hands
the plan back, with its progress, in the run's ConfigMap (which the operator made, labelled with the
run's policy), under a ServiceAccount that may only write ConfigMaps: it needs no right to create
DeleteRecords, and it creates none.
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

from ebb_operator.models.retention_policy import RunProgress
from ebb_operator.models.run import PLAN_KEY, PROGRESS_KEY, RunPlan, unpack_plan
from harness.bounded import close_within
from harness.controlplane import ControlPlane
from harness.kafka import KafkaBroker

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def crds(control_plane: ControlPlane) -> None:
    control_plane.kubectl("apply", "-f", str(REPO / "crds"))
    for plural in ("deleterecords", "retentionpolicies"):
        control_plane.kubectl("wait", "--for=condition=Established", f"crd/{plural}.ebb.dev", "--timeout=60s")


DRIVER = "spark-driver"


def test_the_job_hands_its_plan_back_in_a_config_map_and_creates_nothing(
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

    # The driver's ServiceAccount may patch ConfigMaps in its namespace, nothing else.
    rbac = [
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": DRIVER, "namespace": k8s_namespace}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": DRIVER, "namespace": k8s_namespace},
         "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["patch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": DRIVER, "namespace": k8s_namespace},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": DRIVER},
         "subjects": [{"kind": "ServiceAccount", "name": DRIVER, "namespace": k8s_namespace}]},
    ]  # fmt: skip
    control_plane.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(rbac))
    kubeconfig = control_plane.service_account_kubeconfig(k8s_namespace, DRIVER)
    # The run's ConfigMap, as the operator creates it before the SparkApplication.
    labels = {"ebb.dev/policy-uid": "u-1", "ebb.dev/run-id": "r1"}
    run = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "orders-r1", "labels": labels}}
    control_plane.kubectl("apply", "-n", k8s_namespace, "-f", "-", stdin=yaml.safe_dump(run))

    request = tmp_path / "request.json"
    request.write_text(
        json.dumps(
            {
                "policy": {"namespace": k8s_namespace, "name": "orders", "uid": "u-1"},
                "spec": {
                    "topics": {"include": [topic]},
                    "consumers": {"include": [group]},
                    "consumedRetention": "1h",
                },
                "runId": "r1",
                "bootstrapServers": bootstrap,
            }
        )
    )
    proc = subprocess.run(
        [sys.executable, "-m", "ebb_operator.analysis", "--request", str(request), "--master", "local[1]",
         "--report-configmap", "orders-r1", "--report-namespace", k8s_namespace],
        env=control_plane.env(kubeconfig), capture_output=True, text=True, timeout=400, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = control_plane.kubectl_json("get", "-n", k8s_namespace, "configmap", "orders-r1")
    assert report["metadata"]["labels"] == labels, "the job writes its keys, the run's labels stay"
    data = report["data"]
    plan = RunPlan.model_validate_json(unpack_plan(data[PLAN_KEY]))
    # Its last progress report: the job's last phase, every task of the stages it ran done.
    progress = RunProgress.model_validate_json(data[PROGRESS_KEY])
    assert progress.stage == "the oldest unread records (Fetch)", progress
    assert progress.tasks_total and progress.tasks_done == progress.tasks_total, progress
    # The group is at 0 on partition 1: only partition 0 goes, up to what the group has read.
    assert [(d.topic, d.partition, d.offset) for d in plan.deletes] == [(topic, 0, 6)]
    assert plan.counted_groups == [group] and plan.run_id == "r1"
    assert plan.partitions == [], "the ConfigMap carries no per-partition list (it must fit 1 MiB)"
    held = {t.topic: t for t in plan.topics}[topic]
    assert held.limiting[0].group == group
    listed = control_plane.kubectl_json("get", "-n", k8s_namespace, "deleterecords")["items"]
    assert listed == [], "the job creates no DeleteRecords: the operator does, from the plan"
