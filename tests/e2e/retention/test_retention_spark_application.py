"""Engine SparkApplication: the operator creates a sparkoperator.k8s.io/v1beta2 SparkApplication from the
policy and follows status.applicationState.state; a test-only stand-in for the Spark operator's
controller (harness/spark_operator_standin.py) runs the application's main file locally.

Runs against ebb-broker only (the Local engine test covers both targets; the job is the same code).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka import Producer

from harness.controlplane import ControlPlane
from harness.ebb_broker import EbbBroker
from harness.operator_process import OperatorProcess
from harness.spark_operator_standin import SMALL_SPARK_ENV, spark_operator_standin
from tests.e2e.operator.operator_kafka import commit, create_topic, log_start, unique

HOUR_MS = 3_600_000


@pytest.mark.timeout(2400)  # several Spark runs; slow only on a busy machine
def test_spark_application_engine_runs_the_job_and_the_policy_deletes(
    control_plane: ControlPlane,
    k8s_namespace: str,
    operator_ebb_broker: EbbBroker,
    start_operator: Callable[[str], OperatorProcess],
    tmp_path: Path,
) -> None:
    bootstrap, ns = operator_ebb_broker.bootstrap, k8s_namespace
    topic, group = unique("sa"), unique("app")
    create_topic(bootstrap, topic, 1)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    old = int(time.time() * 1000) - 2 * HOUR_MS
    for i in range(30):
        producer.produce(topic, value=b"v" * 100, partition=0, timestamp=old + i)
    assert producer.flush(30) == 0
    commit(bootstrap, group, [(topic, 0, 12)])

    policy = {
        "apiVersion": "ebb.dev/v1alpha1",
        "kind": "RetentionPolicy",
        "metadata": {"name": "spark"},
        "spec": {
            "cluster": {"bootstrapServers": bootstrap},
            "topics": {"include": [topic]},
            "consumers": {"include": [group]},
            "consumedRetention": "1h",
            "schedule": {"interval": "1h"},
            "analysis": {
                "engine": "SparkApplication",
                "sparkApplication": {
                    "image": "ebb-operator:test",
                    "serviceAccount": "ebb-analysis",
                    "driver": {"cores": 1, "memory": "1g"},
                    "executor": {"cores": 1, "memory": "2g", "instances": 2},
                },
            },
        },
    }
    control_plane.kubectl("apply", "-n", ns, "-f", "-", stdin=yaml.safe_dump(policy))
    with spark_operator_standin(
        control_plane.admin_kubeconfig, ns, tmp_path / "spark", {**control_plane.env(), **SMALL_SPARK_ENV}
    ) as spark:
        start_operator(bootstrap)
        obj = _wait_run(control_plane, ns)

    last = obj["status"]["lastRun"]
    assert (last["engine"], last["outcome"]) == ("SparkApplication", "Succeeded"), obj["status"]
    assert spark.runs == [last["sparkApplication"]]
    app = control_plane.kubectl_json("get", "-n", ns, "sparkapplications", last["sparkApplication"])
    assert app["status"]["applicationState"]["state"] == "COMPLETED"
    spec = app["spec"]
    assert (spec["type"], spec["image"]) == ("Python", "ebb-operator:test")
    assert spec["mainApplicationFile"].startswith("local:///")
    assert spec["mainApplicationFile"].endswith("/ebb_operator/analysis/__main__.py")
    assert spec["arguments"][:2] == ["--request", "/etc/ebb/run/request.json"]
    mount = [{"name": last["sparkApplication"], "path": "/etc/ebb/run", "secretType": "Generic"}]
    assert spec["driver"] == {"cores": 1, "memory": "1g", "secrets": mount, "serviceAccount": "ebb-analysis"}
    assert spec["executor"] == {
        "cores": 1, "memory": "2g", "instances": 2, "secrets": mount, "serviceAccount": "ebb-analysis"
    }  # fmt: skip
    (owner,) = app["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"]) == ("RetentionPolicy", "spark")

    assert obj["status"]["summary"]["deletableRecords"] == 12
    assert log_start(bootstrap, topic, 0) == 12
    # The plan ConfigMap the job left for the operator, and the run's request Secret, are removed.
    configmaps = control_plane.kubectl_json("get", "configmaps", "-n", ns)["items"]
    assert last["sparkApplication"] not in {c["metadata"]["name"] for c in configmaps}
    secrets = control_plane.kubectl_json("get", "secrets", "-n", ns)["items"]
    assert last["sparkApplication"] not in {s["metadata"]["name"] for s in secrets}


def _wait_run(cp: ControlPlane, ns: str, timeout: float = 900) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        obj: dict[str, Any] = cp.kubectl_json("get", "-n", ns, "retentionpolicy", "spark")
        if (obj.get("status", {}).get("lastRun") or {}).get("outcome") not in (None, "Running"):
            return obj
        if time.monotonic() > deadline:
            raise AssertionError(f"no finished run:\n{yaml.safe_dump(obj)}")
        time.sleep(0.5)
