"""RetentionPolicy objects applied, patched and read with kubectl, as a user does; their Events, and the
operator's metrics."""

from __future__ import annotations

import json
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

from harness.bounded import wait_until
from harness.controlplane import ControlPlane
from harness.operator_process import OperatorProcess


def apply_policy(cp: ControlPlane, ns: str, name: str, spec: dict[str, Any]) -> None:
    body = {
        "apiVersion": "ebb.dev/v1alpha1",
        "kind": "RetentionPolicy",
        "metadata": {"name": name},
        "spec": spec,
    }
    cp.kubectl("apply", "-n", ns, "-f", "-", stdin=yaml.safe_dump(body))


def get_policy(cp: ControlPlane, ns: str, name: str) -> dict[str, Any]:
    obj: dict[str, Any] = cp.kubectl_json("get", "-n", ns, "retentionpolicy", name)
    return obj


def run_after(cp: ControlPlane, ns: str, name: str, previous: str | None = None) -> dict[str, Any]:
    """The policy once a run other than `previous` has finished."""

    def finished(obj: dict[str, Any]) -> bool:
        last = obj.get("status", {}).get("lastRun") or {}
        return last.get("id") not in (None, previous) and last.get("outcome") not in (None, "Running")

    obj: dict[str, Any] = wait_until(
        f"a run of retentionpolicy/{name} finished",
        lambda: get_policy(cp, ns, name),
        300,
        until=finished,
        interval=0.5,
        detail=lambda o: "\n" + yaml.safe_dump(o),
    )
    return obj


def run_id(obj: dict[str, Any]) -> str:
    return str(obj["status"]["lastRun"]["id"])


def events(cp: ControlPlane, ns: str, name: str) -> dict[str, list[str]]:
    """The policy's Events: reason -> messages."""
    listing = cp.kubectl_json("get", "events", "-n", ns, "--field-selector", f"involvedObject.name={name}")
    out: dict[str, list[str]] = {}
    for e in listing["items"]:
        out.setdefault(e["reason"], []).append(e["message"])
    return out


def event(cp: ControlPlane, ns: str, name: str, reason: str) -> list[str]:
    """The messages of the policy's `reason` Events, once there is one (kopf posts them asynchronously)."""
    found: list[str] = wait_until(
        f"a {reason} Event of {name}",
        lambda: events(cp, ns, name).get(reason, []),
        30,
        until=bool,
        interval=0.5,
        detail=lambda _: json.dumps(events(cp, ns, name), indent=1),
    )
    return found


def patch_policy(cp: ControlPlane, ns: str, name: str, spec: dict[str, Any]) -> None:
    cp.kubectl("patch", "-n", ns, "retentionpolicy", name, "--type=merge", "-p", json.dumps({"spec": spec}))


def metric_sample(operator: OperatorProcess, name: str, **labels: str) -> float | None:
    """The value of one series the operator exports, None when absent."""
    for family in text_string_to_metric_families(operator.metrics_text()):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return float(sample.value)
    return None
