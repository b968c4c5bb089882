"""Fixtures of the k8s tier: the Probe CRD, installed once on the session's control plane."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.controlplane import ControlPlane

PROBE_CRD = Path(__file__).parent / "probe-crd.yaml"


@pytest.fixture(scope="session")
def probe_crd(control_plane: ControlPlane) -> str:
    """Apply the Probe CRD and wait until the API server serves it; returns its name."""
    control_plane.kubectl("apply", "-f", str(PROBE_CRD))
    name = "probes.tests.ebb.dev"
    control_plane.kubectl("wait", "--for=condition=Established", f"crd/{name}", "--timeout=60s")
    return name
