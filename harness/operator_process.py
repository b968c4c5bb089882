"""Run `python -m ebb_operator` as a local process, the way the chart's Deployment runs it in a pod.

There is no kubelet on the test control plane, so the chart's Deployment never gets a pod; this runs
the same command with a kubeconfig holding the chart's ServiceAccount token, so the operator has
exactly the RBAC the chart grants. Used by the chart tests (tests/k8s/test_chart.py) and `make demo`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.bounded import until
from harness.child_process import die_with_parent
from harness.ports import free_port

_START_TIMEOUT = 60.0


class OperatorStartError(RuntimeError):
    """The operator exited, or its liveness endpoint did not answer in time (message: end of its log)."""


@dataclass(frozen=True)
class OperatorProcess:
    popen: subprocess.Popen[bytes]
    log_path: Path
    metrics_port: int
    liveness_port: int

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]

    def metrics_text(self) -> str:
        """Its Prometheus metrics, as scraped."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as r:
            return str(r.read().decode())


def _live(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
            return True
    except OSError:
        return False


def _webhook_ready(port: int) -> bool:
    """The operator's admission webhook serves, and the API server knows where (its metric says so)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as resp:
            return "ebb_operator_webhook_ready 1.0" in resp.read().decode()
    except OSError:
        return False


def deployment_settings(deployment: dict[str, Any], namespace: str, **overrides: str) -> dict[str, str]:
    """The EBB_* environment the chart's operator Deployment gives its container, as a local process needs
    it (the downward-API namespace resolved to `namespace`), with `overrides` on top.

    No pod backs the chart's webhook Service here, so a local process serves the admission webhook on a
    free port of 127.0.0.1 and points ValidatingWebhookConfiguration ebb.dev at itself
    (EBB_WEBHOOK_MANAGED, which the chart's RBAC allows on that configuration)."""
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    settings: dict[str, str] = {}
    for var in container.get("env") or []:
        if not var["name"].startswith("EBB_"):
            continue
        if "value" in var:
            settings[var["name"]] = str(var["value"])
        elif var.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.namespace":
            settings[var["name"]] = namespace
    settings.pop("EBB_OPERATOR_IMAGE", None)  # no image runs here; the SparkApplication engine sets its own
    if "EBB_WEBHOOK_PORT" in settings:
        local = {"EBB_WEBHOOK_PORT": str(free_port()), "EBB_WEBHOOK_HOST": "127.0.0.1"}
        settings.update(local, EBB_WEBHOOK_MANAGED="true")
    return {**settings, **overrides}


@contextlib.contextmanager
def running_operator(
    env: dict[str, str],
    log_path: Path,
    *,
    namespaces: tuple[str, ...] = (),
    settings: dict[str, str] | None = None,
) -> Iterator[OperatorProcess]:
    """The operator, live (kopf's /healthz answers, and its admission webhook serves when it has one), for
    the duration of the block; stopped with
    SIGTERM (then SIGKILL) afterwards. `env` carries KUBECONFIG (e.g. ControlPlane.env(sa_kubeconfig));
    `settings` the operator's EBB_* variables (docs/operator.md), as the chart's Deployment sets them."""
    env = {**env, **(settings or {})}
    webhook = "EBB_WEBHOOK_PORT" in env  # live, then also serving its admission webhook
    metrics_port, liveness_port = free_port(), free_port()
    argv = [
        sys.executable, "-m", "ebb_operator",
        "--metrics-port", str(metrics_port),
        "--liveness-port", str(liveness_port),
        "--host", "127.0.0.1",
    ]  # fmt: skip
    for namespace in namespaces:
        argv += ["--namespace", namespace]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb") as log:
        # Its own session (signals to pytest don't reach it) but dies with the test process all the same.
        popen = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
        process = OperatorProcess(popen, log_path, metrics_port, liveness_port)
        try:

            def serving() -> bool:
                if popen.poll() is not None:
                    raise OperatorStartError(
                        f"ebb-operator exited ({popen.returncode}):\n{process.log_tail()}"
                    )
                return _live(liveness_port) and (not webhook or _webhook_ready(metrics_port))

            try:
                until("ebb-operator live (and its webhook serving)", serving, _START_TIMEOUT, 0.3)
            except TimeoutError:
                raise OperatorStartError(
                    f"ebb-operator not live (or its webhook not serving) after {_START_TIMEOUT:.0f}s:\n"
                    f"{process.log_tail()}"
                ) from None
            yield process
        finally:
            if popen.poll() is None:
                os.killpg(popen.pid, signal.SIGTERM)
                try:
                    popen.wait(20)
                except subprocess.TimeoutExpired:
                    os.killpg(popen.pid, signal.SIGKILL)
                    popen.wait()
