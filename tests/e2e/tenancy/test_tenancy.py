"""Two tenants share one operator and one cluster: each acts only inside its KafkaCluster grant.

On a real kube-apiserver with ebb-broker and Apache Kafka, the operator runs under exactly the chart's
rules (no inline clusters, Secrets read only in its own namespace); each tenant namespace has a
ServiceAccount bound only to `ebb-edit`, and every object is applied with that account. Tenant A (grant:
topics `a-.*`, ForcedRetention with a 1-day minimum) tries everything outside its grant; each attempt is
refused with reason Forbidden naming the rule, and tenant B's topics stay byte for byte as they were
(log start offsets and configs read on the broker). What A may do, it does.
"""

from __future__ import annotations

import functools
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka.admin import AdminClient, ConfigResource

from ebb_operator import rbac
from harness.bounded import wait_until
from harness.controlplane import ControlPlane
from harness.operator_process import OperatorProcess, running_operator
from harness.spark_env import SMALL_SPARK_ENV
from tests.e2e.operator.operator_kafka import commit, create_topic, log_start, produce
from tests.e2e.operator.targets import kafka_bootstrap, kafka_kind, operator_ebb_broker
from tests.paths import ROOT

__all__ = ["kafka_bootstrap", "kafka_kind", "operator_ebb_broker"]
OPERATOR_NS, OPERATOR_SA = "ebb-tenancy-operator", "ebb-operator"
HOUR_MS = 3_600_000


def _ready(obj: dict[str, Any]) -> dict[str, Any] | None:
    return next((c for c in obj.get("status", {}).get("conditions", []) if c["type"] == "Ready"), None)


@dataclass
class Tenancy:
    cp: ControlPlane
    kind: str  # ebb-broker or apache-kafka
    bootstrap: str
    cluster: str  # the KafkaCluster both tenants are granted on
    a: str  # tenant namespaces
    b: str
    accounts: dict[str, Path]  # namespace -> kubeconfig of its ServiceAccount bound only to ebb-edit
    a_topic: str
    b_topic: str
    tag: str
    operator: OperatorProcess

    def apply(self, namespace: str, kind: str, name: str, spec: dict[str, Any]) -> None:
        body = {"apiVersion": "ebb.dev/v1alpha1", "kind": kind, "metadata": {"name": name}, "spec": spec}
        self.cp.kubectl(
            "apply",
            "-n",
            namespace,
            "-f",
            "-",
            stdin=yaml.safe_dump(body),
            kubeconfig=self.accounts[namespace],
        )

    def ready(self, namespace: str, plural: str, name: str, timeout: float = 60) -> dict[str, Any]:
        """The Ready condition once it is True or False (Unknown means: still working)."""

        def decided(obj: dict[str, Any]) -> bool:
            cond = _ready(obj)
            return (
                cond is not None
                and cond["status"] != "Unknown"
                and cond.get("observedGeneration") == obj["metadata"]["generation"]
            )

        obj = wait_until(
            f"{plural}/{name} decided",
            lambda: self.cp.kubectl_json("get", "-n", namespace, plural, name),
            timeout,
            until=decided,
            detail=lambda obj: "\n" + yaml.safe_dump(obj),
        )
        return {**(_ready(obj) or {}), "object": obj}

    def b_state(self) -> tuple[list[int], dict[str, str | None]]:
        """What must not change: B's log start offsets and its topic configs, read on the broker."""
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        (future,) = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, self.b_topic)]).values()
        configs = {k: v.value for k, v in future.result(30).items()}
        return [log_start(self.bootstrap, self.b_topic, p) for p in range(2)], configs


def _operator_rbac(cp: ControlPlane) -> Path:
    role = rbac.cluster_role("ebb-tenancy-operator")  # exactly the chart's rules; no inline clusters
    subject = {"kind": "ServiceAccount", "name": OPERATOR_SA, "namespace": OPERATOR_NS}

    def binding(kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        meta = {"name": name, **({"namespace": namespace} if namespace else {})}
        return {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": f"{kind}Binding", "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name},
            "subjects": [subject],
        }  # fmt: skip

    manifests = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": OPERATOR_NS}},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": OPERATOR_SA, "namespace": OPERATOR_NS},
        },
        role,
        binding("ClusterRole", "ebb-tenancy-operator"),
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "ebb-tenancy-credentials", "namespace": OPERATOR_NS},
            "rules": rbac.OWN_NAMESPACE_RULES,
        },
        binding("Role", "ebb-tenancy-credentials", OPERATOR_NS),
        *rbac.leader_election_role("ebb-tenancy-leader-election", OPERATOR_NS, OPERATOR_SA),
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "ebb-tenancy-edit"},
            "rules": rbac.TENANT_EDIT_RULES,
        },
    ]
    cp.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(manifests))
    return cp.service_account_kubeconfig(OPERATOR_NS, OPERATOR_SA)


def _tenant(cp: ControlPlane, namespace: str) -> Path:
    cp.kubectl("create", "namespace", namespace)
    cp.kubectl("create", "serviceaccount", "tenant", "-n", namespace)
    cp.kubectl("create", "rolebinding", "tenant", "-n", namespace, "--clusterrole=ebb-tenancy-edit",
               f"--serviceaccount={namespace}:tenant")  # fmt: skip
    return cp.service_account_kubeconfig(namespace, "tenant")


@pytest.fixture(scope="module")
def operator_kubeconfig(control_plane: ControlPlane) -> Path:
    control_plane.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(ROOT / "crds"))
    control_plane.kubectl("wait", "--for=condition=Established", "crd/kafkaclusters.ebb.dev", "--timeout=60s")
    return _operator_rbac(control_plane)


@pytest.fixture
def tenancy(
    control_plane: ControlPlane,
    operator_kubeconfig: Path,
    kafka_bootstrap: str,
    kafka_kind: str,
    tmp_path: Path,
) -> Iterator[Tenancy]:
    tag = uuid.uuid4().hex[:6]
    a, b, cluster = f"team-a-{tag}", f"team-b-{tag}", f"shared-{tag}"
    accounts = {ns: _tenant(control_plane, ns) for ns in (a, b)}
    a_topic, b_topic = f"a-{tag}", f"b-{tag}"
    for topic in (a_topic, b_topic):
        create_topic(kafka_bootstrap, topic, 2)
        produce(kafka_bootstrap, topic, {0: 20, 1: 20})
    # An admin typo that would freeze a backtracking engine: RE2 matches it in linear time.
    catastrophic = "(a+)+b"
    create_topic(kafka_bootstrap, "a" * 40 + f"-{tag}", 1)
    entry = {
        "apiVersion": "ebb.dev/v1alpha1", "kind": "KafkaCluster", "metadata": {"name": cluster},
        "spec": {"bootstrapServers": kafka_bootstrap, "access": [
            {"namespaces": [a], "topics": [f"a-{tag}.*", catastrophic], "allow": ["ForcedRetention"],
             "forcedRetentionMinimum": "1d"},
            {"namespaces": [b], "topics": [f"b-{tag}.*"]},
        ]},
    }  # fmt: skip
    b_only = {
        "apiVersion": "ebb.dev/v1alpha1", "kind": "KafkaCluster", "metadata": {"name": f"b-only-{tag}"},
        "spec": {"bootstrapServers": kafka_bootstrap, "access": [{"namespaces": [b], "topics": [".*"]}]},
    }  # fmt: skip
    control_plane.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all([entry, b_only]))
    settings = {
        "EBB_OPERATOR_NAMESPACE": OPERATOR_NS,
        "EBB_RESYNC_SECONDS": "2",
        "EBB_ALLOW_INLINE_CLUSTERS": "false",
    }
    env = {**control_plane.env(operator_kubeconfig), **SMALL_SPARK_ENV}
    with running_operator(env, tmp_path / "operator.log", namespaces=(a, b), settings=settings) as op:
        yield Tenancy(
            control_plane, kafka_kind, kafka_bootstrap, cluster, a, b, accounts, a_topic, b_topic, tag, op
        )
        text = op.log_path.read_text(errors="replace")
    assert "Traceback" not in text or "TemporaryError" in text, text[-4000:]


def _dr(cluster: str, topic: str, offset: int = -1, **extra: Any) -> dict[str, Any]:
    return {
        "clusterRef": {"name": cluster},
        "partitions": [{"topic": topic, "partition": 0, "offset": offset}],
        **extra,
    }


def _event_reasons(t: Tenancy, name: str) -> set[str]:
    """The reasons of the Events of tenant A's object `name`."""
    listing = t.cp.kubectl_json("get", "events", "-n", t.a, "--field-selector", f"involvedObject.name={name}")
    return {e["reason"] for e in listing["items"]}


def test_a_tenant_acts_only_inside_its_grant_and_never_touches_another_tenants_topics(
    tenancy: Tenancy,
) -> None:
    t = tenancy
    before = t.b_state()
    kc = t.ready("", "kafkacluster", t.cluster)
    assert kc["status"] == "True" and kc["object"]["status"]["clusterId"]

    refusals: dict[str, tuple[str, dict[str, Any], str]] = {
        "delete-b": (
            "DeleteRecords",
            _dr(t.cluster, t.b_topic),
            rf"spec.partitions\[0\].topic '{t.b_topic}': outside the topics granted to namespace",
        ),
        "guard-none": (
            "DeleteRecords",
            _dr(t.cluster, t.a_topic, guard="None"),
            "spec.guard 'None' needs GuardNone in the grant",
        ),
        "not-granted": (
            "DeleteRecords",
            _dr(f"b-only-{t.tag}", t.a_topic),
            f"namespace {t.a} has no grant on KafkaCluster b-only",
        ),
        "inline": (
            "DeleteRecords",
            {
                "cluster": {"bootstrapServers": t.bootstrap},
                "partitions": [{"topic": t.a_topic, "partition": 0, "offset": -1}],
            },
            "spec.cluster \\(an inline cluster\\) is not allowed",
        ),
        "compact-b": (
            "CompactionConfig",
            {"clusterRef": {"name": t.cluster}, "topics": {"include": [t.b_topic]}},
            "a CompactionConfig needs Compaction",
        ),
        "expire-b": (
            "RetentionPolicy",
            {
                "clusterRef": {"name": t.cluster},
                "topics": {"include": [t.b_topic]},
                "consumedRetention": "1h",
            },
            rf"spec.topics.include\[0\] '{t.b_topic}': outside the topics granted",
        ),
        "short-forced": (
            "RetentionPolicy",
            {
                "clusterRef": {"name": t.cluster},
                "topics": {"include": [t.a_topic]},
                "consumedRetention": "1h",
                "forcedRetention": "2h",
            },
            "shorter than the 86400s forcedRetentionMinimum",
        ),
    }
    for name, (kind, spec, _) in refusals.items():
        t.apply(t.a, kind, name, spec)
    plurals = {
        "DeleteRecords": "deleterecords",
        "CompactionConfig": "compactionconfigs",
        "RetentionPolicy": "retentionpolicies",
    }
    for name, (kind, _, message) in refusals.items():
        ready = t.ready(t.a, plurals[kind], name)
        assert (ready["status"], ready["reason"]) == ("False", "Forbidden"), (name, ready)
        assert re.search(message, ready["message"]), (name, ready["message"])
        # The Event follows the status write: kopf posts Events from a queue of its own.
        wait_until(
            f"a Forbidden Event of {name}",
            functools.partial(_event_reasons, t, name),
            30,
            until=lambda reasons: "Forbidden" in reasons,
            interval=0.3,
        )
    assert t.b_state() == before, "a refused object changed tenant B's topics"

    # What A may do, it does: a DeleteRecords on its own topic (guard Consumed: nobody reads it).
    t.apply(t.a, "DeleteRecords", "own", _dr(t.cluster, t.a_topic, 5))
    assert t.ready(t.a, "deleterecords", "own")["reason"] == "Succeeded"
    assert log_start(t.bootstrap, t.a_topic, 0) == 5
    # The KafkaCluster says who uses it.
    wait_until(
        f"KafkaCluster {t.cluster} used by {t.a}",
        lambda: t.cp.kubectl_json("get", "kafkacluster", t.cluster),
        30,
        until=lambda used: t.a in {u["namespace"] for u in used.get("status", {}).get("usedBy", [])},
        interval=0.5,
        detail=lambda used: used.get("status"),
    )
    assert t.b_state() == before


def test_patterns_are_bounded_and_cannot_freeze_the_operator(tenancy: Tenancy) -> None:
    t = tenancy
    # Too long for the CRD: the API server refuses it.
    too_long = "x" * 300
    body = {"apiVersion": "ebb.dev/v1alpha1", "kind": "CompactionConfig", "metadata": {"name": "long"},
            "spec": {"clusterRef": {"name": t.cluster}, "topics": {"include": [too_long]}}}  # fmt: skip
    result = t.cp.kubectl(
        "apply", "-n", t.a, "-f", "-", stdin=yaml.safe_dump(body), kubeconfig=t.accounts[t.a], check=False
    )
    assert result.returncode != 0 and "256" in result.stderr, result.stderr
    # Not RE2 (lookaround): refused in status, by name.
    t.apply(t.a, "DeleteRecords", "lookaround", _dr(t.cluster, t.a_topic))  # control: proceeds
    t.apply(
        t.a,
        "CompactionConfig",
        "lookaround",
        {"clusterRef": {"name": t.cluster}, "topics": {"include": ["(?=a)a"]}},
    )
    bad = t.ready(t.a, "compactionconfigs", "lookaround")
    assert (bad["reason"], "RE2" in bad["message"]) == ("InvalidSpec", True), bad
    # The grant holds `(a+)+b` and the cluster a 40-character topic of a's: a backtracking engine would
    # take hours on it; every object keeps reconciling within seconds.
    t.apply(t.a, "DeleteRecords", "still-fast", _dr(t.cluster, t.a_topic, 3))
    assert t.ready(t.a, "deleterecords", "still-fast", timeout=30)["reason"] == "Succeeded"


def test_a_secret_property_outside_the_allowlist_is_refused_by_name(tenancy: Tenancy) -> None:
    t = tenancy
    name = f"leaky-{uuid.uuid4().hex[:6]}"
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": OPERATOR_NS},
        "stringData": {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER",
            "sasl.oauthbearer.token.endpoint.url": "http://attacker.example/token",
        },
    }
    entry = {"apiVersion": "ebb.dev/v1alpha1", "kind": "KafkaCluster", "metadata": {"name": name},
             "spec": {"bootstrapServers": t.bootstrap, "credentials": {"secretRef": {"name": name}},
                      "access": [{"namespaces": [t.a], "topics": [".*"]}]}}  # fmt: skip
    t.cp.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all([secret, entry]))
    kc = t.ready("", "kafkacluster", name)
    assert kc["status"] == "False" and "sasl.oauthbearer.token.endpoint.url" in kc["message"], kc
    t.apply(t.a, "DeleteRecords", "via-leaky", _dr(name, t.a_topic))
    dr = t.ready(t.a, "deleterecords", "via-leaky")
    assert dr["reason"] == "ClusterUnreachable" and "is not allowed in a cluster Secret" in dr["message"], dr


def test_a_group_that_rewinds_after_the_analysis_holds_its_partition(tenancy: Tenancy) -> None:
    """A policy's DeleteRecords names the groups the analysis counted (guard ConsumedBy); the handler
    reads their commits again just before deleting, so a counted group that moved back since holds its
    partition, while a group the policy did not count does not."""
    t = tenancy
    counted, ignored = f"counted-{uuid.uuid4().hex[:6]}", f"ignored-{uuid.uuid4().hex[:6]}"
    commit(t.bootstrap, ignored, [(t.a_topic, 0, 0), (t.a_topic, 1, 0)])
    # The analysis saw `counted` at 15 on both partitions; since then it rewound partition 1 to 4.
    commit(t.bootstrap, counted, [(t.a_topic, 0, 15), (t.a_topic, 1, 4)])
    spec = {
        "clusterRef": {"name": t.cluster},
        "partitions": [{"topic": t.a_topic, "partition": p, "offset": 12} for p in range(2)],
        "guard": "ConsumedBy",
        "consumedBy": [counted],
    }
    t.apply(t.a, "DeleteRecords", "policy-run", spec)
    ready = t.ready(t.a, "deleterecords", "policy-run")
    parts = {p["partition"]: p for p in ready["object"]["status"]["partitions"]}
    assert ready["reason"] == "PartiallyFailed"
    assert parts[0]["lowWatermark"] == 12, "ignored, which the policy left out, held nothing"
    assert parts[1].get("lowWatermark") is None and f"{counted} (committed 4)" in parts[1]["error"]
    assert [log_start(t.bootstrap, t.a_topic, p) for p in range(2)] == [12, 0]


@pytest.mark.timeout(900)
def test_a_dry_run_with_forced_retention_changes_nothing_anywhere(tenancy: Tenancy) -> None:
    t = tenancy
    admin = AdminClient({"bootstrap.servers": t.bootstrap})

    def topic_configs(topic: str) -> dict[str, str | None]:
        (future,) = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)]).values()
        return {k: v.value for k, v in future.result(30).items()}

    group = f"reader-{uuid.uuid4().hex[:6]}"
    commit(t.bootstrap, group, [(t.a_topic, 0, 20), (t.a_topic, 1, 20)])
    before = (
        {tp: topic_configs(tp) for tp in (t.a_topic, t.b_topic)},
        [log_start(t.bootstrap, t.a_topic, p) for p in range(2)],
    )
    t.apply(t.a, "RetentionPolicy", "dry", {
        "clusterRef": {"name": t.cluster}, "topics": {"include": [t.a_topic]}, "consumedRetention": "1s",
        "forcedRetention": "2d", "dryRun": True, "schedule": {"interval": "1h"},
    })  # fmt: skip
    ready = t.ready(t.a, "retentionpolicies", "dry", timeout=600)
    status = ready["object"]["status"]
    assert (ready["reason"], status["lastRun"]["outcome"]) == ("DryRun", "Succeeded"), status
    assert (
        f"would set retention.ms={2 * 24 * HOUR_MS} on 1 topic(s): {t.a_topic}"
        in status["lastRun"]["message"]
    )
    after = (
        {tp: topic_configs(tp) for tp in (t.a_topic, t.b_topic)},
        [log_start(t.bootstrap, t.a_topic, p) for p in range(2)],
    )
    assert after == before, "a dry run changed a topic config or deleted records"
    listed = t.cp.kubectl_json("get", "-n", t.a, "deleterecords")["items"]
    assert [
        d["metadata"]["name"]
        for d in listed
        if d["metadata"].get("labels", {}).get("ebb.dev/retention-policy")
    ] == []


def test_compaction_ownership_is_decided_per_cluster_id_across_namespaces(tenancy: Tenancy) -> None:
    """Two KafkaClusters spelling one cluster differently, used by two tenants on one topic: the older
    CompactionConfig owns it, the other reports Conflict naming it (namespace/name), and the two never
    take turns writing the topic's configs."""
    t = tenancy
    topic = f"shared-{t.tag}"
    create_topic(t.bootstrap, topic, 1)
    host, port = t.bootstrap.split(",")[0].rsplit(":", 1)
    other = "localhost" if host != "localhost" else "127.0.0.1"
    grant = [{"namespaces": [t.a, t.b], "topics": [topic], "allow": ["Compaction"]}]
    entries: list[dict[str, Any]] = [
        {"apiVersion": "ebb.dev/v1alpha1", "kind": "KafkaCluster", "metadata": {"name": name},
         "spec": {"bootstrapServers": servers, "access": grant}}
        for name, servers in ((f"one-{t.tag}", f"{host}:{port}"), (f"two-{t.tag}", f"{other}:{port}"))
    ]  # fmt: skip
    t.cp.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(entries))
    names = [e["metadata"]["name"] for e in entries]
    ids = {t.ready("", "kafkacluster", n)["object"]["status"]["clusterId"] for n in names}
    assert len(ids) == 1, f"two spellings of one cluster must show one cluster id: {ids}"

    t.apply(t.a, "CompactionConfig", "first", {
        "clusterRef": {"name": f"one-{t.tag}"}, "topics": {"include": [topic]}, "minCompactionLag": "1m",
    })  # fmt: skip
    assert t.ready(t.a, "compactionconfigs", "first")["status"] == "True"
    t.apply(t.b, "CompactionConfig", "second", {
        "clusterRef": {"name": f"two-{t.tag}"}, "topics": {"include": [topic]}, "minCompactionLag": "2h",
    })  # fmt: skip
    lost = t.ready(t.b, "compactionconfigs", "second")
    assert lost["reason"] == "Conflict", lost
    assert lost["object"]["status"]["topics"] == [
        {"topic": topic, "state": "Conflict", "message": f"Managed by {t.a}/first"}
    ]
    # Both resync (lastSync moves on, EBB_RESYNC_SECONDS=2) and the owner's setting is what stays.
    for namespace, name in ((t.a, "first"), (t.b, "second")):

        def last_sync(namespace: str = namespace, name: str = name) -> str:
            obj = t.cp.kubectl_json("get", "-n", namespace, "compactionconfigs", name)
            return str(obj["status"]["lastSync"])

        synced = last_sync()

        def moved_on(now: str, synced: str = synced) -> bool:
            return now != synced

        wait_until(f"{namespace}/{name} resynced", last_sync, 60, until=moved_on, interval=0.5)
    admin = AdminClient({"bootstrap.servers": t.bootstrap})
    (future,) = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)]).values()
    assert future.result(30)["min.compaction.lag.ms"].value == "60000"
