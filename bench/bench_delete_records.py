"""DeleteRecords latency: `kubectl apply` of a 100-partition DeleteRecords until `Succeeded`, next to
Apache Kafka's kafka-delete-records.sh deleting the same partitions on the same broker (20 runs each).

Two guards: `None` (no check), and the default `Consumed` with 1 000 groups that committed on every
partition of the topic: just before the DeleteRecords request, the operator lists the groups, then
describes them while it fetches their commits on the topic (OffsetFetch, many groups per request:
KIP-709). On ebb-broker the OffsetFetch requests per DeleteRecords are counted from its metrics.

Needs the test control plane (`make harness-k8s`) and Apache Kafka (`make harness-kafka`). The operator
runs as a local process, the way the k8s tests run it; kubectl and the JVM tool are timed end to end, as a
user would wait for them.
"""

from __future__ import annotations

import json
import os
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
GROUPS = 1_000
RECORDS = RUNS + 10  # per partition of the guarded topic, all committed by every group


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


def _commit_everything(bootstrap: str, topic: str) -> None:
    """GROUPS groups, each committed at RECORDS on every partition (one OffsetCommit per group)."""
    from bench.group_commits import commit_groups

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for p in range(PARTITIONS):
        for _ in range(RECORDS):
            producer.produce(topic, value=b"x" * 100, partition=p)
    producer.flush(60)
    offsets = {(topic, p): RECORDS for p in range(PARTITIONS)}
    commit_groups(
        bootstrap, ((f"bench-reader-{g:04}", offsets) for g in range(GROUPS)), request_timeout_ms=60_000
    )


def _offset_fetches(metrics_url: str | None) -> float | None:
    """OffsetFetch requests ebb-broker has served so far (None: not an ebb-broker)."""
    if metrics_url is None:
        return None
    import re
    import urllib.request

    with urllib.request.urlopen(metrics_url, timeout=5) as r:
        text = r.read().decode()
    match = re.search(r'^ebb_requests_total\{api="OffsetFetch"\} (\S+)$', text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


def _operator_runs(
    cp: ControlPlane, api: Any, namespace: str, bootstrap: str, topic: str, guard: str
) -> list[float]:
    """RUNS DeleteRecords of all PARTITIONS partitions, each cutting one record more than the last."""
    times: list[float] = []
    for run in range(RUNS):
        if guard == "None":
            _produce_one_each(bootstrap, topic)
            offset = -1
        else:
            offset = run + 1  # below every group's commit: the guard admits it
        name = f"{guard.lower()}-{run}"
        body = {
            "apiVersion": "ebb.dev/v1alpha1",
            "kind": "DeleteRecords",
            "metadata": {"name": name},
            "spec": {
                "cluster": {"bootstrapServers": bootstrap},
                "guard": guard,
                "partitions": [{"topic": topic, "partition": p, "offset": offset} for p in range(PARTITIONS)],
            },
        }
        started = time.monotonic()
        cp.kubectl("apply", "-n", namespace, "-f", "-", stdin=yaml.safe_dump(body))
        while True:
            obj = cast(
                "dict[str, Any]",  # the client types custom objects as `object`
                api.get_namespaced_custom_object("ebb.dev", "v1alpha1", namespace, "deleterecords", name),
            )
            phase = obj.get("status", {}).get("phase")
            if phase in ("Succeeded", "PartiallyFailed", "Failed"):
                break
            time.sleep(0.01)
        times.append(time.monotonic() - started)
        if phase != "Succeeded":
            raise RuntimeError(f"run {name} ended {phase}: {obj['status']}")
    return times


def _measure(
    cp: ControlPlane, bootstrap: str, label: str, work: Path, metrics_url: str | None = None
) -> list[dict[str, object]]:
    """20 operator runs per guard and 20 tool runs of a 100-partition delete against one broker."""
    namespace = f"bench-{label}"
    cp.kubectl("create", "namespace", namespace)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for topic in ("bench-operator", "bench-tool", "bench-guarded"):
        for f in admin.create_topics([NewTopic(topic, PARTITIONS, 1)]).values():
            f.result(60)
    print(f"==> {label}: {GROUPS} groups commit on every partition of bench-guarded", flush=True)
    _commit_everything(bootstrap, "bench-guarded")
    log = (work / f"operator-{label}.log").open("wb")
    env = {**cp.env(), "EBB_ALLOW_INLINE_CLUSTERS": "true", "EBB_OPERATOR_NAMESPACE": namespace}
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
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        config.load_kube_config(str(cp.admin_kubeconfig))
        api = client.CustomObjectsApi()
        time.sleep(3)
        print(f"==> {label}: {RUNS} DeleteRecords of {PARTITIONS} partitions, guard None", flush=True)
        unguarded = _operator_runs(cp, api, namespace, bootstrap, "bench-operator", "None")
        print(f"==> {label}: {RUNS} DeleteRecords, guard Consumed, {GROUPS} groups", flush=True)
        fetches = _offset_fetches(metrics_url)
        guarded = _operator_runs(cp, api, namespace, bootstrap, "bench-guarded", "Consumed")
        after = _offset_fetches(metrics_url)
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
    consumed = _row(f"{label}: kubectl apply -> Succeeded, guard Consumed, {GROUPS} groups", guarded)
    if fetches is not None and after is not None:
        consumed["offset_fetch_requests_per_run"] = round((after - fetches) / RUNS, 1)
    return [
        _row(f"{label}: kubectl apply -> DeleteRecords Succeeded, guard None", unguarded),
        consumed,
        _row(f"{label}: kafka-delete-records.sh", tool_times),
    ]


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-dr-"))
    metrics_port = free_port()
    print(f"==> starting the control plane, ebb-broker and Apache Kafka in {work}", flush=True)
    with (
        running_control_plane(work / "cp") as cp,
        apache_kafka(work / "kafka") as kafka,
        EbbBroker(
            work / "ebb" / "data", configs={"offsets.topic.num.partitions": "4"}, metrics_port=metrics_port
        ) as ebb,
    ):
        cp.kubectl("apply", "-f", str(Path(__file__).resolve().parents[1] / "crds"))
        cp.kubectl("wait", "--for=condition=Established", "crd/deleterecords.ebb.dev", "--timeout=60s")
        rows = _measure(
            cp, ebb.bootstrap, "ebb-broker", work, f"http://127.0.0.1:{metrics_port}/metrics"
        ) + _measure(cp, kafka.bootstrap_servers, "apache-kafka", work)
        version = kafka.version
    emit(
        "delete_records",
        rows,
        notes=f"{PARTITIONS} partitions; guard None (offset -1), guard Consumed ({GROUPS} groups, committed "
        f"on every partition); single-node ebb-broker and Apache Kafka {version}; load average "
        f"{os.getloadavg()[0]:.1f}. Operator time: kubectl apply, watch delivery, planning (metadata, "
        "ListOffsets x2, DescribeLogDirs), status writes, the guard (ListGroups, Metadata, then "
        "DescribeGroups beside OffsetFetch), DeleteRecords, Events. Tool time is mostly JVM start.",
    )
