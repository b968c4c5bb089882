"""The Helm chart against a real kube-apiserver: lint, render, server-side dry run, schema errors, and an
install whose ServiceAccount token runs the operator that reconciles the chart's examples.

One control plane per session; helm runs a handful of times. The install test starts ebb-broker and the
operator as local processes (no kubelet runs pods here) with the chart's settings.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from harness.bounded import wait_until
from harness.chart_hooks import helm_with_hooks
from harness.controlplane import ControlPlane
from harness.ebb_broker import EbbBroker
from harness.operator_process import deployment_settings, running_operator

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "ebb"
EXAMPLES = ROOT / "examples"
# Stand-ins for the Prometheus Operator's ServiceMonitor and PrometheusRule CRDs (the real ones ship with
# that operator): enough for the API server to accept the chart's objects of those kinds in a dry run.
SERVICEMONITOR_CRD = Path(__file__).parent / "servicemonitor-crd.yaml"
PROMETHEUSRULE_CRD = Path(__file__).parent / "prometheusrule-crd.yaml"
CERT_MANAGER_CRDS = Path(__file__).parent / "cert-manager-crds.yaml"

EVERY_OPTION = (
    "--set", "operator.serviceMonitor.enabled=true",
    "--set", "prometheusRule.enabled=true",
    "--set", "spark.enabled=true",
    "--set", "spark.jobNamespace=chart-team-b",
    "--set", "operator.imagePullSecrets[0].name=regcred",
    "--set", "operator.defaultCluster.analysisCredentialsSecret=ebb-analysis",
    "--set", "operator.watchNamespaces={chart-team-a,chart-team-b}",
    "--set", "broker.service.type=NodePort",
    "--set", "broker.service.nodePort=30092",
    "--set", "crds.keep=false",
    "--set", "operator.webhook.certManager.enabled=true",
)  # fmt: skip


def kinds(rendered: str) -> list[str]:
    return sorted(d["kind"] for d in yaml.safe_load_all(rendered) if d)


def test_helm_lint_passes_strict_with_defaults_and_every_option(control_plane: ControlPlane) -> None:
    control_plane.helm("lint", "--strict", str(CHART))
    control_plane.helm("lint", "--strict", str(CHART), *EVERY_OPTION)


@pytest.fixture(scope="module")
def servicemonitor_crd(control_plane: ControlPlane) -> None:
    control_plane.kubectl(
        "apply", "--server-side", "-f", str(SERVICEMONITOR_CRD), "-f", str(PROMETHEUSRULE_CRD),
        "-f", str(CERT_MANAGER_CRDS),
    )  # fmt: skip
    for crd in ("servicemonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com",
                "certificates.cert-manager.io", "issuers.cert-manager.io"):  # fmt: skip
        control_plane.kubectl("wait", "--for=condition=Established", f"crd/{crd}", "--timeout=60s")


@pytest.mark.parametrize("options", [(), EVERY_OPTION], ids=["defaults", "every-option"])
def test_rendered_chart_is_accepted_by_the_api_server(
    control_plane: ControlPlane, servicemonitor_crd: None, options: tuple[str, ...]
) -> None:
    namespace = "chart-dry-run"
    # The CRDs for real (a dry run installs nothing): the chart's KafkaCluster needs its kind to exist.
    control_plane.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(ROOT / "crds"))
    control_plane.kubectl("wait", "--for=condition=Established", "crd/kafkaclusters.ebb.dev", "--timeout=60s")
    for ns in (namespace, "chart-team-a", "chart-team-b"):
        if control_plane.kubectl("get", "namespace", ns, check=False).returncode != 0:
            control_plane.kubectl("create", "namespace", ns)
    rendered = control_plane.helm("template", "ebb", str(CHART), "--namespace", namespace, *options).stdout
    result = control_plane.kubectl(
        "apply", "--server-side", "--dry-run=server", "--field-manager=helm", "-f", "-", stdin=rendered
    )
    applied = [line for line in result.stdout.splitlines() if "serverside-applied (server dry run)" in line]
    assert len(applied) == len(kinds(rendered)), result.stdout
    if options:
        assert {"ServiceMonitor", "PrometheusRule", "Role", "RoleBinding", "Certificate", "Issuer"} <= set(
            kinds(rendered)
        )
        spark = [d for d in yaml.safe_load_all(rendered) if d and "spark" in d["metadata"]["name"]]
        assert {d["metadata"]["namespace"] for d in spark} == {"chart-team-b"}, (
            "Spark RBAC: the jobs namespace"
        )
        # The default KafkaCluster is the finish hook's to apply: its spec is an argument of that Job.
        (finish,) = [d for d in yaml.safe_load_all(rendered) if d and d["metadata"]["name"] == "ebb-finish"]
        (arg,) = [a for a in finish["spec"]["template"]["spec"]["containers"][0]["args"] if "-spec=" in a]
        kc_spec = json.loads(arg.split("=", 1)[1])
        assert kc_spec["analysisCredentials"] == {"secretRef": {"name": "ebb-analysis"}}
        crds = [d for d in yaml.safe_load_all(rendered) if d and d["kind"] == "CustomResourceDefinition"]
        assert all("helm.sh/resource-policy" not in d["metadata"].get("annotations", {}) for d in crds)
    else:
        assert kinds(rendered).count("CustomResourceDefinition") == 4
        # The default KafkaCluster and the broker's credentials come from the install hooks, not templates.
        assert "KafkaCluster" not in kinds(rendered) and "Secret" not in kinds(rendered)
        assert kinds(rendered).count("Job") == 3  # prepare, finish, uninstall
        assert "StatefulSet" in kinds(rendered)
        assert "ServiceMonitor" not in kinds(rendered) and "PrometheusRule" not in kinds(rendered)
        assert "ConfigMap" in kinds(rendered)  # the Grafana dashboard
        assert "ValidatingWebhookConfiguration" in kinds(rendered) and "Certificate" not in kinds(rendered)


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("broker.replicas=3", "additional properties 'replicas' not allowed"),
        ("operator.defaultCluster.bootstrapServers=no-port", "does not match pattern"),
        ("broker.storage.size=lots", "/broker/storage/size"),
        ("broker.service.type=Ingress", "/broker/service/type"),
        ("broker.terminationGracePeriodSeconds=5", "/broker/terminationGracePeriodSeconds"),
        ("spark.jobNamespace=Team_A", "/spark/jobNamespace"),
        # Runs left tenant namespaces: an old values file that still lists them fails loudly.
        ("spark.namespaces={team-a}", "spark.namespaces was removed: SparkApplication runs live in one jobs"),
    ],
)
def test_schema_rejects_bad_values_with_a_clear_message(
    control_plane: ControlPlane, option: str, message: str
) -> None:
    result = control_plane.helm("template", "ebb", str(CHART), "--set", option, check=False)
    assert result.returncode != 0
    assert message in result.stderr, result.stderr


@pytest.fixture
def webhook_removed_after(control_plane: ControlPlane) -> Iterator[None]:
    """The chart's ValidatingWebhookConfiguration (failurePolicy Fail) goes after the test: no pod serves
    its Service here, and left behind it would refuse every tenant object of the session."""
    yield
    control_plane.kubectl("delete", "validatingwebhookconfiguration", "ebb.dev", "--ignore-not-found")


def test_installed_chart_runs_the_operator_that_reconciles_the_examples(
    control_plane: ControlPlane, tmp_path: Path, webhook_removed_after: None
) -> None:
    namespace = "chart-install"
    with EbbBroker(tmp_path / "broker", log_dir=tmp_path, configs={"num.partitions": "3"}) as broker:
        bootstrap = broker.bootstrap
        # --take-ownership: other tests of the session may have applied crds/ with kubectl already.
        helm_with_hooks(
            control_plane, "install", "ebb", CHART, namespace,
            values=(
                "--set", "broker.enabled=false",
                "--set", f"operator.defaultCluster.bootstrapServers={bootstrap}",
            ),
            flags=("--create-namespace", "--take-ownership"),
            log_dir=tmp_path,
        )  # fmt: skip
        deployment = control_plane.kubectl_json("get", "deployment", "ebb-operator", "-n", namespace)
        settings = deployment_settings(deployment, namespace, EBB_RESYNC_SECONDS="5")
        assert settings["EBB_DEFAULT_CLUSTER"] == "ebb" and settings["EBB_ALLOW_INLINE_CLUSTERS"] == "false"
        assert "EBB_DEFAULT_BOOTSTRAP_SERVERS" not in settings  # objects name a KafkaCluster, never a host
        # The chart's default KafkaCluster (applied by the post-install hook): its broker, its namespace.
        kc = control_plane.kubectl_json("get", "kafkacluster", "ebb")["spec"]
        assert kc["bootstrapServers"] == bootstrap and kc["access"][0]["namespaces"] == [namespace]

        sa = f"system:serviceaccount:{namespace}:ebb-operator"
        for verb, resource, allowed in [
            ("patch", "deleterecords.ebb.dev", "yes"),
            ("patch", "compactionconfigs.ebb.dev/status", "yes"),
            # RetentionPolicy historyLimit prunes the policy's own DeleteRecords; policies are the user's.
            ("delete", "deleterecords.ebb.dev", "yes"),
            ("delete", "retentionpolicies.ebb.dev", "no"),
            ("list", "pods", "no"),
            ("list", "secrets", "no"),
            # Secrets are read in the operator's own namespace only (the KafkaClusters' credentials).
            ("get", "secrets", "yes"),
            ("get", "secrets -n default", "no"),
            # The leader election's Lease, in its own namespace only.
            ("update", "leases.coordination.k8s.io", "yes"),
            ("update", "leases.coordination.k8s.io -n default", "no"),
            ("create", "kafkaclusters.ebb.dev", "no"),
        ]:
            resource, *where = resource.split(" -n ")
            ns = where[0] if where else namespace
            answer = control_plane.kubectl(
                "auth", "can-i", verb, resource, "-n", ns, "--as", sa, check=False
            ).stdout.strip()
            assert answer == allowed, f"{sa} can-i {verb} {resource} in {ns}: {answer}"
        # Tenants bound to ebb-edit may use the tenant kinds in their namespace, never KafkaCluster. (Its
        # aggregation into Kubernetes' edit role needs kube-controller-manager: the cluster tier.)
        control_plane.kubectl(
            "create", "rolebinding", "tenant-edit", "-n", namespace,
            "--clusterrole=ebb-edit", "--user=tenant-alice",
        )  # fmt: skip
        for verb, resource, allowed in [
            ("create", "deleterecords.ebb.dev", "yes"),
            ("create", "retentionpolicies.ebb.dev", "yes"),
            ("patch", "deleterecords.ebb.dev --subresource=status", "no"),
            ("create", "kafkaclusters.ebb.dev", "no"),
        ]:
            answer = _can_i(control_plane, verb, resource, namespace, "tenant-alice")
            assert answer == allowed, f"tenant can-i {verb} {resource}: {answer}"

        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics(
            [NewTopic("orders", 3, 1), NewTopic("customer-profiles", 1, 1)]
        ).values():
            future.result(30)
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        for i in range(90):
            producer.produce("orders", value=b"order-%d" % i, partition=i % 3)
        producer.flush(30)

        kubeconfig = control_plane.service_account_kubeconfig(namespace, "ebb-operator")
        with running_operator(
            control_plane.env(kubeconfig), tmp_path / "operator.log", settings=settings
        ) as operator:
            control_plane.kubectl(
                "apply", "-n", namespace,
                "-f", str(EXAMPLES / "delete-records.yaml"),
                "-f", str(EXAMPLES / "compaction-config.yaml"),
            )  # fmt: skip
            # The RetentionPolicy example is valid against the installed CRD (its schema and CEL rules).
            control_plane.kubectl(
                "apply", "-n", namespace, "--dry-run=server", "-f", str(EXAMPLES / "retention-policy.yaml")
            )

            def example(plural: str, name: str) -> dict[str, Any]:
                found: dict[str, Any] = control_plane.kubectl_json("get", plural, name, "-n", namespace)
                return found

            def dr_done(obj: dict[str, Any]) -> bool:
                return obj.get("status", {}).get("phase") in {"Succeeded", "Failed"}

            status = wait_until(
                "the DeleteRecords example",
                lambda: example("deleterecords", "orders-consumed"),
                90,
                until=dr_done,
                interval=0.5,
            )["status"]
            assert status["phase"] == "Succeeded", (status, operator.log_tail())
            assert sorted((p["partition"], p["lowWatermark"]) for p in status["partitions"]) == [
                (0, 30),
                (1, 30),
                (2, 30),
            ]

            def cc_ready(obj: dict[str, Any]) -> bool:
                conds = obj.get("status", {}).get("conditions", [])
                return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)

            cc = wait_until(
                "the CompactionConfig example",
                lambda: example("cc", "customer-profiles"),
                90,
                until=cc_ready,
                interval=0.5,
            )["status"]
            assert [(t["topic"], t["state"]) for t in cc["topics"]] == [("customer-profiles", "Applied")]
            topic = ConfigResource(ConfigResource.Type.TOPIC, "customer-profiles")
            entries = admin.describe_configs([topic])[topic].result(30)
            assert entries["cleanup.policy"].value == "compact"
            assert entries["min.compaction.lag.ms"].value == str(10 * 60 * 1000)
            assert entries["max.compaction.lag.ms"].value == str(24 * 3600 * 1000)

            # The chart's webhook (served by the local operator): a namespace without a grant is refused
            # at kubectl apply, and nothing is stored.
            control_plane.kubectl("create", "namespace", "chart-ungranted")
            refused = control_plane.kubectl(
                "apply", "-n", "chart-ungranted", "-f", str(EXAMPLES / "delete-records.yaml"), check=False
            )
            assert refused.returncode != 0
            assert "namespace chart-ungranted has no grant on KafkaCluster ebb" in refused.stderr
            listed = control_plane.kubectl_json("get", "deleterecords", "-n", "chart-ungranted")
            assert listed["items"] == []


def _can_i(cp: ControlPlane, verb: str, resource: str, namespace: str, user: str) -> str:
    """kubectl auth can-i; `resource` may carry flags such as --subresource=status."""
    args = ["auth", "can-i", verb, *resource.split(), "-n", namespace, "--as", user]
    return cp.kubectl(*args, check=False).stdout.strip()


def test_rbac_is_the_operators_rule_set_in_both_scopes(control_plane: ControlPlane) -> None:
    """Cluster-wide: the operator's ClusterRole has exactly ebb_operator.rbac.RULES. Namespaced: per
    namespace a Role with the namespaced rules, and a ClusterRole with the cluster-scoped ones. Either way a
    Role in the release namespace reads the KafkaClusters' Secrets, and nothing reads Secrets elsewhere
    unless inline clusters are allowed; another there holds the leader election's Lease."""
    from ebb_operator import rbac

    def render(*options: str) -> list[dict[str, Any]]:
        out = control_plane.helm("template", "ebb", str(CHART), "--namespace", "ebb", *options).stdout
        return [d for d in yaml.safe_load_all(out) if d]

    def operator_role(docs: list[dict[str, Any]]) -> dict[str, Any]:
        (role,) = [d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "ebb-operator"]
        return role

    docs = render()
    # The webhook's own certificate (no cert-manager): its Secret in the release namespace, its CA into
    # ValidatingWebhookConfiguration ebb.dev.
    assert operator_role(docs)["rules"] == [*rbac.RULES, *rbac.WEBHOOK_CA_RULES]
    roles = {
        (d["metadata"]["namespace"], d["metadata"]["name"]): d["rules"] for d in docs if d["kind"] == "Role"
    }
    # The hook Jobs' own rules exist only while they run (Helm deletes them once they succeeded).
    credentials = [*rbac.OWN_NAMESPACE_RULES, *rbac.WEBHOOK_CERTIFICATE_RULES]
    assert roles == {
        ("ebb", "ebb-operator-credentials"): credentials,
        ("ebb", "ebb-operator-leader-election"): rbac.LEADER_ELECTION_RULES,
        ("ebb", "ebb-install"): rbac.INSTALL_HOOK_NAMESPACE_RULES,
    }
    with_cert_manager = render("--set", "operator.webhook.certManager.enabled=true")
    assert operator_role(with_cert_manager)["rules"] == rbac.RULES
    hooks = {
        d["metadata"]["name"]: d
        for d in docs
        if d["kind"] == "ClusterRole" and d["metadata"]["name"] != "ebb-operator"
    }
    assert hooks["ebb-install"]["rules"] == rbac.INSTALL_HOOK_CLUSTER_RULES
    assert hooks["ebb-uninstall"]["rules"] == rbac.UNINSTALL_HOOK_RULES
    for name in ("ebb-install", "ebb-uninstall"):
        policy = hooks[name]["metadata"]["annotations"]["helm.sh/hook-delete-policy"]
        assert "hook-succeeded" in policy.split(","), name
    tenant = {
        d["metadata"]["name"]: d
        for d in docs
        if d["kind"] == "ClusterRole"
        and d["metadata"]["name"] not in ("ebb-operator", "ebb-install", "ebb-uninstall")
    }
    assert (
        tenant["ebb-edit"]["rules"] == rbac.TENANT_EDIT_RULES
        and tenant["ebb-view"]["rules"] == rbac.TENANT_VIEW_RULES
    )
    assert tenant["ebb-edit"]["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-edit"] == "true"
    inline = operator_role(render("--set", "operator.allowInlineClusters=true"))["rules"]
    assert inline == [*rbac.RULES, *rbac.INLINE_CLUSTER_RULES, *rbac.WEBHOOK_CA_RULES]

    docs = render("--set", "operator.watchNamespaces={team-a,team-b}", "--set", "crds.enabled=false")
    cluster_role = operator_role(docs)
    by_namespace = {
        d["metadata"]["namespace"]: d["rules"]
        for d in docs
        if d["kind"] == "Role" and d["metadata"]["name"] == "ebb-operator"
    }
    assert sorted(by_namespace) == ["team-a", "team-b"]
    assert cluster_role["rules"] == [*rbac.CLUSTER_SCOPED_RULES, *rbac.WEBHOOK_CA_RULES]
    assert by_namespace["team-a"] == rbac.NAMESPACED_RULES
    assert "CustomResourceDefinition" not in kinds(yaml.safe_dump_all(docs))
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--namespace=team-a" in args and "--namespace=team-b" in args
