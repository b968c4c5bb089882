"""Start-up time of the test control plane (etcd + kube-apiserver to /readyz), which every k8s and e2e
test session pays once, and the latency of a kubectl round trip against it."""

from __future__ import annotations

import statistics
import time

from bench.report import emit
from harness.controlplane import running_control_plane

STARTS = 5
KUBECTL_CALLS = 20


def main() -> None:
    startups: list[float] = []
    kubectl: list[float] = []
    for i in range(STARTS):
        print(f"    start {i + 1}/{STARTS}", flush=True)
        with running_control_plane() as cp:
            startups.append(cp.startup_seconds)
            if i == 0:
                for _ in range(KUBECTL_CALLS):
                    began = time.monotonic()
                    cp.kubectl("get", "namespaces", "-o", "name")
                    kubectl.append(time.monotonic() - began)
    emit(
        "controlplane",
        [
            {
                "what": "start etcd + kube-apiserver to /readyz (s)",
                "runs": STARTS,
                "p50": statistics.median(startups),
                "max": max(startups),
            },
            {
                "what": "kubectl get namespaces (s)",
                "runs": KUBECTL_CALLS,
                "p50": statistics.median(kubectl),
                "max": max(kubectl),
            },
        ],
        notes="Kubernetes control plane of harness/k8s/versions.env; certificates generated per start.",
    )
