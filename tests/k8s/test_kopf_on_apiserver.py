"""kopf, the operator's framework, runs against this control plane: its startup scan of /api and /apis,
its watches, status patches and Events all work, both as the admin and as a ServiceAccount holding only
the RBAC rules an operator of the Probe resource needs (the way the Helm chart will run ebb-operator)."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.bounded import wait_until
from harness.child_process import die_with_parent
from harness.controlplane import ControlPlane

OPERATOR = """
import kopf


@kopf.on.create("tests.ebb.dev", "v1", "probes", id="probe_create")
def probe_create(spec, body, patch, **_):
    kopf.info(body, reason="Probed", message=f"watching topic {spec['topic']}")
    patch.status["phase"] = "Handled"
"""

# What kopf itself needs cluster-wide (its docs' RBAC example, less peering under --standalone), plus the
# Probe resource and its status.
OPERATOR_RULES = [
    {
        "apiGroups": ["apiextensions.k8s.io"],
        "resources": ["customresourcedefinitions"],
        "verbs": ["list", "watch"],
    },
    {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list", "watch"]},
    {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create"]},
    {"apiGroups": ["tests.ebb.dev"], "resources": ["probes"], "verbs": ["get", "list", "watch", "patch"]},
    {"apiGroups": ["tests.ebb.dev"], "resources": ["probes/status"], "verbs": ["get", "patch"]},
]


@contextlib.contextmanager
def running_kopf(cp: ControlPlane, workdir: Path, kubeconfig: Path) -> Iterator[Path]:
    """`kopf run` in a child process, as a user would start an operator; yields its log file."""
    script = workdir / "operator.py"
    script.write_text(OPERATOR)
    log = workdir / "kopf.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kopf",
                "run",
                "--standalone",
                "--all-namespaces",
                "--verbose",
                str(script),
            ],
            env=cp.env(kubeconfig),
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=workdir,
            preexec_fn=die_with_parent,
        )
        try:
            yield log
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                rc = proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                raise
    assert rc == 0, f"kopf exited {rc}:\n{log.read_text()}"


def service_account_with_operator_rules(cp: ControlPlane, namespace: str) -> Path:
    role = f"{namespace}-operator"
    cp.kubectl("create", "serviceaccount", "operator", "--namespace", namespace)
    cluster_role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": role},
        "rules": OPERATOR_RULES,
    }
    cp.kubectl("apply", "-f", "-", stdin=json.dumps(cluster_role))
    cp.kubectl(
        "create",
        "clusterrolebinding",
        role,
        f"--clusterrole={role}",
        f"--serviceaccount={namespace}:operator",
    )
    return cp.service_account_kubeconfig(namespace, "operator")


def wait_for_events(cp: ControlPlane, namespace: str, selector: str, timeout: float = 30) -> list[Any]:
    """kopf posts Events from a background task, shortly after the handler returns."""
    items: list[Any] = wait_until(
        f"Events {selector}",
        lambda: cp.kubectl_json("get", "events", "-n", namespace, "--field-selector", selector)["items"],
        timeout,
    )
    return items


@pytest.mark.parametrize("identity", ["admin", "serviceaccount"])
def test_kopf_handles_a_create_and_posts_status_and_an_event(
    control_plane: ControlPlane, probe_crd: str, k8s_namespace: str, tmp_path: Path, identity: str
) -> None:
    cp, ns = control_plane, ("--namespace", k8s_namespace)
    kubeconfig = (
        cp.admin_kubeconfig if identity == "admin" else service_account_with_operator_rules(cp, k8s_namespace)
    )
    with running_kopf(cp, tmp_path, kubeconfig) as log:
        cp.kubectl(
            "apply",
            *ns,
            "-f",
            "-",
            stdin=json.dumps(
                {
                    "apiVersion": "tests.ebb.dev/v1",
                    "kind": "Probe",
                    "metadata": {"name": "orders"},
                    "spec": {"topic": "orders", "retention": "1h"},
                }
            ),
        )
        waited = cp.kubectl(
            "wait",
            *ns,
            "probe/orders",
            "--for=jsonpath={.status.phase}=Handled",
            "--timeout=60s",
            check=False,
        )
        assert waited.returncode == 0, f"{waited.stderr}\nkopf log:\n{log.read_text()}"
        events = wait_for_events(cp, k8s_namespace, "involvedObject.name=orders,reason=Probed")
        assert [e["message"] for e in events] == ["watching topic orders"]
        assert [e["source"]["component"] for e in events] == ["kopf"]

    output = log.read_text()
    assert "Handler 'probe_create' succeeded." in output
    for trouble in ("Traceback", "Forbidden", "Failed to post an event"):
        assert trouble not in output, f"{trouble!r} in kopf's log:\n{output}"
