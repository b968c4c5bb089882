"""`helm uninstall` as the README documents it: the release's pods and Services go, the broker's data volume
stays (a StatefulSet's claims outlive it), with the broker's log on it, and so do the CRDs, the Ebb objects
and the broker's Secrets. Nothing of Ebb holds a namespace afterwards: its pre-delete hook took Ebb's
finalizer off every object (here put on by hand, as an earlier operator did, while this one was scaled to
zero), so deleting a tenant namespace completes though no operator runs. Runs last (file order)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from harness.bounded import wait_until
from tests.cluster.conftest import NAMESPACE, POLL, RELEASE, TOOLBOX, Release, Say
from tests.cluster.conftest import UNINSTALL_TENANT as TENANT

pytestmark = pytest.mark.timeout(600)

FINALIZER = "ebb.dev/operator"


def _tenant_objects() -> list[dict[str, object]]:
    cluster = {"clusterRef": {"name": "ebb"}}
    return [
        {
            "apiVersion": "ebb.dev/v1alpha1",
            "kind": "DeleteRecords",
            "metadata": {"name": "tenant-cut", "namespace": TENANT},
            "spec": {**cluster, "partitions": [{"topic": "kept", "partition": 0, "offset": 1}]},
        },
        {
            "apiVersion": "ebb.dev/v1alpha1",
            "kind": "RetentionPolicy",
            "metadata": {"name": "tenant-policy", "namespace": TENANT},
            "spec": {**cluster, "topics": {"include": ["kept"]}, "consumedRetention": "1h", "suspend": True},
        },
    ]


def test_helm_uninstall_keeps_the_brokers_data_volume_and_releases_every_object(
    release: Release, say: Say
) -> None:
    release.pod_json_lines(TOOLBOX, "create-topics", "kept:1")
    assert release.pod_json_lines(TOOLBOX, "produce", "kept", "10")[-1] == {"done": 10}
    claim = release.get("pvc", "data-ebb-broker-0")
    volume = release.cluster.kubectl_json("get", "pv", claim["spec"]["volumeName"])
    # local-path's volume is a directory of the node: the broker's log directory is in it.
    segments = Path(volume["spec"]["hostPath"]["path"]) / "data" / "kept-0"
    assert any(segments.glob("*.log")), segments

    # A tenant namespace with Ebb objects that carry Ebb's finalizer, as an earlier operator left them;
    # this one scaled to zero, so nothing but the uninstall hook takes it off.
    release.cluster.kubectl("create", "namespace", TENANT)
    release.cluster.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(_tenant_objects()))
    release.kubectl("scale", "deployment/ebb-operator", "--replicas=0")
    wait_until(
        "the operator's pods to go",
        lambda: (
            not release.cluster.kubectl_json(
                "get", "pods", "-n", NAMESPACE, "-l", "app.kubernetes.io/component=operator"
            )["items"]
        ),
        120,
        interval=POLL,
    )
    held = yaml.safe_dump({"metadata": {"finalizers": [FINALIZER]}})
    for kind, name in (("deleterecords", "tenant-cut"), ("retentionpolicy", "tenant-policy")):
        release.cluster.kubectl("patch", kind, name, "-n", TENANT, "--type=merge", "-p", held)

    began = time.monotonic()
    release.cluster.helm("uninstall", RELEASE, "-n", NAMESPACE, "--wait", "--timeout", "3m", timeout=240)
    say(f"helm uninstall (its pre-delete hook included): {time.monotonic() - began:.1f} s")

    def released_pods_gone() -> bool:
        pods = release.cluster.kubectl_json(
            "get", "pods", "-n", NAMESPACE, "-l", f"app.kubernetes.io/instance={RELEASE}"
        )
        return not pods["items"]

    wait_until("the release's pods to go", released_pods_gone, 180, interval=POLL)
    assert (
        release.cluster.kubectl("get", "statefulset", "ebb-broker", "-n", NAMESPACE, check=False).returncode
        != 0
    )
    kept = release.get("pvc", "data-ebb-broker-0")
    assert kept["status"]["phase"] == "Bound" and kept["spec"]["volumeName"] == volume["metadata"]["name"]
    assert any(segments.glob("*.log")), "the broker's segments are gone from the volume"
    # The broker's credentials stay with its data; the hooks' own ServiceAccounts and rules are gone.
    for secret in ("ebb-broker-tls", "ebb-broker-admin"):
        release.get("secret", secret)
    for kind in ("clusterrole", "clusterrolebinding"):
        for name in ("ebb-install", "ebb-uninstall"):
            assert release.cluster.kubectl("get", kind, name, check=False).returncode != 0, (kind, name)
    for item in _tenant_objects():
        meta = item["metadata"]
        assert isinstance(meta, dict)
        obj = release.cluster.kubectl_json("get", str(item["kind"]).lower(), meta["name"], "-n", TENANT)
        assert not obj["metadata"].get("finalizers"), obj["metadata"]


def test_a_tenant_namespace_is_deleted_after_uninstall(release: Release, say: Say) -> None:
    """Within 60 s: the namespace controller deletes its objects, and nothing waits for an operator."""
    began = time.monotonic()
    release.cluster.kubectl("delete", "namespace", TENANT, "--wait=false")

    def gone() -> bool:
        return release.cluster.kubectl("get", "namespace", TENANT, check=False).returncode != 0

    def namespace(_: object) -> str:
        return "\n" + release.cluster.kubectl("get", "namespace", TENANT, "-o", "yaml", check=False).stdout

    wait_until(
        f"namespace {TENANT} to be deleted",
        gone,
        60,
        interval=POLL,
        detail=namespace,
    )
    say(f"tenant namespace deleted after the uninstall: {time.monotonic() - began:.1f} s")
