"""RetentionPolicy objects applied with kubectl, as a user writes them."""

from __future__ import annotations

from typing import Any

import yaml

from harness.controlplane import ControlPlane


def apply_policy(cp: ControlPlane, ns: str, name: str, spec: dict[str, Any]) -> None:
    body = {
        "apiVersion": "ebb.dev/v1alpha1",
        "kind": "RetentionPolicy",
        "metadata": {"name": name},
        "spec": spec,
    }
    cp.kubectl("apply", "-n", ns, "-f", "-", stdin=yaml.safe_dump(body))
