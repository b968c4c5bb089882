"""The chart's pods as a user's `helm install` runs them: installed from an OCI registry with the images the
node's containerd pulled from it, the broker StatefulSet on its PVC from the default StorageClass, the
operator Deployment non-root on a read-only root filesystem with its probes passing, both serving metrics,
the operator on in-cluster config, the Services and DNS names of the chart's NOTES."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from harness.node import RETIRED_REPOSITORIES, ctr
from harness.registry import Registry
from tests.cluster.conftest import BOOTSTRAP, NAMESPACE, RELEASE, TOOLBOX, Published, Release

# spark_runs: the SparkApplication runs start before these quick tests and run through them.
pytestmark = [pytest.mark.timeout(900), pytest.mark.usefixtures("spark_runs")]


def _pods(rel: Release, selector: str) -> list[dict[str, Any]]:
    return rel.cluster.kubectl_json("get", "pods", "-n", NAMESPACE, "-l", selector)["items"]


def _pod(rel: Release, selector: str) -> dict[str, Any]:
    (pod,) = _pods(rel, selector)
    return pod


def test_installed_from_the_registry_with_images_pulled_by_containerd(
    release: Release, published: Published, registry: Registry
) -> None:
    assert release.chart_version() == published.head.version
    assert published.head.chart == f"oci://{registry.host}/charts/ebb"
    for component in ("operator", "broker"):
        pods = _pods(release, f"app.kubernetes.io/component={component}")
        assert pods, component
        for pod in pods:  # the operator's replicas, the broker
            # By digest: the chart pushed with the images names them so.
            assert pod["spec"]["containers"][0]["image"] == published.head.images[component]
            (status,) = pod["status"]["containerStatuses"]
            assert status["imageID"].endswith(published.head.digests[component]), status
    # containerd fetched them from the registry (its hosts.toml): its requests are in the access log.
    pulled = registry.requests_by("containerd/")
    for component in ("operator", "broker"):
        assert any(f"/v2/ebb-{component}/manifests/" in line for line in pulled), pulled[-5:]
    # Nothing of Ebb was imported into the node (`ctr images import`): only the registry's are there.
    listed = ctr("images", "ls", "-q").stdout.split()
    assert not [ref for ref in listed if ref.startswith(RETIRED_REPOSITORIES)]
    assert any(ref.startswith(f"{registry.host}/ebb-operator") for ref in listed)


def test_broker_runs_on_a_claim_of_the_default_storage_class(release: Release) -> None:
    pod = _pod(release, "app.kubernetes.io/component=broker")
    assert pod["metadata"]["name"] == "ebb-broker-0"
    claim = release.get("pvc", "data-ebb-broker-0")
    assert claim["status"]["phase"] == "Bound"
    assert claim["spec"]["storageClassName"] == "local-path"  # the cluster's default, as kind's `standard`
    volume = release.cluster.kubectl_json("get", "pv", claim["spec"]["volumeName"])
    # The broker's log directory is on that volume: its checkpoint files are there.
    host_dir = volume["spec"]["hostPath"]["path"]
    listing = release.kubectl("exec", "ebb-broker-0", "--", "ls", "/var/lib/ebb/data").stdout.split()
    assert "recovery-point-offset-checkpoint" in listing or "meta.properties" in listing, listing
    assert host_dir.startswith(str(release.cluster.workdir / "local-path"))


@pytest.mark.parametrize(
    ("selector", "container", "replicas"),
    [
        ("app.kubernetes.io/component=operator", "operator", 2),
        ("app.kubernetes.io/component=broker", "broker", 1),
    ],
)
def test_pods_run_non_root_on_a_read_only_root_with_probes_passing(
    release: Release, selector: str, container: str, replicas: int
) -> None:
    pods = _pods(release, selector)
    assert len(pods) == replicas
    for pod in pods:
        name = pod["metadata"]["name"]
        (status,) = pod["status"]["containerStatuses"]
        # An operator container restarts only where test_failover killed its process (SIGKILL: 137).
        killed = (status.get("lastState") or {}).get("terminated", {}).get("exitCode") == 137
        assert status["ready"] and (status["restartCount"] == 0 or killed), status
        assert release.kubectl("exec", name, "-c", container, "--", "id", "-u").stdout.strip() == "10001"
        denied = release.kubectl("exec", name, "-c", container, "--", "touch", "/probe", check=False)
        assert denied.returncode != 0 and "Read-only file system" in denied.stderr, denied.stderr
        # Writable where the chart mounts an emptyDir.
        release.kubectl("exec", name, "-c", container, "--", "touch", "/tmp/probe")


def test_metrics_are_served_through_the_services(release: Release) -> None:
    operator = release.kubectl(
        "exec", TOOLBOX, "--", "python", "/scripts/kafka_client.py", "get",
        f"http://ebb-operator-metrics.{NAMESPACE}.svc.cluster.local:9090/metrics",
    ).stdout  # fmt: skip
    assert "ebb_operator_reconciles_total" in operator
    broker = release.kubectl(
        "exec", TOOLBOX, "--", "python", "/scripts/kafka_client.py", "get",
        f"http://ebb-broker.{NAMESPACE}.svc.cluster.local:9404/metrics",
    ).stdout  # fmt: skip
    assert "ebb_requests_total" in broker and "ebb_connections" in broker


def test_the_operator_uses_in_cluster_config_and_reconciles_the_default_cluster(release: Release) -> None:
    # The chart's KafkaCluster `ebb` was reconciled by the operator pod, through its ServiceAccount token.
    conditions = release.cluster.kubectl_json("get", "kafkacluster", "ebb")["status"]["conditions"]
    assert any(c["type"] == "Ready" and c["status"] == "True" for c in conditions), conditions
    env = release.kubectl("exec", "deploy/ebb-operator", "--", "env").stdout
    assert "KUBERNETES_SERVICE_HOST=10.96.0.1" in env and "KUBECONFIG" not in env


def test_notes_name_the_service_that_clients_reach(release: Release) -> None:
    notes = release.cluster.helm("get", "notes", RELEASE, "-n", NAMESPACE).stdout
    assert BOOTSTRAP in notes, notes
    # Bootstrap through the client Service; then the broker's advertised per-pod name (headless Service).
    topics = release.pod_json_lines(TOOLBOX, "create-topics", "dns-check:1")
    assert topics == [{"topic": "dns-check"}]
    resolved = release.kubectl(
        "exec", TOOLBOX, "--", "getent", "hosts",
        f"ebb-broker-0.ebb-broker-headless.{NAMESPACE}.svc.cluster.local",
    ).stdout.split()  # fmt: skip
    broker_ip = _pod(release, "app.kubernetes.io/component=broker")["status"]["podIP"]
    assert resolved[0] == broker_ip


def test_the_charts_network_policies_render_and_are_stored(release: Release) -> None:
    """This node stores NetworkPolicies but enforces none (no enforcing CNI runs here, docs/cluster-node.md):
    what can be checked is that every policy of the installed release was accepted by the API server."""
    manifest = release.cluster.helm("get", "manifest", RELEASE, "-n", NAMESPACE).stdout
    rendered = {
        d["metadata"]["name"] for d in yaml.safe_load_all(manifest) if d and d["kind"] == "NetworkPolicy"
    }
    stored = {
        p["metadata"]["name"]
        for p in release.cluster.kubectl_json("get", "networkpolicies", "-n", NAMESPACE)["items"]
    }
    assert rendered <= stored


def test_the_operator_pods_webhook_refuses_at_apply_through_its_service(release: Release) -> None:
    """The admission webhook as users get it: the API server calls the operator pod through the chart's
    Service, trusting the CA the operator made (Secret ebb-webhook-tls) and wrote into the configuration."""
    secret = release.cluster.kubectl_json("get", "secret", "ebb-webhook-tls", "-n", NAMESPACE)["data"]
    configuration = release.cluster.kubectl_json("get", "validatingwebhookconfiguration", "ebb.dev")
    assert {w["clientConfig"]["caBundle"] for w in configuration["webhooks"]} == {secret["ca.crt"]}
    # The chart's grant admits the release namespace only: another namespace is refused at apply.
    release.cluster.kubectl("create", "namespace", "webhook-probe")
    body = {
        "apiVersion": "ebb.dev/v1alpha1",
        "kind": "DeleteRecords",
        "metadata": {"name": "probe", "namespace": "webhook-probe"},
        "spec": {"partitions": [{"topic": "orders", "partition": 0, "offset": 1}]},
    }
    refused = release.cluster.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(body), check=False)
    assert refused.returncode != 0
    assert "namespace webhook-probe has no grant on KafkaCluster ebb" in refused.stderr, refused.stderr
    assert release.cluster.kubectl_json("get", "deleterecords", "-n", "webhook-probe")["items"] == []
