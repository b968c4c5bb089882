"""Refusals that help, on a real kube-apiserver: bad input fails at `kubectl apply`, waits for what it
needs, and never repeats itself.

One operator process for the module, serving its validating webhook on 127.0.0.1 and registering
ValidatingWebhookConfiguration ebb.dev itself (EBB_WEBHOOK_MANAGED, the local-process mode), under the
operator's RBAC. The tenant is a user impersonated with `kubectl --as`, bound to the tenant roles only;
its namespace's grant on the module's KafkaCluster covers topics `a-<tag>.*` with Compaction but no
GuardNone.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from ebb_operator import rbac
from harness.bounded import wait_until
from harness.controlplane import ControlPlane
from harness.ebb_broker import EbbBroker
from harness.operator_process import OperatorProcess, running_operator
from harness.ports import free_port
from tests.e2e.operator.operator_kafka import create_topic, log_start, produce
from tests.k8s.operator.conftest import OPERATOR_NAMESPACE
from tests.k8s.operator.operator_k8s import Objects, ready

TENANT, VIEWER = "tenant-alice", "tenant-victor"
KINDS = {
    "DeleteRecords": "deleterecords",
    "CompactionConfig": "compactionconfigs",
    "RetentionPolicy": "retentionpolicies",
}


@dataclass
class Tenancy:
    cp: ControlPlane
    namespace: str
    tag: str
    cluster: str  # the KafkaCluster granting the namespace topics a-<tag>.*
    bootstrap: str
    operator: OperatorProcess

    def apply(
        self, kind: str, name: str, spec: dict[str, Any], user: str = TENANT
    ) -> subprocess.CompletedProcess[str]:
        body = {"apiVersion": "ebb.dev/v1alpha1", "kind": kind, "metadata": {"name": name}, "spec": spec}
        return self.cp.kubectl(
            "apply", "-n", self.namespace, "--as", user, "-f", "-", stdin=yaml.safe_dump(body), check=False
        )

    def wait(
        self, plural: str, name: str, check: Callable[[dict[str, Any]], bool], timeout: float = 60
    ) -> dict[str, Any]:
        objects = Objects(self.cp, self.namespace, log_tail=lambda: "\n" + self.operator.log_tail())
        return objects.wait(plural, name, check, timeout)

    def kafka_cluster(self, name: str, allow: list[str]) -> dict[str, Any]:
        return {
            "apiVersion": "ebb.dev/v1alpha1",
            "kind": "KafkaCluster",
            "metadata": {"name": name},
            "spec": {
                "bootstrapServers": self.bootstrap,
                "access": [{"namespaces": [self.namespace], "topics": [f"a-{self.tag}.*"], "allow": allow}],
            },
        }


def _tenant_roles(cp: ControlPlane, namespace: str) -> None:
    """TENANT edits, VIEWER views the namespace: exactly the chart's ebb-edit and ebb-view rules."""
    roles = [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": f"ebb-admission-{kind}"}, "rules": rules}
        for kind, rules in (("edit", rbac.TENANT_EDIT_RULES), ("view", rbac.TENANT_VIEW_RULES))
    ]  # fmt: skip
    cp.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(roles))
    for user, kind in ((TENANT, "edit"), (VIEWER, "view")):
        cp.kubectl("create", "rolebinding", f"{user}-{kind}", "-n", namespace,
                   f"--clusterrole=ebb-admission-{kind}", f"--user={user}")  # fmt: skip


def _registered(cp: ControlPlane, port: int) -> bool:
    found = cp.kubectl("get", "validatingwebhookconfiguration", "ebb.dev", "-o", "json", check=False)
    if found.returncode != 0:
        return False
    urls = [w["clientConfig"].get("url", "") for w in json.loads(found.stdout)["webhooks"]]
    return all(u.startswith(f"https://127.0.0.1:{port}/") for u in urls)


@pytest.fixture(scope="module")
def tenancy(
    control_plane: ControlPlane,
    operator_kubeconfig: Path,
    operator_ebb_broker: EbbBroker,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Tenancy]:
    tag = uuid.uuid4().hex[:6]
    namespace, cluster = f"adm-{tag}", f"adm-{tag}"
    control_plane.kubectl("create", "namespace", namespace)
    _tenant_roles(control_plane, namespace)
    port = free_port()
    settings = {
        "EBB_OPERATOR_NAMESPACE": OPERATOR_NAMESPACE,
        "EBB_RESYNC_SECONDS": "1",  # resyncs quickly: the refused CompactionConfig's five take 5 s
        "EBB_WEBHOOK_PORT": str(port),
        "EBB_WEBHOOK_HOST": "127.0.0.1",
        "EBB_WEBHOOK_MANAGED": "true",
    }
    log = tmp_path_factory.mktemp("admission") / "operator.log"
    env = control_plane.env(operator_kubeconfig)
    try:
        with running_operator(env, log, namespaces=(namespace,), settings=settings) as operator:
            t = Tenancy(control_plane, namespace, tag, cluster, operator_ebb_broker.bootstrap, operator)
            control_plane.kubectl(
                "apply", "-f", "-", stdin=yaml.safe_dump(t.kafka_cluster(cluster, ["Compaction"]))
            )
            # Live means its webhook serves and the configuration points at it (a liveness probe).
            assert _registered(control_plane, port), operator.log_tail()
            yield t
        assert not _registered(control_plane, port), "a stopped operator left its webhook registered"
    finally:  # never leave a failurePolicy Fail webhook behind for the rest of the session
        control_plane.kubectl("delete", "validatingwebhookconfiguration", "ebb.dev", "--ignore-not-found")
    text = log.read_text(errors="replace")
    assert "Traceback" not in text or "TemporaryError" in text, text[-4000:]
    assert "Error parsing" not in text, "RE2 printed a refused pattern to the operator's output"


def test_kubectl_apply_refuses_bad_input_at_once_naming_field_value_and_rule(tenancy: Tenancy) -> None:
    t = tenancy
    own, other = f"a-{t.tag}-orders", f"b-{t.tag}-payroll"
    ref = {"clusterRef": {"name": t.cluster}}
    refused: dict[str, tuple[str, dict[str, Any], str]] = {
        # An invalid RE2 pattern: the model's rule, in the webhook's words (not pydantic's, no URL).
        "bad-pattern": (
            "CompactionConfig",
            {**ref, "topics": {"include": ["orders("]}},
            "spec.topics.include[0] 'orders(': not a valid RE2 regex: missing ) in 'orders('; "
            "rule: RE2 syntax (no lookaround or backreferences), matching whole names",
        ),
        # Outside the grant: the topic the tenant wrote is named, with the grant it is outside of.
        "outside": (
            "DeleteRecords",
            {**ref, "partitions": [{"topic": other, "partition": 0, "offset": 1}]},
            f"spec.partitions[0].topic '{other}': outside the topics granted to namespace {t.namespace} on "
            f"KafkaCluster {t.cluster} (a-{t.tag}.*; spec.access[].topics)",
        ),
        # An option the grant lacks.
        "guard-none": (
            "DeleteRecords",
            {**ref, "partitions": [{"topic": own, "partition": 0, "offset": 1}], "guard": "None"},
            f"spec.guard 'None' needs GuardNone in the grant of namespace {t.namespace} on KafkaCluster "
            f"{t.cluster} (spec.access[].allow)",
        ),
        # An interval below the minimum: the CRD's CEL rule, before any webhook.
        "too-often": (
            "RetentionPolicy",
            {**ref, "topics": {"include": [own]}, "consumedRetention": "1h", "schedule": {"interval": "0s"}},
            'spec.schedule.interval: Invalid value: "0s": shorter than the minimum 1m (the shortest time '
            "between runs)",
        ),
    }
    for name, (kind, spec, message) in refused.items():
        result = t.apply(kind, name, spec)
        assert result.returncode != 0, (name, result.stdout)
        error = result.stderr.strip()
        assert message in error, (name, error)
        assert "\n" not in error and "pydantic" not in error and "http" not in error, (name, error)
    for kind, plural in KINDS.items():
        listed = t.cp.kubectl_json("get", plural, "-n", t.namespace)["items"]
        assert [o["metadata"]["name"] for o in listed if o["metadata"]["name"] in refused] == [], kind
    # What the grant allows is admitted.
    assert (
        t.apply(
            "CompactionConfig", "own-pattern", {**ref, "topics": {"include": [f"a-{t.tag}-compacted.*"]}}
        ).returncode
        == 0
    )


def test_a_delete_records_applied_before_its_kafka_cluster_runs_once_it_exists(tenancy: Tenancy) -> None:
    """GitOps order: the DeleteRecords first, admitted with a warning; it waits (Pending, ClusterNotFound)
    and runs once its KafkaCluster is applied."""
    t = tenancy
    late, topic = f"late-{t.tag}", f"a-{t.tag}-late"
    create_topic(t.bootstrap, topic, 1)
    produce(t.bootstrap, topic, {0: 10})
    spec = {"clusterRef": {"name": late}, "partitions": [{"topic": topic, "partition": 0, "offset": 6}]}

    applied = t.apply("DeleteRecords", "early", spec)

    assert applied.returncode == 0, applied.stderr
    assert f"Warning: KafkaCluster {late} does not exist (yet)" in applied.stderr
    waiting = t.wait("deleterecords", "early", lambda o: ready(o).get("reason") == "ClusterNotFound")
    assert waiting["status"]["phase"] == "Pending" and ready(waiting)["status"] == "False"
    wide = t.cp.kubectl("get", "deleterecords", "early", "-n", t.namespace, "-o", "wide").stdout
    assert wide.split()[4:7] == ["AGE", "REASON", "MESSAGE"] and "ClusterNotFound" in wide, wide

    t.cp.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(t.kafka_cluster(late, [])))

    done = t.wait(
        "deleterecords", "early", lambda o: o.get("status", {}).get("phase") in {"Succeeded", "Failed"}
    )
    assert done["status"]["phase"] == "Succeeded", (ready(done), done["status"]["partitions"])
    assert log_start(t.bootstrap, topic, 0) == 6


def test_a_refused_compaction_config_warns_once_per_generation(tenancy: Tenancy) -> None:
    """A pattern that reaches another tenant's topic passes the webhook (only the cluster knows what it
    matches) and is refused by the reconciler at every resync, with one Warning per generation."""
    t = tenancy
    create_topic(t.bootstrap, f"b-{t.tag}-ledger", 1)
    spec = {"clusterRef": {"name": t.cluster}, "topics": {"include": [f".*-{t.tag}-ledger"]}}
    assert t.apply("CompactionConfig", "reach", spec).returncode == 0

    def forbidden_attempts() -> float:
        line = 'ebb_operator_reconcile_failures_total{kind="CompactionConfig",reason="Forbidden"}'
        text = t.operator.metrics_text()
        return next((float(x.split()[-1]) for x in text.splitlines() if x.startswith(line)), 0.0)

    def warnings() -> dict[str, int]:
        events = t.cp.kubectl_json(
            "get", "events", "-n", t.namespace, "--field-selector", "involvedObject.name=reach"
        )
        counted: dict[str, int] = {}
        for e in events["items"]:
            if e["type"] == "Warning":
                counted[e["reason"]] = counted.get(e["reason"], 0) + e.get("count", 1)
        return counted

    obj = t.wait("compactionconfigs", "reach", lambda o: ready(o).get("reason") == "Forbidden")
    assert "spec.topics reaches 1 topic(s) outside" in ready(obj)["message"]
    assert f"b-{t.tag}-ledger" not in ready(obj)["message"], "named a topic the tenant did not write"

    def attempts_after(since: float, more: int, timeout: float) -> None:
        wait_until(
            f"{more} more refused reconciles",
            forbidden_attempts,
            timeout,
            until=lambda n: n >= since + more,
            interval=0.5,
            detail=lambda n: f"{n:g} (from {since:g})\n{t.operator.log_tail()}",
        )

    attempts_after(forbidden_attempts(), 5, 60)  # five resyncs, each refused again
    assert warnings() == {"Forbidden": 1}

    spec["minCompactionLag"] = "1h"  # generation 2: said once more
    assert t.apply("CompactionConfig", "reach", spec).returncode == 0
    t.wait("compactionconfigs", "reach", lambda o: ready(o).get("observedGeneration") == 2)
    attempts_after(forbidden_attempts(), 2, 60)
    assert warnings() == {"Forbidden": 2}


def test_a_viewer_gets_ebb_and_kubectl_explain_describes_every_field(tenancy: Tenancy) -> None:
    t = tenancy
    viewed = {"clusterRef": {"name": t.cluster}, "topics": {"include": [f"a-{t.tag}-viewed"]}}
    assert t.apply("CompactionConfig", "viewed", viewed).returncode == 0
    listed = t.cp.kubectl("get", "ebb", "-n", t.namespace, "--as", VIEWER, check=False)
    assert listed.returncode == 0, listed.stderr
    assert "compactionconfig.ebb.dev/viewed" in listed.stdout
    # kubectl explain reads the API server's OpenAPI document: every field there has text.
    document = json.loads(t.cp.kubectl("get", "--raw", "/openapi/v3/apis/ebb.dev/v1alpha1").stdout)
    missing = []
    for name, schema in document["components"]["schemas"].items():
        if not name.startswith("dev.ebb.v1alpha1.") or name.endswith("List"):
            continue
        kind = name.rsplit(".", 1)[1]
        for part in ("spec", "status"):
            missing += _undescribed(schema["properties"][part], f"{kind}.{part}")
    assert missing == []
    for field, text in [
        ("retentionpolicies.spec.dryRun", "change nothing anywhere"),
        ("retentionpolicies.spec.analysis.engine", "SparkApplication"),
        ("compactionconfigs.spec.cleanupPolicy", "cleanup.policy"),
        ("kafkaclusters.spec.access.allow", "GuardNone"),
    ]:
        assert text in t.cp.kubectl("explain", field).stdout, field


def _undescribed(node: dict[str, Any], path: str) -> list[str]:
    missing = []
    for name, prop in (node.get("properties") or {}).items():
        if not prop.get("description"):
            missing.append(f"{path}.{name}")
        missing += _undescribed(prop, f"{path}.{name}")
    items = node.get("items")
    if isinstance(items, dict):
        missing += _undescribed(items, f"{path}[]")
    return missing
