"""What the operator's k8s tests use besides fixtures: the operator process, kubectl as a user."""

from __future__ import annotations

import re
import signal
import subprocess
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.bounded import wait_until
from harness.controlplane import ControlPlane
from harness.ebb_broker import EbbBroker


@dataclass
class OperatorProcess:
    process: subprocess.Popen[bytes]
    log: Path
    metrics_port: int

    def kill(self) -> None:
        """kill -9: no cleanup, no final status writes."""
        self.process.kill()
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as r:
            return str(r.read().decode())


class Objects:
    """kubectl as a user: apply objects in the test namespace and wait for their status. A wait that gives
    up shows the object, and what `log_tail` returns (the operator's last lines, say)."""

    def __init__(self, cp: ControlPlane, namespace: str, log_tail: Callable[[], str] = lambda: "") -> None:
        self.cp = cp
        self.namespace = namespace
        self.log_tail = log_tail

    def apply(self, kind: str, name: str, spec: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        body = {"apiVersion": "ebb.dev/v1alpha1", "kind": kind, "metadata": {"name": name}, "spec": spec}
        return self.cp.kubectl(
            "apply", "-n", self.namespace, "-f", "-", stdin=yaml.safe_dump(body), check=False
        )

    def get(self, plural: str, name: str) -> dict[str, Any]:
        result: dict[str, Any] = self.cp.kubectl_json("get", "-n", self.namespace, plural, name)
        return result

    def wait(
        self, plural: str, name: str, check: Callable[[dict[str, Any]], bool], timeout: float = 60
    ) -> dict[str, Any]:
        return wait_until(
            f"{plural}/{name} in the expected state",
            lambda: self.get(plural, name),
            timeout,
            until=check,
            interval=0.3,
            detail=lambda obj: "\n" + yaml.safe_dump(obj) + self.log_tail(),
        )

    def events(self, name: str) -> list[dict[str, Any]]:
        items = self.cp.kubectl_json("get", "events", "-n", self.namespace)["items"]
        return [e for e in items if e["involvedObject"]["name"] == name]


def ready(obj: dict[str, Any]) -> dict[str, Any]:
    """The object's Ready condition; empty while it has none (a wait's check reads that as "not yet")."""
    return next((c for c in obj.get("status", {}).get("conditions", []) if c["type"] == "Ready"), {})


def broker_metric(broker: EbbBroker, name: str, default: float | None = None) -> float:
    """One sample of ebb-broker's Prometheus metrics, by its name with labels (`metered_broker`);
    `default` when the broker has none yet (a request counter before the first such request)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{broker.metrics_port}/metrics", timeout=5) as r:
        text = r.read().decode()
    match = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
    if match is None and default is not None:
        return default
    assert match, f"{name} not in\n{text[-2000:]}"
    return float(match.group(1))
