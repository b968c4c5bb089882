"""DeleteRecords latency: `kubectl apply` of a 100-partition DeleteRecords until `Succeeded`, next to
Apache Kafka's kafka-delete-records.sh deleting the same partitions on the same broker (20 runs each).

Needs the test control plane (`make harness-k8s`) and Apache Kafka (`make harness-kafka`). The operator
runs as a local process, the way the k8s tests run it; kubectl and the JVM tool are timed end to end, as a
user would wait for them.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, cast

import yaml
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kubernetes import client, config

from bench.report import emit
from harness.controlplane import ControlPlane, running_control_plane
from harness.ebb_broker import EbbBroker
from harness.kafka import apache_kafka, kafka_tool
from harness.ports import free_port

PARTITIONS = 100
RUNS = 20


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _produce_one_each(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for p in range(PARTITIONS):
        producer.produce(topic, value=b"x" * 100, partition=p)
    producer.flush(30)


def _row(name: str, seconds: list[float]) -> dict[str, object]:
    return {
        "path": name,
        "runs": len(seconds),
        "p50_ms": round(_percentile(seconds, 0.5) * 1000, 1),
        "p99_ms": round(_percentile(seconds, 0.99) * 1000, 1),
        "mean_ms": round(statistics.mean(seconds) * 1000, 1),
    }


def _measure(cp: ControlPlane, bootstrap: str, label: str, work: Path) -> list[dict[str, object]]:
    """20 operator runs and 20 tool runs of a 100-partition delete against one broker."""
    namespace = f"bench-{label}"
    cp.kubectl("create", "namespace", namespace)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for topic in ("bench-operator", "bench-tool"):
        for f in admin.create_topics([NewTopic(topic, PARTITIONS, 1)]).values():
            f.result(60)
    log = (work / f"operator-{label}.log").open("wb")
    operator = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ebb_operator",
            "-n",
            namespace,
            "--metrics-port",
            "0",
            "--liveness-port",
            str(free_port()),
        ],
        env=cp.env(),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        config.load_kube_config(str(cp.admin_kubeconfig))
        api = client.CustomObjectsApi()
        time.sleep(3)
        operator_times: list[float] = []
        print(
            f"==> {label}: {RUNS} DeleteRecords of {PARTITIONS} partitions through the operator", flush=True
        )
        for run in range(RUNS):
            _produce_one_each(bootstrap, "bench-operator")
            body = {
                "apiVersion": "ebb.dev/v1alpha1",
                "kind": "DeleteRecords",
                "metadata": {"name": f"run-{run}"},
                "spec": {
                    "cluster": {"bootstrapServers": bootstrap},
                    "guard": "None",
                    "partitions": [
                        {"topic": "bench-operator", "partition": p, "offset": -1} for p in range(PARTITIONS)
                    ],
                },
            }
            started = time.monotonic()
            cp.kubectl("apply", "-n", namespace, "-f", "-", stdin=yaml.safe_dump(body))
            while True:
                obj = cast(
                    "dict[str, Any]",  # the client types custom objects as `object`
                    api.get_namespaced_custom_object(
                        "ebb.dev", "v1alpha1", namespace, "deleterecords", f"run-{run}"
                    ),
                )
                phase = obj.get("status", {}).get("phase")
                if phase in ("Succeeded", "PartiallyFailed", "Failed"):
                    break
                time.sleep(0.01)
            operator_times.append(time.monotonic() - started)
            if phase != "Succeeded":
                raise RuntimeError(f"run {run} ended {phase}: {obj['status']}")
    finally:
        operator.terminate()
        operator.wait(30)
        log.close()
    tool_times: list[float] = []
    print(f"==> {label}: {RUNS} runs of kafka-delete-records on the same broker", flush=True)
    offsets = work / f"offsets-{label}.json"
    offsets.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": "bench-tool", "partition": p, "offset": -1} for p in range(PARTITIONS)
                ],
            }
        )
    )
    for _ in range(RUNS):
        _produce_one_each(bootstrap, "bench-tool")
        started = time.monotonic()
        kafka_tool(
            "kafka-delete-records", "--bootstrap-server", bootstrap, "--offset-json-file", str(offsets)
        )
        tool_times.append(time.monotonic() - started)
    return [
        _row(f"{label}: kubectl apply -> DeleteRecords Succeeded", operator_times),
        _row(f"{label}: kafka-delete-records.sh", tool_times),
    ]


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-dr-"))
    print(f"==> starting the control plane, ebb-broker and Apache Kafka in {work}", flush=True)
    with (
        running_control_plane(work / "cp") as cp,
        apache_kafka(work / "kafka") as kafka,
        EbbBroker(work / "ebb" / "data", configs={"offsets.topic.num.partitions": "4"}) as ebb,
    ):
        cp.kubectl("apply", "-f", str(Path(__file__).resolve().parents[1] / "crds"))
        cp.kubectl("wait", "--for=condition=Established", "crd/deleterecords.ebb.dev", "--timeout=60s")
        rows = _measure(cp, ebb.bootstrap, "ebb-broker", work) + _measure(
            cp, kafka.bootstrap_servers, "apache-kafka", work
        )
        version = kafka.version
    emit(
        "delete_records",
        rows,
        notes=f"{PARTITIONS} partitions, offset -1, guard None; single-node ebb-broker and Apache Kafka "
        f"{version}. "
        "Operator time: kubectl apply, watch delivery, planning (metadata, ListOffsets x2, DescribeLogDirs), "
        "status writes, DeleteRecords, DescribeLogDirs, Events. Tool time is mostly JVM start.",
    )
