"""`make demo`: Ebb end to end on one machine, without Docker.

A real kube-apiserver + etcd (harness), the Helm chart installed into it, ebb-broker and the
ebb-operator as local processes with the chart's settings (the operator authenticates with the chart's
ServiceAccount token, so it has exactly the chart's RBAC), a workload of producers and consumer groups
at different positions, then the examples applied and what they did: bytes on disk per topic before
and after, the DeleteRecords and its per-partition status, the group that held back each refused
partition, the topic configs a CompactionConfig set, the RetentionPolicy's plan with the group holding
back each held partition, and `kubectl get` with the printer columns.

Ctrl-C at any point stops everything it started and deletes the temporary files.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from demo import workload
from harness.chart_hooks import helm_with_hooks
from harness.controlplane import ControlPlane, running_control_plane
from harness.ebb_broker import EbbBroker
from harness.operator_process import deployment_settings, running_operator
from harness.spark_env import SMALL_SPARK_ENV

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "charts" / "ebb"
EXAMPLES = ROOT / "examples"
NAMESPACE = "ebb"
RELEASE = "ebb"
TENANT = "team-payments"  # a tenant namespace: its grant admits topics payments.* only
TENANT_TOPICS = "payments.*"
GRANTS = [
    {"namespaces": [NAMESPACE], "topics": [".*"], "allow": ["GuardNone", "ForcedRetention", "Compaction"]},
    {"namespaces": [TENANT], "topics": [TENANT_TOPICS]},
]

# Demo-sized settings layered over the chart's broker config (charts/ebb/values.yaml broker.config):
# small segments so a few MB make several of them, and a retention pass every 2s that removes segments
# below the log start offset at once (Kafka waits log.segment.delete.delay.ms, 60s by default).
DEMO_BROKER_CONFIG = {
    "log.retention.check.interval.ms": "2000",
    "log.segment.delete.delay.ms": "0",
}
TOPIC_CONFIG = {"segment.bytes": str(64 * 1024)}
ORDERS, PROFILES = "orders", "customer-profiles"
PARTITIONS = 3
RECORDS_PER_PARTITION = 1500


def say(text: str) -> None:
    print(f"\n==> {text}", flush=True)


def info(text: str) -> None:
    print(f"    {text}", flush=True)


def chart_values() -> dict[str, Any]:
    return dict(yaml.safe_load((CHART / "values.yaml").read_text()))


def topic_bytes(data_dir: Path, topic: str) -> int:
    """Bytes on disk of every partition directory of `topic` (segments, indexes, everything)."""
    total = 0
    for directory in data_dir.glob(f"{topic}-*"):
        if directory.name.rsplit("-", 1)[0] == topic and directory.is_dir():
            total += sum(f.stat().st_size for f in directory.iterdir() if f.is_file())
    return total


def human(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def install_chart(cp: ControlPlane, bootstrap: str, workdir: Path) -> None:
    say(
        f"installing the Helm chart into namespace {NAMESPACE} (CRDs, the operator's RBAC and ServiceAccount)"
    )
    info("no kubelet runs here, so the chart's Deployment gets no pod: the operator runs as a local process")
    info(f"under the chart's ServiceAccount; its default cluster is the local ebb-broker {bootstrap}")
    info(f"the chart's KafkaCluster `ebb` grants namespace {NAMESPACE} every topic and option, and tenant")
    info(f"namespace {TENANT} only topics {TENANT_TOPICS} (no GuardNone, no compaction); the chart's")
    info("install hook applies it, its Job's command run here as a local process")
    helm_with_hooks(
        cp, "install", RELEASE, CHART, NAMESPACE,
        values=(
            "--set", "broker.enabled=false",
            "--set", f"operator.defaultCluster.bootstrapServers={bootstrap}",
            "--set-json", f"operator.defaultCluster.access={json.dumps(GRANTS)}",
        ),
        flags=("--create-namespace",),
        log_dir=workdir,
    )  # fmt: skip
    for crd in ("deleterecords", "compactionconfigs", "retentionpolicies", "kafkaclusters"):
        cp.kubectl("wait", "--for=condition=Established", f"crd/{crd}.ebb.dev", "--timeout=60s")
    info(cp.helm("list", "--namespace", NAMESPACE).stdout.strip().replace("\n", "\n    "))
    info(cp.kubectl("get", "kafkaclusters").stdout.strip().replace("\n", "\n    "))


def operator_kubeconfig(cp: ControlPlane) -> Path:
    """A kubeconfig with a token of the chart's operator ServiceAccount: the chart's RBAC, nothing more."""
    return cp.service_account_kubeconfig(NAMESPACE, f"{RELEASE}-operator")


def run_workload(bootstrap: str) -> None:
    say(f"workload: topics {ORDERS} ({PARTITIONS} partitions) and {PROFILES} (1 partition), 64 KiB segments")
    workload.create_topics(bootstrap, {ORDERS: PARTITIONS, PROFILES: 1}, TOPIC_CONFIG)
    acked = workload.produce(bootstrap, ORDERS, PARTITIONS, RECORDS_PER_PARTITION, keyed=False)
    info(f"produced {acked} records of {workload.RECORD_BYTES} B to {ORDERS} (acks=all)")
    acked = workload.produce(bootstrap, PROFILES, 1, RECORDS_PER_PARTITION, keyed=True)
    info(f"produced {acked} keyed records (50 customer keys) to {PROFILES}")

    ends = workload.end_offsets(bootstrap, ORDERS, PARTITIONS)
    positions = [
        workload.GroupPosition("billing", ORDERS, dict.fromkeys(range(PARTITIONS), 1.0)),
        # analytics is behind on partition 2: that partition must be held back.
        workload.GroupPosition("analytics", ORDERS, {0: 1.0, 1: 1.0, 2: 0.4}),
        # reporting has never committed on partition 2: the RetentionPolicy holds it and names reporting.
        workload.GroupPosition("reporting", ORDERS, {0: 1.0, 1: 1.0}),
    ]
    say("consumer groups read and commit at different positions")
    for position in positions:
        commits = workload.consume_and_commit(bootstrap, position, ends)
        shown = ", ".join(f"p{p}={commits[p]}/{ends[p]}" for p in sorted(commits))
        info(f"group {position.group:<9} committed on {ORDERS}: {shown}")


def wait_for(what: str, check: Any, timeout: float = 120.0, interval: float = 1.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def show_delete_records(cp: ControlPlane, name: str) -> dict[str, Any]:
    def terminal() -> dict[str, Any] | None:
        obj = cp.kubectl_json("get", "deleterecords", name, "-n", NAMESPACE)
        phase = obj.get("status", {}).get("phase")
        return obj if phase in {"Succeeded", "PartiallyFailed", "Failed"} else None

    obj: dict[str, Any] = wait_for(f"DeleteRecords {name} to finish", terminal)
    status = obj["status"]
    info(f"DeleteRecords {name}: phase {status['phase']}, {status.get('deletedRecords')} records deleted")
    for p in status.get("partitions", []):
        outcome = f"low watermark {p['lowWatermark']}" if p.get("lowWatermark") is not None else "not deleted"
        line = f"  {p['topic']}-{p['partition']}: requested {p['requestedOffset']}, {outcome}"
        if p.get("error"):
            line += f"  <- held back: {p['error']}"
        info(line)
    ready = next((c for c in status.get("conditions", []) if c["type"] == "Ready"), None)
    if ready:
        info(f"Ready={ready['status']} reason={ready['reason']}: {ready['message']}")
    return obj


def show_compaction_config(cp: ControlPlane, name: str, bootstrap: str) -> None:
    def ready() -> dict[str, Any] | None:
        obj = cp.kubectl_json("get", "compactionconfigs", name, "-n", NAMESPACE)
        conds = obj.get("status", {}).get("conditions", [])
        return obj if any(c["type"] == "Ready" and c["status"] == "True" for c in conds) else None

    obj: dict[str, Any] = wait_for(f"CompactionConfig {name} to be Ready", ready)
    for topic in obj["status"].get("topics", []):
        info(f"CompactionConfig {name}: topic {topic['topic']} {topic['state']} {topic.get('message', '')}")
    keys = ("cleanup.policy", "min.compaction.lag.ms", "max.compaction.lag.ms", "delete.retention.ms")
    configs = workload.topic_configs(bootstrap, PROFILES, keys)
    info(f"{PROFILES} configs on the broker now: " + ", ".join(f"{k}={v}" for k, v in configs.items()))


def apply_examples_and_show(cp: ControlPlane, bootstrap: str, data_dir: Path) -> None:
    """Apply the DeleteRecords and CompactionConfig examples, then show what they did."""
    before = {t: topic_bytes(data_dir, t) for t in (ORDERS, PROFILES)}
    say("bytes on disk before: " + ", ".join(f"{t} {human(b)}" for t, b in before.items()))

    say(f"kubectl apply -n {NAMESPACE} -f examples/delete-records.yaml -f examples/compaction-config.yaml")
    out = cp.kubectl(
        "apply", "-n", NAMESPACE,
        "-f", str(EXAMPLES / "delete-records.yaml"),
        "-f", str(EXAMPLES / "compaction-config.yaml"),
    ).stdout  # fmt: skip
    info(out.strip().replace("\n", "\n    "))

    say("the operator executes the DeleteRecords (guard: Consumed refuses what a group has not read)")
    dr = show_delete_records(cp, "orders-consumed")
    deleted_any = any(p.get("lowWatermark") for p in dr["status"].get("partitions", []))

    say("the operator applies the CompactionConfig to every matching topic")
    show_compaction_config(cp, "customer-profiles", bootstrap)

    say("waiting for the broker's retention pass to remove the segments below the new log start")
    if deleted_any:
        wait_for(
            "segments to be removed",
            lambda: topic_bytes(data_dir, ORDERS) < before[ORDERS],
            timeout=60,
        )
    after = {t: topic_bytes(data_dir, t) for t in (ORDERS, PROFILES)}
    say("bytes on disk per topic")
    info(f"{'topic':<20}{'before':>12}{'after':>12}{'reclaimed':>12}")
    for topic in (ORDERS, PROFILES):
        reclaimed = before[topic] - after[topic]
        info(f"{topic:<20}{human(before[topic]):>12}{human(after[topic]):>12}{human(reclaimed):>12}")
    lag = yaml.safe_load((EXAMPLES / "compaction-config.yaml").read_text())["spec"]["minCompactionLag"]
    info(f"{PROFILES}: the cleaner leaves records younger than minCompactionLag ({lag}) alone (KIP-58)")
    total = sum(before.values()) - sum(after.values())
    info(f"reclaimed {total} bytes in total ({human(total)})")

    say(f"kubectl get deleterecords,compactionconfigs -n {NAMESPACE}")
    table = cp.kubectl("get", "deleterecords,compactionconfigs", "-n", NAMESPACE).stdout
    info(table.strip().replace("\n", "\n    "))
    say(f"kubectl get events -n {NAMESPACE} (what the operator did)")
    events = cp.kubectl(
        "get", "events", "-n", NAMESPACE, "--sort-by=.lastTimestamp",
        "-o", "custom-columns=OBJECT:.involvedObject.name,REASON:.reason,MESSAGE:.message",
    ).stdout  # fmt: skip
    info(events.strip().replace("\n", "\n    "))


def show_tenant_refused(cp: ControlPlane, bootstrap: str) -> None:
    """A tenant reaching for a topic outside its grant: refused at kubectl apply by the operator's admission
    webhook, by name; nothing is stored, nothing sent to Kafka."""
    say(f"tenant {TENANT} (granted {TENANT_TOPICS} only) asks to delete records of {ORDERS}")
    cp.kubectl("create", "namespace", TENANT)
    start = workload.log_start_offsets(bootstrap, ORDERS, PARTITIONS)
    body = {
        "apiVersion": "ebb.dev/v1alpha1",
        "kind": "DeleteRecords",
        "metadata": {"name": "reach-out", "namespace": TENANT},
        "spec": {
            "clusterRef": {"name": "ebb"},
            "partitions": [{"topic": ORDERS, "partition": 0, "offset": -1}],
        },
    }
    refused = cp.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(body), check=False)
    info(f"kubectl apply exited {refused.returncode}: {refused.stderr.strip()}")
    stored = cp.kubectl("get", "deleterecords", "-n", TENANT, "-o", "name").stdout.strip()
    info(f"DeleteRecords stored in {TENANT}: {stored or 'none'}")
    after = workload.log_start_offsets(bootstrap, ORDERS, PARTITIONS)
    info(f"{ORDERS} log start offsets before {start}, after {after}: nothing was sent to Kafka")


def apply_retention_policy_and_show(cp: ControlPlane) -> None:
    """Apply the RetentionPolicy example (a dry run) and show its plan: who holds back which partition."""
    say(f"kubectl apply -n {NAMESPACE} -f examples/retention-policy.yaml (a dry run: report, delete nothing)")
    info(cp.kubectl("apply", "-n", NAMESPACE, "-f", str(EXAMPLES / "retention-policy.yaml")).stdout.strip())
    say("the operator runs the PySpark analysis job (local[*]) and copies its plan into the policy status")

    def finished() -> dict[str, Any] | None:
        obj = cp.kubectl_json("get", "retentionpolicies", "orders", "-n", NAMESPACE)
        last = obj.get("status", {}).get("lastRun") or {}
        return obj if last.get("outcome") not in (None, "Running") else None

    obj: dict[str, Any] = wait_for("the RetentionPolicy's first run", finished, timeout=400, interval=2)
    status = obj["status"]
    last, summary = status["lastRun"], status.get("summary", {})
    info(f"run {last['id']} ({last['engine']}): {last['outcome']}: {last.get('message', '')}")
    info(
        f"plan: {summary.get('partitions', 0)} partitions, {summary.get('deletableRecords', 0)} records "
        f"({human(summary.get('reclaimableBytes', 0))}) deletable, {summary.get('heldPartitions', 0)} held"
    )
    for topic in status.get("topics", []):
        for held in topic.get("held", []):
            groups = ", ".join(held.get("blockingGroups", [])) or "-"
            info(f"  {topic['topic']}-{held['partition']}: held ({held['reason']}) by {groups}")
    say(f"kubectl get retentionpolicies -n {NAMESPACE}")
    info(cp.kubectl("get", "retentionpolicies", "-n", NAMESPACE).stdout.strip().replace("\n", "\n    "))


def run(workdir: Path) -> int:
    data_dir = workdir / "broker-data"
    broker_config = {**chart_values()["broker"]["config"], **DEMO_BROKER_CONFIG}

    say("starting a Kubernetes control plane (etcd + kube-apiserver from harness) on 127.0.0.1")
    with running_control_plane(workdir / "controlplane") as cp:
        info(f"kube-apiserver {cp.server} ready in {cp.startup_seconds:.1f}s")
        info(f"from another shell: KUBECONFIG={cp.admin_kubeconfig} {cp.binaries.kubectl} get ebb -A")

        say("starting ebb-broker with the chart's broker config plus the demo's overrides")
        info("chart: " + ", ".join(f"{k}={v}" for k, v in chart_values()["broker"]["config"].items()))
        info("demo:  " + ", ".join(f"{k}={v}" for k, v in DEMO_BROKER_CONFIG.items()))
        with EbbBroker(data_dir, configs=broker_config, log_dir=workdir) as broker:
            bootstrap = broker.bootstrap
            info(f"ebb-broker listening on {bootstrap}, data in {data_dir}")
            install_chart(cp, bootstrap, workdir)
            say(f"starting ebb-operator as ServiceAccount {NAMESPACE}/{RELEASE}-operator")
            resync = chart_values()["operator"]["resyncSeconds"]
            info(f"the chart's resyncSeconds is {resync}; the demo uses 5s")
            # Demo-sized Spark for the RetentionPolicy's analysis job (a few thousand records).
            deployment = cp.kubectl_json("get", "deployment", f"{RELEASE}-operator", "-n", NAMESPACE)
            settings = deployment_settings(deployment, NAMESPACE, EBB_RESYNC_SECONDS="5")
            info(
                "operator settings from the chart's Deployment: "
                + ", ".join(f"{k}={v}" for k, v in settings.items())
            )
            with running_operator(
                {**cp.env(operator_kubeconfig(cp)), **SMALL_SPARK_ENV},
                workdir / "ebb-operator.log",
                settings=settings,
            ) as operator:
                info(f"operator live; metrics http://127.0.0.1:{operator.metrics_port}/metrics")
                run_workload(bootstrap)
                apply_examples_and_show(cp, bootstrap, data_dir)
                show_tenant_refused(cp, bootstrap)
                apply_retention_policy_and_show(cp)
    say("demo finished: operator, broker and control plane stopped")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m demo.end_to_end", description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs, broker data)")
    args = parser.parse_args(argv)

    def on_term(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    workdir = Path(tempfile.mkdtemp(prefix="ebb-demo-"))
    print("Ebb demo: consumer-aware retention on a local control plane, broker and operator.")
    print(f"Work directory {workdir}. Press Ctrl-C at any time to stop; everything started is stopped.")
    try:
        return run(workdir)
    except KeyboardInterrupt:
        print("\n==> interrupted: stopped the operator, the broker and the control plane", flush=True)
        return 130
    except Exception as exc:
        print(f"\n==> demo failed: {exc}", file=sys.stderr, flush=True)
        for log in sorted(workdir.glob("*.log")):
            print(f"--- end of {log}:\n{log.read_text(errors='replace')[-2000:]}", file=sys.stderr)
        return 1
    finally:
        if args.keep:
            print(f"==> kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
