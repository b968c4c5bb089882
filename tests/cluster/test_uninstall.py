"""`helm uninstall` as the README documents it: the release's pods and Services go, the broker's data
volume stays (a StatefulSet's claims outlive it), with the broker's log on it. Runs last (file order)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cluster.conftest import NAMESPACE, RELEASE, TOOLBOX, Release, wait_until

pytestmark = pytest.mark.timeout(600)


def test_helm_uninstall_keeps_the_brokers_data_volume(release: Release) -> None:
    release.pod_json_lines(TOOLBOX, "create-topics", "kept:1")
    assert release.pod_json_lines(TOOLBOX, "produce", "kept", "10")[-1] == {"done": 10}
    claim = release.get("pvc", "data-ebb-broker-0")
    volume = release.cluster.kubectl_json("get", "pv", claim["spec"]["volumeName"])
    # local-path's volume is a directory of the node: the broker's log directory is in it.
    segments = Path(volume["spec"]["hostPath"]["path"]) / "data" / "kept-0"
    assert any(segments.glob("*.log")), segments

    release.cluster.helm("uninstall", RELEASE, "-n", NAMESPACE, "--wait", "--timeout", "3m", timeout=240)

    def released_pods_gone() -> bool:
        pods = release.cluster.kubectl_json(
            "get", "pods", "-n", NAMESPACE, "-l", f"app.kubernetes.io/instance={RELEASE}"
        )
        return not pods["items"]

    wait_until("the release's pods to go", released_pods_gone, 180)
    assert (
        release.cluster.kubectl("get", "statefulset", "ebb-broker", "-n", NAMESPACE, check=False).returncode
        != 0
    )
    kept = release.get("pvc", "data-ebb-broker-0")
    assert kept["status"]["phase"] == "Bound" and kept["spec"]["volumeName"] == volume["metadata"]["name"]
    assert any(segments.glob("*.log")), "the broker's segments are gone from the volume"
